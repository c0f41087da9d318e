"""The stages of ``jit(f).lower(*args).compile()``: Lowered (the traced module for one input
signature) and Compiled (the propagated, partitioned, optimised program), both views over what
the compiler's pipeline made; Compiled runs through the runtime's Executable."""

from __future__ import annotations

import copy

import warnings
from dataclasses import replace

import optree

from meshjit.compiler.search.auto_sharding import SearchRequest
from meshjit.compiler.analysis.collectives import CollectiveRecord, collective_records
from meshjit.compiler.analysis.cost import cost_analysis as module_cost_analysis
from meshjit.compiler.analysis.cost import load_cost_model
from meshjit.compiler.analysis.memory import peak_memory_bytes
from meshjit.compiler.propagation.explain import format_provenance
from meshjit.compiler.pipeline import CompiledProgram, compile_module
from meshjit.compiler.frontend.trace import source_of, user_location
from meshjit.ir import interpret
from meshjit.ir.config import config
from meshjit.ir.dtypes import to_numpy
from meshjit.ir.printer import print_module
from meshjit.runtime.sharding import NamedSharding
from meshjit.runtime.executable import Executable, single_device_array
from meshjit.runtime.executor import run_spmd
from meshjit.runtime.process_layout import process_layout

from ._arguments import ShapeDtypeStruct, abstract_argument, leaf_signature
from ._check import run_checked
from ._inspection import report_inspected_shardings
from ._placement import Placement
from ._shardings import from_ir_sharding, result_sharding, runtime_mesh
from ._types import type_sharding
from ._pytreedef import PyTreeDef
from .tree_util import NAMESPACE
from .tree_util import _flatten as flatten_tree


class Compiled:
    """A program compiled for one input signature; call it with the dynamic arguments."""

    def __init__(self, lowered: Lowered, program: CompiledProgram, executable: Executable):
        self._lowered = lowered
        self._program = program
        self._executable = executable
        # NOTE: the argument signatures (config version, tree, leaf signatures) already checked
        self._checked: set = set()

    @property
    def in_tree(self):
        """The pytree structure of the ``(args, kwargs)`` the program takes (dynamic leaves)."""
        return PyTreeDef(self._lowered._in_tree)

    @property
    def out_tree(self):
        return PyTreeDef(self._lowered._out_tree)

    @property
    def program(self) -> CompiledProgram:
        """What the pipeline produced: traced, propagated and per-device modules, provenance,
        collective reasons, partitioning decisions and the Plan."""
        return self._program

    def runtime_executable(self) -> Executable:
        """The runtime's Executable: the Plan with its boundary shardings, donation and layout."""
        return self._executable

    def as_text(self) -> str:
        """The per-device module (the traced module when nothing is sharded)."""
        return print_module(self._program.partitioned or self._program.traced)

    @property
    def input_shardings(self):
        count = self._lowered._in_tree.num_leaves
        shardings = self._executable.arg_shardings if self._executable.sharded else (None,) * count
        return optree.tree_unflatten(self._lowered._in_tree, list(shardings[:count]))

    @property
    def output_shardings(self):
        return optree.tree_unflatten(self._lowered._out_tree, list(self._executable.result_shardings))

    def cost_analysis(self) -> dict[str, float]:
        analysis = module_cost_analysis(self._program.propagated)
        analysis["collective bytes per device"] = float(sum(record.total_bytes for record in self.collectives()))
        return analysis

    def collectives(self) -> list[CollectiveRecord]:
        """Every collective of the per-device program: kind, mesh axes, bytes each device sends
        (ring model), and why it is there."""
        if self._program.partitioned is None:
            return []
        return collective_records(self._program.partitioned, self._program.collective_reasons)

    def explain(self, *, search: bool = True) -> str:
        """Where every value's sharding came from, and the choices the partitioner made; after
        an automatic sharding search (AUTO shardings), first the best layouts it compared."""
        program = self._program
        text = program.search.format() + "\n" if search and program.search is not None else ""
        text += (format_provenance(program.traced, program.propagation, program.strategy_name)
                if program.propagation is not None else "no propagation result (custom strategy or no mesh)\n")
        if program.decisions:
            text += "\npartitioning decisions\n"
            for decision in program.decisions:
                where = f" at {decision.location}" if decision.location else ""
                text += f"  {decision.op}{where}: {decision.chosen}\n"
                for name, value in decision.alternatives.items():
                    text += f"      {name}: {value:.0f}\n"
        return text

    def run_reference(self, *args, **kwargs):
        """Run the per-device module through the reference interpreter instead of the Plan
        (the oracle the compiled kernels are checked against)."""
        leaves = optree.tree_leaves((args, kwargs), namespace=NAMESPACE)
        executable = self._executable
        if self._program.partitioned is None:
            outputs = [single_device_array(output, sharding, weak, executable.committed) for output, sharding, weak
                       in zip(interpret(self._program.reference, *executable.host_arguments(leaves)),
                              executable.result_shardings, executable.result_weak_types)]
        else:
            outputs = run_spmd(self._program.partitioned, [*leaves, *executable.captured], executable.arg_shardings,
                               executable.result_shardings, executable.result_shapes, executable.result_weak_types)
        return optree.tree_unflatten(self._lowered._out_tree, outputs)

    def __call__(self, *args, **kwargs):
        leaves, treedef = flatten_tree((args, kwargs))
        signature = (config.version, treedef, *[leaf_signature(leaf) for leaf in leaves])
        if signature not in self._checked:
            self._check_arguments(leaves, treedef)
            if None not in signature[2:]:
                self._checked.add(signature)
        outputs = run_checked(self, leaves) if config.read("check_partitioning") else self._executable.run(leaves)
        return optree.tree_unflatten(self._lowered._out_tree, outputs)

    def _check_arguments(self, leaves, treedef) -> None:
        """The arguments have the structure, shapes and dtypes the program was compiled for."""
        if treedef != self._lowered._in_tree:
            raise TypeError(
                f"Compiled function called with arguments of structure {PyTreeDef(treedef)}, but it was "
                f"compiled for {self.in_tree}"
            )
        for position, (leaf, spec) in enumerate(zip(leaves, self._lowered._arg_specs)):
            actual = abstract_argument(leaf, f"[{position}]")
            if actual.type != spec.type:
                raise TypeError(f"Compiled argument {position}: expected {spec.type}, got {actual.type}")


