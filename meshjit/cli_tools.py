"""What the ``meshjit opt``, ``explain``, ``collectives`` and ``check`` commands do: read an IR
file, give it a mesh, run passes from the pipeline's one table, and print modules, provenance,
tables and check results (``draw`` lives in cli_draw.py).

Every error a user can cause (a missing file, malformed IR, an unknown pass, a module a pass
rejects) is a ToolError, which the command line prints without a traceback and exits 2.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table
from rich.text import Text

from meshjit.compiler.check import PartitioningMismatchError, check_program
from meshjit.compiler.analysis.collectives import collective_records, collective_summary, operand_text
from meshjit.compiler.propagation.explain import format_provenance
from meshjit.compiler.search.auto_sharding import SearchRequest, search_shardings
from meshjit.compiler.analysis.cost import load_cost_model
from meshjit.compiler.pipeline import GLOBAL, LOWER, PER_DEVICE, Dumper, Pipeline, compile_module, default_pipeline
from meshjit.ir import MeshAttr, Module, ParseError, VerifyError, parse_module, parse_stablehlo, print_module, verify
from meshjit.ir.dtypes import kind_of, to_numpy
from meshjit.ir.printer import format_mesh_def, name_values

_MESH_DEFINITION = re.compile(r'^\s*mesh\s+@(mesh|"mesh")\s*=', re.MULTILINE)
_MESH_ENTRY = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=([0-9]+)\Z")


class ToolError(Exception):
    """A problem with the command's input, reported as ``meshjit <command>: error: <message>``."""


# -- reading a module ---------------------------------------------------------------------------
def read_text(path: str) -> str:
    """The file's text; ``-`` reads standard input."""
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ToolError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ToolError(f"{path}: cannot read the file: {error}") from None


def parse_mesh_option(text: str) -> MeshAttr:
    """``x=2,y=4`` as a mesh attribute."""
    axes = []
    for entry in text.split(","):
        match = _MESH_ENTRY.match(entry.strip())
        if match is None:
            raise ToolError(f"--mesh expects axis=size pairs such as x=2,y=4, got {text!r}")
        axes.append((match[1], int(match[2])))
    try:
        return MeshAttr(tuple(axes))
    except ValueError as error:
        raise ToolError(f"--mesh {text}: {error}") from None


def _parse(text: str, path: str, prefix: str = "") -> Module:
    """Parse ``prefix + text``, reporting errors at their place in ``text`` (``prefix`` is put
    before the first line, so only columns on line 1 move)."""
    try:
        return parse_module(prefix + text)
    except ParseError as error:
        column = max(error.column - len(prefix), 1) if error.line == 1 else error.column
        lines = text.splitlines()
        message = f"{path}:{error.line}:{column}: {error.message}"
        if "unknown mesh @mesh" in error.message and not prefix:
            message += " (give one with --mesh axis=size,...)"
        if 0 < error.line <= len(lines):
            message += f"\n  {lines[error.line - 1]}\n  {' ' * (column - 1)}^"
        raise ToolError(message) from None


def is_stablehlo(path: str, text: str) -> bool:
    """A ``.mlir`` file, or text that starts like MLIR (``module @...`` or ``func.func``)."""
    head = text.lstrip()
    return path.endswith(".mlir") or head.startswith(("module @", "module attributes", "module {", "func.func"))


def _parse_stablehlo(text: str, path: str) -> Module:
    try:
        return parse_stablehlo(text, file_stem(path) + ".mlir")
    except ParseError as error:
        message = f"{path}:{error.line}:{error.column}: {error.message}"
        if error.source_line is not None:
            message += f"\n  {error.source_line}\n  {' ' * (error.column - 1)}^"
        raise ToolError(message) from None


def _override_mesh(module: Module, mesh: MeshAttr) -> Module:
    meshes = tuple((name, mesh if name == "mesh" else existing) for name, existing in module.meshes)
    return replace(module, meshes=meshes)


