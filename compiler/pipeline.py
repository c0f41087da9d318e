"""The compiler's one pass pipeline: an ordered tuple of named passes with options, ending in
lowering to the Plan, with a dump after every pass.

``jit``, the command line (``meshjit opt --passes``, ``explain``, ``collectives``, ``check``)
and the tests all run ``default_pipeline(...)`` or a selection of its passes. With
``MESHJIT_DUMP_DIR=dir`` a run writes the module after every pass as
``<name>.NN-<pass>.mjir``, in order, and the per-device program's collectives as
``<name>.collectives.json``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from meshjit.ir import Module
from meshjit.ir.printer import print_module
from meshjit.runtime.plan import Plan

from . import rules as _rules  # noqa: F401  (the assembler: importing the families fills the tables)
from .propagation.normalize_boundaries import normalize_boundaries
from .search.auto_sharding import SearchReport, SearchRequest, search_shardings
from .analysis.collectives import collective_records, collective_summary
from .lowering.lower import lower
from .optimize.combine_collectives import merge_chained_collectives
from .optimize.cse import eliminate_common_subexpressions
from .optimize.dce import eliminate_dead_code
from .optimize.xla_arithmetic import contract_multiply_adds, rewrite_as_xla, rewrite_divisions
from .partitioning.partition import Decision, partition_with_report
from .propagation.propagate_shardings import (
    PropagationResult,
    Strategy,
    analyze_shardings,
    apply_shardings,
    resolve_propagation,
)

# Where a pass runs: on the global module, on the per-device module, or (lowering) from the
# per-device module (the traced one when nothing is sharded) to the Plan.
GLOBAL, PER_DEVICE, LOWER = "global", "per_device", "lower"


@dataclass(frozen=True)
class Reported:
    """A pass's output module with what the pass learned on the way (propagation provenance,
    the partitioner's collective reasons and decisions), kept under the pass's name."""

    module: Module
    report: object


@dataclass(frozen=True)
class PassSpec:
    """One named pass: ``function(module, **options)`` returns the next module (or Reported),
    or the Plan for the ``lower`` stage. ``stage`` says which module it reads (GLOBAL,
    PER_DEVICE or LOWER)."""

    name: str
    function: Callable
    stage: str = PER_DEVICE
    options: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self):
        if self.stage not in (GLOBAL, PER_DEVICE, LOWER):
            raise ValueError(f"pass {self.name!r}: stage must be {GLOBAL!r}, {PER_DEVICE!r} or {LOWER!r}, "
                             f"got {self.stage!r}")

    def with_options(self, **options) -> PassSpec:
        return replace(self, options={**self.options, **options})

    def __call__(self, module: Module):
        return self.function(module, **self.options)


@dataclass
class PipelineRun:
    """What one run produced: the module after every pass that ran (in order), each reporting
    pass's report, and the Plan when the run reached ``lower``."""

    input: Module
    modules: dict[str, Module] = field(default_factory=dict)
    reports: dict[str, object] = field(default_factory=dict)
    plan: Plan | None = None

    @property
    def module(self) -> Module:
        """The last module (the input when no pass ran)."""
        return list(self.modules.values())[-1] if self.modules else self.input


