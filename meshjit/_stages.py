"""The stages of ``jit(f).lower(*args).compile()``: Lowered (the traced module for one input
signature) and Compiled (the propagated, partitioned, optimised program, ready to run)."""

from __future__ import annotations

import warnings

import numpy as np
import optree

from meshjit.compiler.collectives import CollectiveRecord, collective_records
from meshjit.compiler.cost import cost_analysis as module_cost_analysis
from meshjit.compiler.explain import format_provenance
from meshjit.compiler.lower import lower
from meshjit.compiler.pipeline import CompiledProgram, compile_module
from meshjit.compiler.frontend.trace import user_location
from meshjit.ir import interpret
from meshjit.ir.config import config
from meshjit.ir.dtypes import to_numpy
from meshjit.ir.printer import print_module
from meshjit.runtime.array import Array
from meshjit.runtime.executor import ArgumentMemo, from_buffer, run_plan, run_spmd, to_buffer
from meshjit.runtime.process_layout import process_layout
from meshjit.runtime.sharding import SingleDeviceSharding
from meshjit.runtime.transfer import shard_numpy

from ._arguments import abstract_argument, is_sharding_leaf
from ._check import run_checked
from ._inspection import report_inspected_shardings
from ._shardings import from_ir_sharding, runtime_mesh
from .tree_util import NAMESPACE


class Compiled:
    """A program compiled for one input signature; call it with the dynamic arguments."""

    def __init__(self, lowered: Lowered, program: CompiledProgram):
        self._lowered = lowered
        self._program = program
        self._compiled_plan = None
        self._memos = None  # per argument: the layout to_buffer worked out last call
        traced = lowered._traced.module
        self._result_shapes = [value.type.shape for value in traced.main.returns]
        partitioned = program.partitioned
        self._layout = None  # this process's block of the mesh when it spans several processes
        if partitioned is None:
            self._arg_shardings = [None] * len(traced.main.args)
            self._result_shardings = optree.tree_leaves(
                lowered._output_shardings, is_leaf=is_sharding_leaf, none_is_leaf=True, namespace=NAMESPACE)
        else:
            mesh = partitioned.mesh(partitioned.main.spmd_mesh)
            self._layout = process_layout(runtime_mesh(mesh))
            func = partitioned.main
            self._arg_shardings = [from_ir_sharding(s, mesh, len(v.type.shape)) for s, v in zip(func.arg_shardings, traced.main.args)]
            self._result_shardings = [from_ir_sharding(s, mesh, len(shape)) for s, shape in zip(func.result_shardings, self._result_shapes)]

    def as_text(self) -> str:
        """The per-device module (the traced module when nothing is sharded)."""
        return print_module(self._program.partitioned or self._program.traced)

    @property
    def input_shardings(self):
        count = self._lowered._in_treedef.num_leaves
        return optree.tree_unflatten(self._lowered._in_treedef, self._arg_shardings[:count])

    @property
    def output_shardings(self):
        return optree.tree_unflatten(self._lowered._out_treedef, list(self._result_shardings))

    def cost_analysis(self) -> dict[str, float]:
        analysis = module_cost_analysis(self._program.propagated)
        analysis["collective bytes per device"] = float(sum(record.bytes for record in self.collectives()))
        return analysis

    def collectives(self) -> list[CollectiveRecord]:
        """Every collective of the per-device program: kind, mesh axes, bytes each device sends
        (ring model), and why it is there."""
        if self._program.partitioned is None:
            return []
        return collective_records(self._program.partitioned, self._program.collective_reasons)

    def explain(self) -> str:
        """Where every value's sharding came from, and the choices the partitioner made."""
        text = (format_provenance(self._program.traced, self._program.propagation, self._program.strategy_name)
                if self._program.propagation is not None else "no propagation result (custom strategy or no mesh)\n")
        if self._program.decisions:
            text += "\npartitioning decisions\n"
            for decision in self._program.decisions:
                where = f" at {decision.location}" if decision.location else ""
                text += f"  {decision.op}{where}: {decision.chosen}\n"
                for name, value in decision.alternatives.items():
                    text += f"      {name}: {value:.0f}\n"
        return text

    def _run_flat(self, leaves) -> list[Array]:
        traced = self._lowered._traced
        specs = self._lowered._arg_specs
        weak = traced.out_weak_types
        arguments = list(leaves) + list(traced.captured)
        if self._program.partitioned is not None:
            return self._run_plan(arguments, weak)
        arrays = [np.asarray(leaf, dtype=to_numpy(spec.type.dtype)) for leaf, spec in zip(leaves, specs)]
        arrays += [np.asarray(captured) for captured in traced.captured]
        self._release_donated(list(leaves))
        outputs = run_plan(self._plan(), arrays)
        return [single_device_array(output, sharding, w)
                for output, sharding, w in zip(outputs, self._result_shardings, weak)]

    def _run_plan(self, arguments, weak) -> list[Array]:
        plan = self._plan()
        lead_shape = plan.mesh_shape if self._layout is None else self._layout.local_shape
        if self._memos is None:
            self._memos = [ArgumentMemo() for _ in arguments]
        buffers = [to_buffer(value, sharding, lead_shape, varying, memo) for value, sharding, varying, memo
                   in zip(arguments, self._arg_shardings, plan.arg_varying, self._memos)]
        self._release_donated(arguments)
        outputs = run_plan(plan, buffers, self._layout)
        return [from_buffer(output, sharding, shape, lead_shape, weak_type=w)
                for output, sharding, shape, w in zip(outputs, self._result_shardings, self._result_shapes, weak)]

    def _plan(self):
        if self._compiled_plan is None:
            self._compiled_plan = lower(self._program.partitioned or self._program.traced, self._lowered._donated,
                                        whole_mesh=self._layout is None)
        return self._compiled_plan

    def _release_donated(self, arguments) -> None:
        """Donated Arrays are deleted once their buffers are handed to the plan, which frees
        them at their last use, so their memory is reused during the call (JAX semantics:
        a donated Array cannot be used afterwards)."""
        for position in self._lowered._donated:
            value = arguments[position]
            if isinstance(value, Array) and not value.is_deleted():
                value.delete()

    def run_reference(self, *args, **kwargs):
        """Run the per-device module through the reference interpreter instead of the Plan
        (the oracle the compiled kernels are checked against)."""
        leaves = optree.tree_leaves((args, kwargs), namespace=NAMESPACE)
        arguments = list(leaves) + list(self._lowered._traced.captured)
        weak = self._lowered._traced.out_weak_types
        if self._program.partitioned is None:
            specs = self._lowered._arg_specs
            arrays = [np.asarray(leaf, dtype=to_numpy(spec.type.dtype)) for leaf, spec in zip(leaves, specs)]
            arrays += [np.asarray(captured) for captured in self._lowered._traced.captured]
            outputs = [single_device_array(output, sharding, w) for output, sharding, w
                       in zip(interpret(self._program.traced, *arrays), self._result_shardings, weak)]
        else:
            outputs = run_spmd(self._program.partitioned, arguments, self._arg_shardings, self._result_shardings,
                               self._result_shapes, weak)
        return optree.tree_unflatten(self._lowered._out_treedef, outputs)

    def __call__(self, *args, **kwargs):
        leaves, treedef = optree.tree_flatten((args, kwargs), namespace=NAMESPACE)
        if treedef != self._lowered._in_treedef:
            raise TypeError(
                f"Compiled function called with arguments of structure {treedef}, but it was "
                f"compiled for {self._lowered._in_treedef}"
            )
        for position, (leaf, spec) in enumerate(zip(leaves, self._lowered._arg_specs)):
            actual = abstract_argument(leaf, f"[{position}]")
            if actual.type != spec.type:
                raise TypeError(f"Compiled argument {position}: expected {spec.type}, got {actual.type}")
        outputs = run_checked(self, leaves) if config.read("check_partitioning") else self._run_flat(leaves)
        return optree.tree_unflatten(self._lowered._out_treedef, outputs)