def load_module(path: str, mesh_option: str | None = None) -> Module:
    """Read, parse and verify the module at ``path`` (meshjit IR, or StableHLO as JAX prints it
    when the file ends in ``.mlir`` or starts like MLIR). ``mesh_option`` (``x=2,y=4``) becomes mesh
    ``@mesh``: added when the file defines none (so the file may use ``@mesh`` without defining
    it), replacing the file's own ``@mesh`` otherwise."""
    text = read_text(path)
    if is_stablehlo(path, text):
        module = _parse_stablehlo(text, path)
        if mesh_option is not None:
            module = _override_mesh(module, parse_mesh_option(mesh_option))
    elif mesh_option is None:
        module = _parse(text, path)
    else:
        mesh = parse_mesh_option(mesh_option)
        if _MESH_DEFINITION.search(text):
            module = _override_mesh(_parse(text, path), mesh)
        else:
            module = _parse(text, path, format_mesh_def("mesh", mesh) + " ")
    try:
        verify(module)
    except VerifyError as error:
        raise ToolError(f"{path}: invalid module: {error}") from None
    return module


def is_partitioned(module: Module) -> bool:
    return module.main.spmd_mesh is not None


def file_stem(path: str) -> str:
    """A name for dumps and titles: the file's stem, ``stdin`` for ``-``."""
    return "stdin" if path == "-" else Path(path).stem


# -- running passes ---------------------------------------------------------------------------
def module_passes(strategy) -> Pipeline:
    """The default pipeline's passes that produce modules (all but ``lower``), for ``strategy``."""
    return default_pipeline(strategy).of_stage(GLOBAL, PER_DEVICE)


def select_passes(text: str | None, module: Module, strategy) -> Pipeline:
    """The passes of ``--passes`` (comma separated), checked against the pipeline. Without the
    option: the whole pipeline for a global module, the per-device passes for a partitioned one."""
    passes = module_passes(strategy)
    if text is None:
        return passes.of_stage(PER_DEVICE) if is_partitioned(module) else passes
    names = [name.strip() for name in text.split(",") if name.strip()]
    for name in names:
        if name in default_pipeline().of_stage(LOWER).names():
            raise ToolError(f"{name} turns the per-device module into the executable Plan, which is not a "
                            f"module to print; the passes are: {', '.join(passes.names())}")
        if name not in passes.names():
            raise ToolError(f"unknown pass {name!r}; the passes are: {', '.join(passes.names())}")
    if is_partitioned(module):
        misplaced = [name for name in names if passes[name].stage == GLOBAL]
        if misplaced:
            raise ToolError(f"the module is already partitioned (spmd_mesh = @{module.main.spmd_mesh}), but "
                            f"{', '.join(misplaced)} runs on global modules; per-device passes are: "
                            f"{', '.join(passes.of_stage(PER_DEVICE).names())}")
    return passes.select(names)


class _ProgressDumper(Dumper):
    """A Dumper that also remembers which passes finished, so an error names the pass that
    failed (the one after the last finished)."""

    def __init__(self, name: str, directory: str | None, enabled: bool):
        super().__init__(name, directory)
        if not enabled:
            self.directory = None
        self.finished: list[str] = []

    def __call__(self, pass_name: str, module: Module) -> None:
        self.finished.append(pass_name)
        super().__call__(pass_name, module)


def run_passes(module: Module, passes: Pipeline, dump_name: str = "main", dump_dir: str | None = None,
               dump: bool = False) -> Module:
    """Run ``passes`` in order; with ``dump`` the module is written after each pass (into
    ``dump_dir``, else ``MESHJIT_DUMP_DIR``) under ``dump_name``."""
    dumper = _ProgressDumper(dump_name, dump_dir, dump)
    try:
        return passes.run(module, dump=dumper, input_name="input").module
    except (ValueError, LookupError) as error:
        failed = passes.names()[len(dumper.finished) - 1]
        raise ToolError(f"pass {failed} rejected the module: {error}") from None