@dataclass(frozen=True)
class Pipeline:
    """An ordered tuple of passes; ``run`` applies them in order."""

    passes: tuple[PassSpec, ...]

    def __post_init__(self):
        names = [spec.name for spec in self.passes]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"a pipeline names each pass once; {', '.join(repeated)} appear twice")
        lowering = [index for index, spec in enumerate(self.passes) if spec.stage == LOWER]
        if lowering and lowering != [len(self.passes) - 1]:
            raise ValueError("lower produces the Plan, so it can only be the last pass of a pipeline")

    def names(self) -> tuple[str, ...]:
        return tuple(spec.name for spec in self.passes)

    def __getitem__(self, name: str) -> PassSpec:
        self._check_known(name)
        return next(spec for spec in self.passes if spec.name == name)

    def _check_known(self, name: str) -> None:
        if name not in self.names():
            raise KeyError(f"unknown pass {name!r}; the passes are: {', '.join(self.names())}")

    def select(self, names: Sequence[str]) -> Pipeline:
        """The named passes, in the order given (each from this pipeline, options included)."""
        return Pipeline(tuple(self[name] for name in names))

    def of_stage(self, *stages: str) -> Pipeline:
        return Pipeline(tuple(spec for spec in self.passes if spec.stage in stages))

    def with_pass_options(self, name: str, **options) -> Pipeline:
        """This pipeline with pass ``name``'s options updated."""
        self._check_known(name)
        return Pipeline(tuple(spec.with_options(**options) if spec.name == name else spec for spec in self.passes))

    def run(self, module: Module, *, dump: Callable[[str, Module], None] | None = None,
            input_name: str = "traced") -> PipelineRun:
        """Run every pass in order on ``module``. ``dump(pass_name, module)`` (if given) sees the
        input as ``input_name`` and the module after each pass; a Dumper also writes the
        per-device program's collectives summary at the end."""
        if dump is not None:
            dump(input_name, module)
        run = PipelineRun(module)
        current = module
        for spec in self.passes:
            output = spec(current)
            if isinstance(output, Reported):
                run.reports[spec.name] = output.report
                output = output.module
            if spec.stage == LOWER:
                run.plan = output
                break
            current = run.modules[spec.name] = output
            if dump is not None:
                dump(spec.name, current)
        partition_report = run.reports.get("partition")
        if isinstance(dump, Dumper) and partition_report is not None:
            dump.collectives(run.modules[_last_per_device(run)], partition_report.collective_reasons)
        return run


def _last_per_device(run: PipelineRun) -> str:
    return [name for name, module in run.modules.items() if module.main.spmd_mesh is not None][-1]


# -- the passes of the default pipeline -----------------------------------------------------------
def propagate_shardings_reporting(module: Module, strategy="shardy") -> Reported:
    """propagate_shardings, keeping the analysis (provenance) for explain(); a callable strategy
    does the whole job itself and reports nothing."""
    strategy = resolve_propagation(strategy)
    if not isinstance(strategy, Strategy):
        return Reported(strategy(module), None)
    result = analyze_shardings(module, strategy)
    return Reported(apply_shardings(module, result), result)


def search_shardings_reporting(module: Module, request: SearchRequest, strategy="shardy") -> Reported:
    """The automatic sharding search (auto_sharding.py): AUTO arguments and results get the
    layouts it chose; the report keeps the alternatives for explain()."""
    searched, report = search_shardings(module, request, strategy, request.cost_model)
    return Reported(searched, report)


def partition_reporting(module: Module) -> Reported:
    report = partition_with_report(module)
    return Reported(report.module, report)


# NOTE: the optimisation passes on the per-device module, in the order they run; tests add a
# (broken) pass here to check that tools name it. XLA's value-changing arithmetic rewrites
# (divisions before CSE, fused multiply-adds after it, as XLA's simplifier and LLVM's
# contraction see the program) run here, per device, so they never change a sharding decision;
# the reference interpreter runs them on the traced program (CompiledProgram.reference).
OPTIMISATIONS = (
    PassSpec("rewrite_divisions", rewrite_divisions),
    PassSpec("eliminate_common_subexpressions", eliminate_common_subexpressions),
    PassSpec("contract_multiply_adds", contract_multiply_adds),
    PassSpec("merge_chained_collectives", merge_chained_collectives),
    PassSpec("eliminate_dead_code", eliminate_dead_code),
)