class Lowered:
    """A traced program for one input signature: ``as_text()`` shows it, ``compile()`` builds it."""

    def __init__(self, traced, in_treedef, out_treedef, arg_specs, input_shardings, output_shardings,
                 propagation="shardy"):
        self._propagation = propagation
        self._donated: frozenset[int] = frozenset()
        self._traced = traced
        self._in_treedef = in_treedef
        self._out_treedef = out_treedef
        self._arg_specs = arg_specs
        self._input_shardings = input_shardings
        self._output_shardings = output_shardings
        self._compiled: Compiled | None = None

    def as_text(self) -> str:
        return print_module(self._traced.module)

    @property
    def module(self):
        return self._traced.module

    def compile(self) -> Compiled:
        if self._compiled is None:
            program = compile_reporting_at_user_line(self._traced.module, self._propagation)
            report_inspected_shardings(program)
            self._compiled = Compiled(self, program)
        return self._compiled

    def cost_analysis(self) -> dict[str, float]:
        return module_cost_analysis(self._traced.module)


def compile_reporting_at_user_line(module, propagation) -> CompiledProgram:
    """Compile; compiler warnings (full rematerialisation) are re-issued at the user's line that
    triggered compilation, which names where the costly program was called from."""
    location = user_location()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        program = compile_module(module, propagation=propagation)
    filename, _, line = (location or "<unknown>:0").rpartition(":")
    for record in caught:
        message = f"{record.message} (compiled for the call at {location})"
        warnings.warn_explicit(message, record.category, filename, int(line) if line.isdigit() else 0)
    return program


def single_device_array(output: np.ndarray, sharding, weak_type: bool) -> Array:
    """An Array on one device from an unsharded program's result (replicated shardings given by
    out_shardings are laid out properly)."""
    if not isinstance(sharding, SingleDeviceSharding):
        return shard_numpy(np.asarray(output), sharding, weak_type=weak_type)
    block = np.array(output)[np.newaxis]
    block.flags.writeable = False
    return Array(block.shape[1:], block.dtype, sharding, block, (0,), weak_type=weak_type)
