"""Printing a value of a shard_map body per device when the shard_map runs eagerly (outside
jit), as JAX's eager shard_map prints it: ``On cpu:0 at mesh coordinates (i,) = (0,):`` and the
device's block, for every device of the mesh.

meshjit runs an eager shard_map as one jitted program, so while its body is traced the values
are Tracers; printing one evaluates the body's ops traced so far with the reference interpreter
(ir/interpret.py) on the concrete operands of the call.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from meshjit.ir import Block, TensorSharding
from meshjit.ir.interpret import run_manual_body, split_for_manual_body

from .axis_environment import AxisEnvironment
from .trace import Trace, Tracer, add_tracer_describer


@dataclass(frozen=True)
class EagerCall:
    """The concrete side of an eager shard_map call: each operand's global value (numpy) by
    the id of the Value that stands for it in the enclosing trace, and the mesh's devices."""

    values: dict[int, np.ndarray]
    device_names: np.ndarray  # str(device), shaped as the mesh
    axis_names: tuple[str, ...]


@dataclass(frozen=True)
class _EagerBody:
    environment: AxisEnvironment
    call: EagerCall
    operands: Sequence
    in_dims: Sequence

    def stacked(self, operand, dims) -> np.ndarray | None:
        environment = self.environment
        if isinstance(operand, Tracer) and operand.value.id not in self.call.values:
            return None  # a value computed in the enclosing trace: not known while tracing
        array = self.call.values[operand.value.id] if isinstance(operand, Tracer) else np.asarray(operand)
        sharding = TensorSharding.from_axis_names(environment.mesh_name, dims)
        return split_for_manual_body(array, sharding, environment.mesh, environment.manual_axes)

    def per_device(self, tracer: Tracer) -> np.ndarray | None:
        """The tracer's value on every position of the manual grid, stacked (None when the body
        uses a value the call's operands do not determine)."""
        trace = tracer.trace
        args = list(trace.args[:len(self.operands)])
        arrays = [self.stacked(operand, dims) for operand, dims in zip(self.operands, self.in_dims)]
        for value, outside in trace.captured.values():
            args.append(value)
            arrays.append(self.stacked(outside, ((),) * len(value.type.shape)))
        if any(array is None for array in arrays):
            return None
        block = Block(tuple(args), tuple(trace.ops), (tracer.value,))
        meshes = {**trace.meshes, self.environment.mesh_name: self.environment.mesh}
        (stacked,) = run_manual_body(block, arrays, meshes, self.environment.mesh_name,
                                     self.environment.manual_axes)
        return stacked

    def describe(self, tracer: Tracer) -> str | None:
        stacked = self.per_device(tracer)
        if stacked is None:
            return None
        manual = [name for name in self.call.axis_names if name in self.environment.manual_axes]
        sizes = [self.environment.mesh.axis_size(name) for name in manual]
        axis_text = f"({', '.join(self.call.axis_names)},)"
        lines = []
        for index, device in np.ndenumerate(self.call.device_names):
            coordinates = dict(zip(self.call.axis_names, index))
            position = int(np.ravel_multi_index([coordinates[name] for name in manual], sizes)) if manual else 0
            lines.append(f"On {device} at mesh coordinates {axis_text} = {index}:\n{np.asarray(stacked[position])}\n")
        return "\n".join(lines)


_bodies: dict[int, _EagerBody] = {}


@contextmanager
def printing_per_device(trace: Trace, environment: AxisEnvironment, call: EagerCall | None, operands,
                        in_dims) -> Iterator[None]:
    """While the body ``trace`` of an eager call is traced, its values print per device."""
    if call is None:
        yield
        return
    _bodies[id(trace)] = _EagerBody(environment, call, list(operands), list(in_dims))
    try:
        yield
    finally:
        del _bodies[id(trace)]


def _describe(tracer: Tracer) -> str | None:
    body = _bodies.get(id(tracer.trace))
    return None if body is None else body.describe(tracer)


add_tracer_describer(_describe)