def default_pipeline(propagation="shardy", *, donated: frozenset[int] = frozenset(),
                     whole_mesh: bool = True, search: SearchRequest | None = None) -> Pipeline:
    """[search_shardings ->] propagate_shardings -> normalize_boundaries -> partition ->
    OPTIMISATIONS -> lower.

    ``propagation``: a registered strategy name, a Strategy or a callable ``Module -> Module``.
    ``donated`` and ``whole_mesh`` are lower's options (see compiler/lower.py). ``search`` (AUTO
    arguments or results) puts the automatic sharding search first.
    """
    searching = (PassSpec("search_shardings", search_shardings_reporting, GLOBAL,
                          {"request": search, "strategy": resolve_propagation(propagation)}),) if search else ()
    return Pipeline((
        *searching,
        PassSpec("propagate_shardings", propagate_shardings_reporting, GLOBAL,
                 {"strategy": resolve_propagation(propagation)}),
        PassSpec("normalize_boundaries", normalize_boundaries, GLOBAL),
        PassSpec("partition", partition_reporting, GLOBAL),
        *OPTIMISATIONS,
        PassSpec("lower", lower, LOWER, {"donated": frozenset(donated), "whole_mesh": whole_mesh}),
    ))


# -- what compilation produced --------------------------------------------------------------------
@dataclass
class CompiledProgram:
    """Everything compilation produced: the traced and propagated global modules, the per-device
    module (None when nothing is sharded), the analyses explain() and collectives() read, the
    Plan, and the pipeline that made them."""

    traced: Module
    propagated: Module
    partitioned: Module | None
    propagation: PropagationResult | None
    strategy_name: str
    collective_reasons: dict[int, str]
    decisions: list[Decision]
    plan: Plan | None = None
    pipeline: Pipeline | None = None
    search: SearchReport | None = None

    @property
    def reference(self) -> Module:
        """The traced program with XLA's arithmetic rewrites, which the compiled one computes:
        what the reference interpreter runs to check it."""
        return rewrite_as_xla(self.traced)

    @staticmethod
    def from_run(run: PipelineRun, pipeline: Pipeline) -> CompiledProgram:
        module = run.modules.get("search_shardings", run.input)
        if not module.meshes:
            return CompiledProgram(module, module, None, None, "none", {}, [], run.plan, pipeline)
        strategy = pipeline["propagate_shardings"].options["strategy"]
        propagated = run.modules.get("normalize_boundaries", run.modules.get("propagate_shardings", module))
        partition_report = run.reports["partition"]
        return CompiledProgram(module, propagated, run.modules[_last_per_device(run)],
                               run.reports.get("propagate_shardings"), strategy_label(strategy),
                               partition_report.collective_reasons, partition_report.decisions, run.plan, pipeline,
                               run.reports.get("search_shardings"))


def strategy_label(strategy) -> str:
    """A registered name as it is, a Strategy's ``name``, a callable's ``__name__``."""
    if isinstance(strategy, str):
        return strategy
    return getattr(strategy, "name", None) or getattr(strategy, "__name__", None) or "custom"


def compile_module(module: Module, *, propagation="shardy", name: str = "main",
                   donated: frozenset[int] = frozenset(), whole_mesh: bool = True,
                   plan: bool = True, search: SearchRequest | None = None) -> CompiledProgram:
    """Run ``default_pipeline`` on a traced module, dumping every pass under ``name`` when
    ``MESHJIT_DUMP_DIR`` is set. A module without a mesh runs on one device: the optimisations
    (dead-code elimination among them: an unused pure_callback is never called, as in JAX) and
    ``lower`` run on it as traced.
    ``plan=False`` stops before ``lower`` (tools that only read the modules)."""
    pipeline = default_pipeline(propagation, donated=donated, whole_mesh=whole_mesh, search=search)
    if not module.meshes:
        pipeline = Pipeline((*OPTIMISATIONS, *pipeline.of_stage(LOWER).passes))
    if not plan:
        pipeline = pipeline.of_stage(GLOBAL, PER_DEVICE)
    return CompiledProgram.from_run(pipeline.run(module, dump=Dumper(name)), pipeline)


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
