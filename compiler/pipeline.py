"""The compiler's pass pipeline, in one explicit ordered list, with per-pass dumps.

``MESHJIT_DUMP_DIR=dir`` writes the module after every pass as ``NN-<pass>.mjir``, in order.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace

from meshjit.ir import DimSharding, Module, TensorSharding
from meshjit.ir.printer import print_module

from .passes.combine_collectives import fuse_reduce_scatter, merge_chained_collectives
from .passes.cse import eliminate_common_subexpressions
from .passes.dce import eliminate_dead_code
from .passes.partition import Decision, partition_with_report
from .passes.propagate_shardings import PropagationResult, Strategy, analyze_shardings, apply_shardings


@dataclass
class CompiledProgram:
    """Everything compilation produced: the propagated global module, the per-device module
    (None when nothing is sharded), and the analyses explain() and collectives() read."""

    traced: Module
    propagated: Module
    partitioned: Module | None
    propagation: PropagationResult | None
    strategy_name: str
    collective_reasons: dict[int, str]
    decisions: list[Decision]


def _boundary_sharding(sharding: TensorSharding | None) -> TensorSharding | None:
    """A layout Arrays can hold: whole mesh axes only (sub-axes and what follows them dropped)."""
    if sharding is None:
        return None
    dims = []
    for dim in sharding.dims:
        axes = []
        for axis in dim.axes:
            if axis.size is not None:
                break
            axes.append(axis)
        dims.append(DimSharding(tuple(axes), dim.is_closed, dim.priority))
    return TensorSharding(sharding.mesh_name, tuple(dims), sharding.replicated)


def normalize_boundaries(module: Module) -> Module:
    func = module.main
    new_func = replace(func, arg_shardings=tuple(_boundary_sharding(s) for s in func.arg_shardings),
                       result_shardings=tuple(_boundary_sharding(s) for s in func.result_shardings))
    return replace(module, funcs=(new_func,))


class _Dumper:
    def __init__(self, name: str):
        self.directory = os.environ.get("MESHJIT_DUMP_DIR")
        self.name = name
        self.count = 0

    def __call__(self, pass_name: str, module: Module) -> None:
        if not self.directory:
            return
        os.makedirs(self.directory, exist_ok=True)
        path = os.path.join(self.directory, f"{self.name}.{self.count:02d}-{pass_name}.mjir")
        with open(path, "w") as handle:
            handle.write(print_module(module))
        self.count += 1


def compile_module(module: Module, *, propagation: str | Strategy | Callable = "shardy",
                   name: str = "main") -> CompiledProgram:
    """traced -> propagate_shardings -> normalize_boundaries -> partition -> OPTIMISATIONS."""
    dump = _Dumper(name)
    dump("traced", module)
    if not module.meshes:
        return CompiledProgram(module, module, None, None, "none", {}, [])
    if callable(propagation) and not isinstance(propagation, Strategy):
        propagated, result, strategy_name = propagation(module), None, getattr(propagation, "__name__", "custom")
    else:
        result = analyze_shardings(module, propagation)
        propagated = apply_shardings(module, result)
        strategy_name = propagation if isinstance(propagation, str) else propagation.name
    dump("propagate_shardings", propagated)
    propagated = normalize_boundaries(propagated)
    dump("normalize_boundaries", propagated)
    report = partition_with_report(propagated)
    dump("partition", report.module)
    partitioned = report.module
    for pass_name, optimise in OPTIMISATIONS:
        partitioned = optimise(partitioned)
        dump(pass_name, partitioned)
    return CompiledProgram(module, propagated, partitioned, result, strategy_name,
                           report.collective_reasons, report.decisions)


# NOTE: the optimisation passes on the per-device module, in the order they run.
OPTIMISATIONS = (
    ("eliminate_common_subexpressions", eliminate_common_subexpressions),
    ("fuse_reduce_scatter", fuse_reduce_scatter),
    ("merge_chained_collectives", merge_chained_collectives),
    ("eliminate_dead_code", eliminate_dead_code),
)