class Traced:
    """A traced program for one input signature (``jit(f).trace(*args)``): its output types
    (``out_info``), and ``lower()``. In meshjit tracing and lowering are one step, so this is a
    view over the Lowered."""

    def __init__(self, lowered: Lowered, fun_name: str):
        self._lowered = lowered
        self.fun_name = fun_name

    @property
    def in_tree(self):
        return PyTreeDef(self._lowered._in_tree)

    @property
    def out_tree(self):
        return PyTreeDef(self._lowered._out_tree)

    @property
    def args_info(self):
        """A ShapeDtypeStruct per dynamic argument leaf, in the ``(args, kwargs)`` structure."""
        structs = [ShapeDtypeStruct(spec.type.shape, to_numpy(spec.type.dtype), sharding=spec.sharding,
                                    weak_type=spec.weak_type) for spec in self._lowered._arg_specs]
        return optree.tree_unflatten(self._lowered._in_tree, structs)

    @property
    def out_info(self):
        """A ShapeDtypeStruct per output, its sharding the output's type (over the abstract mesh)
        when the output lives on a mesh."""
        return self._lowered.out_info

    @property
    def module(self):
        return self._lowered.module

    @property
    def jaxpr(self):
        """The traced program as JAX's ClosedJaxpr (what ``make_jaxpr`` gives,
        ``jax.stages.Traced.jaxpr``)."""
        from .make_jaxpr_api import TracedProgram  # noqa: PLC0415 - make_jaxpr_api imports jit, which imports this

        return TracedProgram(self._lowered)

    def as_text(self) -> str:
        return self._lowered.as_text()

    def lower(self) -> Lowered:
        return self._lowered


