"""Executable: a compiled program as the runtime runs it.

The Plan (runtime/plan.py) with what running it on Arrays needs: the sharding of every flat
argument and result, result shapes and weak types, the arguments the caller donates, the
constants the trace captured, and this process's block of the mesh when the mesh spans several
processes. ``run(arguments) -> list[Array]`` is the whole dispatch: argument buffers in, the
plan's steps, result Arrays out. jit's stages (``Lowered``, ``Compiled``) are views over one.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from .array import Array
from .executor import ArgumentMemo, to_buffer
from .plan import Plan
from .plan_function import compile_plan
from .process_layout import ProcessLayout
from .results import ResultMemo
from .sharding import Sharding, SingleDeviceSharding
from .transfer import shard_numpy


class Executable:
    """``plan`` run on Arrays.

    ``arg_shardings``: per flat argument (captured constants last), the layout its buffer needs;
    None for a one-device program, whose arguments enter as host arrays of ``arg_dtypes``.
    ``result_shardings``, ``result_shapes``, ``result_weak_types``: per result. ``donated``:
    positions of arguments whose Arrays are deleted once their buffers enter the plan.
    ``layout``: this process's block of the mesh, None when every device is local.
    ``committed``: whether the results are committed to their devices (JAX: a program that
    spans several devices or was given a placement).

    ``run(arguments) -> list[Array]`` runs it on the flat arguments (Arrays, numpy arrays or
    scalars; not the captured constants, which it appends). It is chosen once, here, for the
    kind of program (one device or sharded, with or without captured constants or donation),
    so a call pays for none of those questions.
    """

    def __init__(self, plan: Plan, *, arg_shardings: Sequence[Sharding | None], arg_dtypes: Sequence[np.dtype],
                 result_shardings: Sequence[Sharding], result_shapes: Sequence[tuple[int, ...]],
                 result_weak_types: Sequence[bool], donated: frozenset[int] = frozenset(),
                 captured: Sequence = (), layout: ProcessLayout | None = None, committed: bool = True):
        self.plan = plan
        self.arg_shardings = tuple(arg_shardings)
        self.arg_dtypes = tuple(np.dtype(dtype) for dtype in arg_dtypes)
        self.result_shardings = tuple(result_shardings)
        self.result_shapes = tuple(tuple(shape) for shape in result_shapes)
        self.result_weak_types = tuple(result_weak_types)
        self.donated = frozenset(donated)
        self.captured = tuple(captured)
        self.layout = layout
        self.committed = committed
        self.sharded = bool(plan.mesh_shape)
        self._lead_shape = plan.mesh_shape if layout is None else layout.local_shape
        # NOTE: per argument position, the layout to_buffer worked out on the last call.
        self._memos = tuple(ArgumentMemo() for _ in self.arg_shardings)
        self._results = tuple(zip(self.result_shardings, self.result_shapes, self.result_weak_types))
        self._result_memos = tuple(ResultMemo(sharding, shape, weak, self._lead_shape, committed)
                                   for sharding, shape, weak in self._results)
        self._arguments = tuple(zip(self.arg_shardings, plan.arg_varying, self._memos)) if self.sharded else ()
        # NOTE: a one-device program's results are on one device unless out_shardings laid one
        # out over several (single_device_array does that).
        self._one_device = all(isinstance(sharding, SingleDeviceSharding) for sharding in self.result_shardings)
        self._run_plan = compile_plan(plan, layout)
        self.run = self._runner()

    def _runner(self):
        run = self._run_sharded if self.sharded else self._run_on_one_device
        if self.donated:
            run = functools.partial(run, donating=True)
        if not self.captured:
            return run
        captured = list(self.captured)
        return lambda arguments: run([*arguments, *captured])

    def _run_sharded(self, arguments, donating: bool = False) -> list[Array]:
        lead_shape = self._lead_shape
        buffers = [to_buffer(value, sharding, lead_shape, varying, memo)
                   for value, (sharding, varying, memo) in zip(arguments, self._arguments)]
        if donating:
            self._release_donated(arguments)
        outputs = self._run_plan(buffers)
        return [memo.sharded_array(output) for output, memo in zip(outputs, self._result_memos)]

    def _run_on_one_device(self, arguments, donating: bool = False) -> list[Array]:
        # NOTE: _host_value, with its common case (an Array holding its value) written inline
        host = [value._value if type(value) is Array and value._value is not None and value._dtype is dtype
                and not value._deleted else _host_value(value, dtype)
                for value, dtype in zip(arguments, self.arg_dtypes)]
        if donating:
            self._release_donated(arguments)
        outputs = self._run_plan(host)
        if not self._one_device:
            return [single_device_array(output, sharding, weak, self.committed, host)
                    for output, (sharding, _, weak) in zip(outputs, self._results)]
        return [memo.one_device_array(output, host) for output, memo in zip(outputs, self._result_memos)]

    def host_arguments(self, arguments: Sequence) -> list[np.ndarray]:
        """The flat arguments (captured constants included) as global numpy arrays."""
        return [_host_value(value, dtype) for value, dtype in zip(arguments, self.arg_dtypes)]

    def _release_donated(self, arguments) -> None:
        """Donated Arrays are deleted once their buffers are handed to the plan, which frees
        them at their last use, so their memory is reused during the call (JAX semantics: a
        donated Array cannot be used afterwards)."""
        for position in self.donated:
            value = arguments[position]
            if isinstance(value, Array) and not value.is_deleted():
                value.delete()


def _host_value(value, dtype: np.dtype) -> np.ndarray:
    # NOTE: an Array keeps its global value once asked for it; anything else goes through numpy
    if type(value) is Array and value._value is not None and value._dtype == dtype and not value._deleted:
        return value._value
    return np.asarray(value, dtype=dtype)


def single_device_array(output: np.ndarray, sharding: Sharding, weak_type: bool, committed: bool = True,
                        arguments=()) -> Array:
    """An Array on one device from a one-device program's result (a result given a
    multi-device sharding by out_shardings is laid out over it). A result array the plan made
    itself becomes the block as it is; one that may share memory with an argument is copied."""
    if not isinstance(sharding, SingleDeviceSharding):
        return shard_numpy(np.asarray(output), sharding, weak_type=weak_type)
    fresh = type(output) is np.ndarray and output.flags.owndata and not any(output is value for value in arguments)
    block = (output if fresh else np.array(output))[np.newaxis]
    block.flags.writeable = False
    return Array(block.shape[1:], block.dtype, sharding, block, (0,), committed=committed, weak_type=weak_type)