def run_opt(arguments) -> int:
    """``meshjit opt``: print the module after the selected passes."""
    module = load_module(arguments.file, arguments.mesh)
    passes = select_passes(arguments.passes, module, arguments.strategy)
    # NOTE: without --dump-dir the Dumper falls back to MESHJIT_DUMP_DIR, as jit does.
    module = run_passes(module, passes, file_stem(arguments.file), arguments.dump_dir, dump=True)
    sys.stdout.write(print_module(module))
    return 0


# -- explain ------------------------------------------------------------------------------------
def _paragraphs(text: str) -> tuple[list[str], dict[str, list[str]]]:
    """The header lines of format_provenance's text and each value's paragraph by value name."""
    header, paragraphs, current = [], {}, None
    for line in text.splitlines():
        if line.startswith("%"):
            current = paragraphs.setdefault(line.split()[0], [])
        (header if current is None else current).append(line)
    return header, paragraphs


def run_explain(arguments) -> int:
    """``meshjit explain``: where every value's sharding (or one value's) came from."""
    module = load_module(arguments.file, arguments.mesh)
    if is_partitioned(module):
        raise ToolError(f"{arguments.file}: the module is already partitioned; explain reads a global module "
                        f"(the traced or propagated dump)")
    search_text = ""
    if getattr(arguments, "search", False):
        module, search_text = _search_open_boundaries(module, arguments)
    propagation = module_passes(arguments.strategy).select(["propagate_shardings"])
    try:
        result = propagation.run(module).reports["propagate_shardings"]
    except (ValueError, LookupError) as error:
        raise ToolError(f"propagation rejected the module: {error}") from None
    text = search_text + format_provenance(module, result, arguments.strategy)
    if arguments.value is None:
        sys.stdout.write(text)
        return 0
    value = arguments.value if arguments.value.startswith("%") else f"%{arguments.value}"
    header, paragraphs = _paragraphs(text)
    if value not in paragraphs:
        known = ", ".join(name_values(module.main).values())
        raise ToolError(f"no value {value} in @{module.main.name}; its values are {known}")
    sys.stdout.write("\n".join(header + paragraphs[value]) + "\n")
    return 0


def _search_open_boundaries(module: Module, arguments) -> tuple[Module, str]:
    """``explain --search``: the arguments and results whose dims are all open (``{?}``, how
    an AUTO layout is written in the IR) are chosen by the automatic sharding search; returns
    the module with the chosen layouts and the search's table."""
    func = module.main

    def is_auto(sharding) -> bool:
        return sharding is not None and bool(sharding.dims) and all(
            not dim.is_closed and not dim.axes for dim in sharding.dims)

    auto_args = tuple(index for index, sharding in enumerate(func.arg_shardings) if is_auto(sharding))
    auto_results = tuple(index for index, sharding in enumerate(func.result_shardings) if is_auto(sharding))
    if not auto_args and not auto_results:
        raise ToolError(f"{arguments.file}: --search needs arguments or results whose dims are all open, "
                        f"e.g. {{sharding = <@mesh, [{{?}}, {{?}}]>}} (how AUTO is written in the IR)")
    mesh_names = {sharding.mesh_name for sharding in list(func.arg_shardings) + list(func.result_shardings)
                  if is_auto(sharding)}
    if len(mesh_names) != 1:
        raise ToolError(f"--search needs every open layout on one mesh, got {sorted(mesh_names)}")
    request = SearchRequest(auto_args, auto_results, mesh_names.pop(),
                            memory_budget_bytes=arguments.memory_budget, cost_model=load_cost_model())
    try:
        searched, report = search_shardings(module, request, arguments.strategy, request.cost_model)
    except (ValueError, LookupError) as error:
        raise ToolError(f"the automatic sharding search failed: {error}") from None
    return searched, report.format(top=arguments.top) + "\n"


