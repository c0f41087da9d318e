"""The ``meshjit`` command line: ``meshjit demo`` and the tools built on the compiler."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings

from rich.console import Console


def run_demo(console: Console) -> int:
    """The whole pipeline on a Megatron-style MLP over a 2 x 4 mesh (meshjit/demo.py)."""
    from .demo import run_demo as run_pipeline_demo

    return run_pipeline_demo(console)


def _add_input_options(command: argparse.ArgumentParser, strategy: bool = True) -> None:
    """The options every IR-reading command shares: the file, ``--mesh`` and ``--strategy``."""
    from meshjit.compiler.propagation.propagate_shardings import strategy_names

    command.add_argument("file", help="an IR text file (.mjir), StableHLO as JAX prints it (.mlir), or - to read standard input")
    command.add_argument("--mesh", metavar="AXES", help="mesh @mesh as axis=size pairs, e.g. x=2,y=4: "
                         "added when the file defines no @mesh, replacing it otherwise")
    if strategy:
        # NOTE: the choices are read when the parser is built, so strategies registered with
        # register_strategy before main() runs are offered too.
        command.add_argument("--strategy", choices=strategy_names(), default="shardy",
                             help="a registered sharding propagation strategy (default: shardy)")


def _add_import_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                        help="import MODULE first (from the current directory or PYTHONPATH), e.g. one that "
                             "calls register_strategy, so --strategy offers its strategies; repeatable")


def import_user_modules(argv: list[str]) -> None:
    """Import the ``--import`` modules before the real parser is built, so the strategies they
    register are among ``--strategy``'s choices."""
    preliminary = argparse.ArgumentParser(add_help=False)
    _add_import_option(preliminary)
    known, _ = preliminary.parse_known_args(argv)
    if known.imports and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    for module in known.imports:
        importlib.import_module(module)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="meshjit", description="meshjit: sharded jit over a device mesh")
    _add_import_option(parser)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser("demo", help="run a sharded MLP through the whole pipeline: shardings, collectives, "
                                     "the per-device program, and its speed against numpy")
    opt = commands.add_parser("opt", help="run compiler passes on an IR file and print the result")
    _add_input_options(opt)
    opt.add_argument("--passes", metavar="NAMES", help="comma-separated passes to run, in order "
                     "(default: the whole pipeline; see the error for unknown names)")
    opt.add_argument("--dump-dir", metavar="DIR", help="write the module after every pass into DIR")
    explain = commands.add_parser("explain", help="where each value's sharding came from")
    _add_input_options(explain)
    explain.add_argument("value", nargs="?", help="one value to explain, e.g. %%3 or %%x")
    explain.add_argument("--search", action="store_true",
                         help="choose the layouts of arguments and results whose dims are all open ({?}, "
                              "as AUTO is written) with the automatic sharding search, and show its "
                              "top alternatives with their estimated time, bytes and memory")
    explain.add_argument("--memory-budget", type=int, metavar="BYTES", dest="memory_budget",
                         help="with --search: the per-device memory budget")
    explain.add_argument("--top", type=int, default=5, metavar="N",
                         help="with --search: how many alternatives to show (default: 5)")
    calibrate = commands.add_parser("calibrate", help="measure collective latency and bandwidth (and the "
                                    "flop rate) for the cost model; writes cost_model.json to the cache directory")
    calibrate.add_argument("--mpi", type=int, default=0, metavar="P",
                           help="also measure collectives across P processes under mpiexec (the model "
                                "then takes the slower of the two links)")
    calibrate.add_argument("--repeats", type=int, default=5, metavar="N",
                           help="timed runs per message size (median; default: 5)")
    calibrate.add_argument("--sizes", metavar="N,N,...", help="message sizes in f32 elements per device "
                           "(default: 256,4096,65536,262144,1048576)")
    calibrate.add_argument("--dry-run", action="store_true", help="print the fit without writing it")
    collectives = commands.add_parser("collectives", help="the collectives a module needs, with their bytes")
    _add_input_options(collectives)
    collectives.add_argument("--json", action="store_true", help="print the JSON summary instead of a table")
    check = commands.add_parser("check", help="compare the partitioned module with the unsharded one")
    _add_input_options(check)
    check.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default: 0)")
    draw = commands.add_parser("draw", help="draw the dataflow graph, values coloured by sharding")
    _add_input_options(draw)
    draw.add_argument("-o", "--output", required=True, metavar="OUT",
                      help="out.svg (through Graphviz when installed, else DOT next to it), out.dot, or - for DOT")
    draw.add_argument("--passes", metavar="NAMES",
                      help="passes to run before drawing (default: propagate_shardings for a global module)")
    return parser


def main(argv=None) -> int:
    """The console script: parse the command line and run one command; input errors exit 2."""
    from .cli_draw import run_draw
    from .cli_tools import ToolError, run_check, run_collectives, run_explain, run_opt

    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        import_user_modules(argv)
    except ImportError as error:
        print(f"meshjit: error: --import: {error}", file=sys.stderr)
        return 2
    parser = build_parser()
    arguments = parser.parse_args(argv)
    console = Console()
    from .cli_calibrate import run_calibrate

    commands = {"opt": run_opt, "explain": run_explain, "draw": run_draw, "check": run_check,
                "calibrate": run_calibrate,
                "collectives": lambda parsed: run_collectives(parsed, console)}
    if arguments.command == "demo":
        return run_demo(console)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            return commands[arguments.command](arguments)
        except ToolError as error:
            print(f"meshjit {arguments.command}: error: {error}", file=sys.stderr)
            return 2
        finally:
            _report_warnings(arguments.command, caught)


def _report_warnings(command: str, caught) -> None:
    """The compiler's warnings (full rematerialisation, ...) once each, as the tool's own."""
    for message in dict.fromkeys(str(warning.message) for warning in caught):
        print(f"meshjit {command}: warning: {message}", file=sys.stderr)