class Lowered:
    """A traced program for one input signature: ``as_text()`` shows it, ``compile()`` builds it."""

    def __init__(self, traced, in_tree, out_tree, arg_specs, input_shardings, output_shardings, *,
                 propagation="shardy", donated: frozenset[int] = frozenset(), placement: Placement,
                 search: SearchRequest | None = None, memory_budget_bytes: int | None = None):
        self._traced = traced
        self._in_tree = in_tree
        self._out_tree = out_tree
        self._arg_specs = arg_specs
        self._input_shardings = input_shardings
        self._output_shardings = output_shardings
        self._propagation = propagation
        self._donated = frozenset(donated)
        self._placement = placement
        self._search = search
        self._memory_budget_bytes = memory_budget_bytes
        self._compiled: Compiled | None = None

    @property
    def in_tree(self):
        """The pytree structure of the ``(args, kwargs)`` the program takes (dynamic leaves)."""
        return PyTreeDef(self._in_tree)

    @property
    def out_tree(self):
        return PyTreeDef(self._out_tree)

    def as_text(self) -> str:
        return print_module(self._traced.module)

    @property
    def module(self):
        return self._traced.module

    @property
    def out_info(self):
        """A ShapeDtypeStruct per output, with its sharding type when it lives on a mesh."""
        traced = self._traced
        structs = []
        returns = traced.module.main.returns
        types = traced.out_sharding_types or [None] * len(returns)
        for value, weak, sharding in zip(returns, traced.out_weak_types, types):
            named = None if sharding is None or sharding.mesh.empty else type_sharding(sharding)
            structs.append(ShapeDtypeStruct(value.type.shape, to_numpy(value.type.dtype), sharding=named,
                                            weak_type=weak))
        return optree.tree_unflatten(self._out_tree, structs)

    def uncompiled_copy(self) -> Lowered:
        """This lowering without its compiled program (each jit object compiles its own)."""
        copied = copy.copy(self)
        copied._compiled = None
        return copied

    def compile(self) -> Compiled:
        if self._compiled is None:
            module = self._traced.module
            whole_mesh = all(process_layout(runtime_mesh(mesh)) is None for _, mesh in module.meshes)
            search = self._search
            if search is not None:
                search = replace(search, cost_model=load_cost_model())
            program = compile_reporting_at_user_line(module, self._propagation, self._donated, whole_mesh, search)
            self._check_budget(program)
            report_inspected_shardings(program)
            self._compiled = Compiled(self, program, self._executable(program))
        return self._compiled

    def _check_budget(self, program: CompiledProgram) -> None:
        """Without AUTO layouts to choose, ``memory_budget_bytes`` still bounds the program: the
        layouts given must fit it (the search checks its own choice)."""
        budget = self._memory_budget_bytes
        if budget is None or program.search is not None:
            return
        peak = peak_memory_bytes(program.partitioned or program.traced)
        if peak > budget:
            raise ValueError(f"jit memory_budget_bytes={budget}: the program needs {peak} bytes per device at its "
                             f"peak with the shardings given; shard more of it, or give AUTO(mesh) shardings "
                             f"for jit to choose")

    def _as_requested(self, result_shardings: list, result_shapes: list) -> list:
        """As JAX, a result laid out as jit's out_shardings asked carries the Sharding given
        (``P()`` stays ``P()``, not the spec its type prints)."""
        # NOTE: up to the output tree: a None the function returns is a node, not a sharding
        requested = self.out_tree.flatten_up_to(self._output_shardings)
        return [given if isinstance(given, NamedSharding) and given.is_equivalent_to(found, len(shape))
                else found
                for given, found, shape in zip(requested, result_shardings, result_shapes)]

    def _executable(self, program: CompiledProgram) -> Executable:
        """The runtime's Executable for ``program``: runtime shardings at the boundaries."""
        traced = self._traced
        func = traced.module.main
        result_shapes = [value.type.shape for value in func.returns]
        if program.partitioned is None:
            arg_shardings = [None] * len(func.args)
            # NOTE: up to the output tree: a None the function returns is a node, not a sharding
            result_shardings = self.out_tree.flatten_up_to(self._output_shardings)
            layout = None
        else:
            partitioned = program.partitioned.main
            mesh = program.partitioned.mesh(partitioned.spmd_mesh)
            layout = process_layout(runtime_mesh(mesh))
            arg_shardings = [from_ir_sharding(sharding, mesh, value.type.rank)
                             for sharding, value in zip(partitioned.arg_shardings, func.args)]
            out_types = traced.out_sharding_types or [None] * len(result_shapes)
            result_shardings = [result_sharding(sharding, mesh, len(shape), out_type)
                                for sharding, shape, out_type in zip(partitioned.result_shardings, result_shapes,
                                                                     out_types)]
            result_shardings = self._as_requested(result_shardings, result_shapes)
        return Executable(program.plan, arg_shardings=arg_shardings,
                          arg_dtypes=[to_numpy(value.type.dtype) for value in func.args],
                          result_shardings=result_shardings, result_shapes=result_shapes,
                          result_weak_types=traced.out_weak_types, donated=self._donated,
                          captured=traced.captured, layout=layout, committed=self._placement.committed)

    def cost_analysis(self) -> dict[str, float]:
        return module_cost_analysis(self._traced.module)


def compile_reporting_at_user_line(module, propagation, donated: frozenset[int], whole_mesh: bool,
                                   search: SearchRequest | None = None) -> CompiledProgram:
    """Compile; compiler warnings (full rematerialisation) are re-issued at the user's line that
    triggered compilation, which names where the costly program was called from."""
    location = user_location()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        program = compile_module(module, propagation=propagation, donated=donated, whole_mesh=whole_mesh,
                                 search=search)
    filename, _, line = source_of(location or "<unknown>:0").rpartition(":")
    for record in caught:
        message = f"{record.message} (compiled for the call at {location})"
        warnings.warn_explicit(message, record.category, filename, int(line) if line.isdigit() else 0)
    return program

