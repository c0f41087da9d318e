"""The compiler's pass pipeline, in one explicit ordered list, with per-pass dumps.

``MESHJIT_DUMP_DIR=dir`` writes the module after every pass as ``<name>.NN-<pass>.mjir``, in
order, and the per-device program's collectives as ``<name>.collectives.json``. ``PASSES`` names
every pass for tools that run them one by one (``meshjit opt --passes``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from meshjit.ir import DimSharding, Module, TensorSharding
from meshjit.ir.printer import print_module

from .collectives import collective_records, collective_summary
from .passes.combine_collectives import fuse_reduce_scatter, merge_chained_collectives
from .passes.cse import eliminate_common_subexpressions
from .passes.dce import eliminate_dead_code
from .passes.partition import Decision, partition, partition_with_report
from .passes.propagate_shardings import (
    PropagationResult,
    Strategy,
    analyze_shardings,
    apply_shardings,
    propagate_shardings,
)


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


def _boundary_sharding(sharding: TensorSharding | None, shape, mesh) -> TensorSharding | None:
    """A layout Arrays can hold: whole mesh axes only, each dim keeping the major axes whose
    product divides it (sub-axes, and axes that would pad the dim, dropped with what follows).

    NOTE: user in_shardings and out_shardings were checked to divide when traced, so only
    layouts propagation chose for uncommitted arguments and results are cut here."""
    if sharding is None:
        return None
    dims = []
    for size, dim in zip(shape, sharding.dims):
        axes, shards = [], 1
        for axis in dim.axes:
            shards *= mesh.axis_size(axis.name)
            if axis.size is not None or size % shards:
                break
            axes.append(axis)
        dims.append(DimSharding(tuple(axes), dim.is_closed, dim.priority))
    return TensorSharding(sharding.mesh_name, tuple(dims), sharding.replicated)


def normalize_boundaries(module: Module) -> Module:
    func = module.main

    def boundary(sharding, value):
        mesh = module.mesh(sharding.mesh_name) if sharding is not None else None
        return _boundary_sharding(sharding, value.type.shape, mesh)

    new_func = replace(func, arg_shardings=tuple(boundary(s, v) for s, v in zip(func.arg_shardings, func.args)),
                       result_shardings=tuple(boundary(s, v) for s, v in zip(func.result_shardings, func.returns)))
    return replace(module, funcs=(new_func,))


class Dumper:
    """Writes ``<name>.NN-<pass>.mjir`` files into ``directory`` (default ``MESHJIT_DUMP_DIR``)."""

    def __init__(self, name: str, directory: str | None = None):
        self.directory = directory or os.environ.get("MESHJIT_DUMP_DIR")
        # NOTE: function names such as "<lambda>" become file-name safe.
        self.name = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
        self.count = 0

    def __call__(self, pass_name: str, module: Module) -> None:
        if not self.directory:
            return
        os.makedirs(self.directory, exist_ok=True)
        path = os.path.join(self.directory, f"{self.name}.{self.count:02d}-{pass_name}.mjir")
        with open(path, "w") as handle:
            handle.write(print_module(module))
        self.count += 1

    def collectives(self, module: Module, reasons: dict[int, str]) -> None:
        """``<name>.collectives.json``: the per-device program's collectives and their total."""
        if not self.directory:
            return
        summary = collective_summary(module, collective_records(module, reasons), self.name)
        with open(os.path.join(self.directory, f"{self.name}.collectives.json"), "w") as handle:
            json.dump(summary, handle, indent=2)
            handle.write("\n")


def compile_module(module: Module, *, propagation: str | Strategy | Callable = "shardy",
                   name: str = "main") -> CompiledProgram:
    """traced -> propagate_shardings -> normalize_boundaries -> partition -> OPTIMISATIONS."""
    dump = Dumper(name)
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
    dump.collectives(partitioned, report.collective_reasons)
    return CompiledProgram(module, propagated, partitioned, result, strategy_name,
                           report.collective_reasons, report.decisions)


# NOTE: the optimisation passes on the per-device module, in the order they run.
OPTIMISATIONS = (
    ("eliminate_common_subexpressions", eliminate_common_subexpressions),
    ("fuse_reduce_scatter", fuse_reduce_scatter),
    ("merge_chained_collectives", merge_chained_collectives),
    ("eliminate_dead_code", eliminate_dead_code),
)


# NOTE: every pass by name, in the order compile_module runs them; tools pick from this table.
PASSES: dict[str, Callable[[Module], Module]] = {
    "propagate_shardings": propagate_shardings,
    "normalize_boundaries": normalize_boundaries,
    "partition": partition,
    **dict(OPTIMISATIONS),
}