# -- collectives --------------------------------------------------------------------------------
def module_collectives(module: Module, strategy: str) -> tuple[Module | None, list]:
    """The per-device module and its collective records: the module itself when partitioned,
    else the pipeline's result (None when there is no mesh to partition over)."""
    if is_partitioned(module):
        reasons = {op.results[0].id: "-" for op in module.main.body.walk() if op.results}
        return module, collective_records(module, reasons)
    try:
        program = compile_module(module, propagation=strategy, plan=False)
    except (ValueError, LookupError) as error:
        raise ToolError(f"the pipeline rejected the module: {error}") from None
    if program.partitioned is None:
        return None, []
    return program.partitioned, collective_records(program.partitioned, program.collective_reasons)


def collectives_table(records: list) -> Table:
    """One row per collective, the total bytes in the footer; cells are plain text, not markup."""
    table = Table(show_footer=True)
    table.add_column("#", justify="right")
    table.add_column("kind", footer="total")
    table.add_column("axes")
    table.add_column("operand (per device)")
    total = sum(record.total_bytes for record in records)
    table.add_column("bytes/device", justify="right", footer=f"{total:,}")
    table.add_column("reason")
    for index, record in enumerate(records):
        steps = "" if record.trips == 1 else f" x {'?' if record.trips is None else record.trips} steps"
        cells = (str(index), record.kind, ",".join(record.axes), operand_text(record), f"{record.bytes:,}{steps}",
                 record.reason)
        table.add_row(*(Text(cell) for cell in cells))
    return table


def run_collectives(arguments, console: Console) -> int:
    """``meshjit collectives``: a table (or JSON) of the collectives the module needs."""
    module = load_module(arguments.file, arguments.mesh)
    partitioned, records = module_collectives(module, arguments.strategy)
    if arguments.json:
        summary = collective_summary(partitioned, records, module.main.name) if partitioned else {
            "function": module.main.name, "mesh": {}, "count": 0, "total_bytes_per_device": 0, "collectives": []}
        sys.stdout.write(json.dumps(summary, indent=2) + "\n")
        return 0
    if partitioned is None:
        console.print("no mesh: the module runs unpartitioned and needs no collectives", markup=False)
        return 0
    mesh = partitioned.mesh(partitioned.main.spmd_mesh)
    axes = ", ".join(f"{name}={size}" for name, size in mesh.axes)
    source = ("already partitioned; IR text keeps no reasons" if is_partitioned(module)
              else f"propagation: {arguments.strategy}")
    title = f"collectives of @{module.main.name} over mesh [{axes}] ({source})"
    if not records:
        console.print(f"{title}: none", markup=False)
        return 0
    console.print(Text(title))
    console.print(collectives_table(records))
    return 0


# -- check --------------------------------------------------------------------------------------
def random_arguments(module: Module, seed: int) -> list:
    """Random global arguments for the entry function: normal floats, small ints, fair bools."""
    generator = np.random.default_rng(seed)
    arguments = []
    for value in module.main.args:
        dtype = to_numpy(value.type.dtype)
        shape = value.type.shape
        if kind_of(dtype) == "f":
            arguments.append(generator.standard_normal(shape).astype(dtype))
        elif dtype.kind == "b":
            arguments.append(generator.random(shape) < 0.5)
        else:
            arguments.append(generator.integers(-8, 8, shape).astype(dtype))
    return arguments


def run_check(arguments) -> int:
    """``meshjit check``: partition the module and compare it with the unsharded program on
    random inputs, op by op; exit 1 naming the first op whose per-device values differ."""
    module = load_module(arguments.file, arguments.mesh)
    if is_partitioned(module):
        raise ToolError(f"{arguments.file}: the module is already partitioned; check reads a global module")
    try:
        program = compile_module(module, propagation=arguments.strategy, plan=False)
    except (ValueError, LookupError) as error:
        raise ToolError(f"the pipeline rejected the module: {error}") from None
    if program.partitioned is None:
        print("no mesh: the module runs unpartitioned, so there is nothing to check")
        return 0
    try:
        check_program(module, program.propagated, random_arguments(module, arguments.seed))
    except PartitioningMismatchError as error:
        print(error)
        return 1
    print(f"ok: every value of the per-device program matches the unsharded program "
          f"(random inputs, seed {arguments.seed})")
    return 0
