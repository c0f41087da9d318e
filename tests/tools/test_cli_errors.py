"""The tools' error paths: a clear one-paragraph message on stderr, exit status 2, no traceback."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from meshjit import cli

GOLDEN_DIR = Path(__file__).parent.parent / "golden" / "tools"
MLP = str(GOLDEN_DIR / "megatron_mlp.mjir")
PER_DEVICE = str(GOLDEN_DIR / "per_device.mjir")


def fails(arguments: list[str], capsys) -> str:
    """Run the command in-process; it must exit 2 and print only an error line (no traceback)."""
    assert cli.main(arguments) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "Traceback" not in captured.err
    assert captured.err.startswith(f"meshjit {arguments[0]}: error: ")
    return captured.err


def write(tmp_path: Path, text: str, name: str = "module.mjir") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_missing_file(capsys):
    error = fails(["opt", "no/such/file.mjir"], capsys)
    assert "no/such/file.mjir: no such file" in error


def test_parse_error_names_line_and_column_and_shows_the_line(tmp_path, capsys):
    path = write(tmp_path, "func @main(%a: f32[8]) -> f32[8] {\n  %0 = add(%a, %b) : f32[8]\n  return %0\n}\n")
    error = fails(["opt", path], capsys)
    assert f"{path}:2:16: undefined value %b" in error
    assert "  %0 = add(%a, %b) : f32[8]\n" in error and error.rstrip().endswith("^")


def test_parse_error_on_the_first_line_keeps_its_column_with_an_added_mesh(tmp_path, capsys):
    path = write(tmp_path, "func @main(%a: f32[8]) -> f32[8] { %0 = add(%a, %b) : f32[8]\n  return %0\n}\n")
    assert f"{path}:1:49: undefined value %b" in fails(["opt", path, "--mesh", "x=2"], capsys)


def test_undefined_mesh_suggests_the_mesh_option(tmp_path, capsys):
    path = write(tmp_path, 'func @main(%a: f32[8] {sharding = <@mesh, [{"x"}]>}) -> f32[8] {\n  return %a\n}\n')
    assert "give one with --mesh" in fails(["opt", path], capsys)


def test_invalid_module_is_reported_by_the_verifier(tmp_path, capsys):
    path = write(tmp_path, "func @main(%a: f32[8]) -> f32[4] {\n  %0 = add(%a, %a) : f32[4]\n  return %0\n}\n")
    error = fails(["collectives", path], capsys)
    assert "invalid module" in error and "the shape rule gives f32[8]" in error


def test_unknown_pass_lists_the_passes(capsys):
    error = fails(["opt", MLP, "--passes", "propagate_shardings,partitionn"], capsys)
    assert "unknown pass 'partitionn'" in error
    assert "propagate_shardings, normalize_boundaries, partition, " in error


def test_global_pass_on_a_partitioned_module(capsys):
    error = fails(["opt", PER_DEVICE, "--passes", "partition"], capsys)
    assert "already partitioned" in error and "eliminate_dead_code" in error


def test_explain_refuses_a_partitioned_module(capsys):
    assert "already partitioned" in fails(["explain", PER_DEVICE], capsys)


def test_bad_mesh_option(capsys):
    assert "axis=size pairs such as x=2,y=4, got 'x2'" in fails(["opt", MLP, "--mesh", "x2"], capsys)
    assert "mesh axis names must be unique" in fails(["opt", MLP, "--mesh", "x=2,x=4"], capsys)


def test_mesh_option_whose_axes_do_not_fit_the_shardings(capsys):
    error = fails(["opt", MLP, "--mesh", "x=2"], capsys)
    assert '"data" is not an axis of the mesh (x)' in error


def test_a_pass_rejecting_the_module(tmp_path, capsys):
    path = write(tmp_path, "func @main(%a: f32[8]) -> f32[8] {\n  %0 = exp(%a) : f32[8]\n  return %0\n}\n")
    error = fails(["opt", path, "--passes", "partition"], capsys)
    assert "pass partition rejected the module" in error and "exactly one mesh" in error


def test_explain_unknown_value_lists_the_values(capsys):
    error = fails(["explain", MLP, "%9"], capsys)
    assert "no value %9 in @main; its values are %x, %w1, %w2, %0, %1, %2" in error


def test_draw_refuses_other_formats(capsys):
    assert "must end in .svg or .dot" in fails(["draw", MLP, "-o", "graph.png"], capsys)


def test_argparse_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as stopped:
        cli.main(["opt", MLP, "--strategy", "fastest"])
    assert stopped.value.code == 2
    assert "invalid choice: 'fastest'" in capsys.readouterr().err


def test_stdin_parse_error_names_stdin(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO("func @main(\n"))
    assert fails(["opt", "-"], capsys).startswith("meshjit opt: error: -:2:1: ")


def test_console_script_error_exits_2_without_traceback(tmp_path):
    script = Path(sys.executable).with_name("meshjit")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "meshjit"]
    result = subprocess.run(command + ["opt", str(tmp_path / "missing.mjir")], capture_output=True, text=True,
                            env=dict(os.environ), timeout=120, check=False)
    assert result.returncode == 2
    assert result.stderr.strip() == f"meshjit opt: error: {tmp_path / 'missing.mjir'}: no such file"


def test_check_refuses_a_partitioned_module(capsys):
    assert "check reads a global module" in fails(["check", PER_DEVICE], capsys)


def test_check_of_a_module_without_a_mesh(tmp_path, capsys):
    path = write(tmp_path, "func @main(%a: f32[8]) -> f32[8] {\n  %0 = exp(%a) : f32[8]\n  return %0\n}\n")
    assert cli.main(["check", path]) == 0
    assert capsys.readouterr().out == "no mesh: the module runs unpartitioned, so there is nothing to check\n"


def test_check_names_the_first_wrong_op_and_exits_1(tmp_path, monkeypatch, capsys):
    from meshjit.compiler.partitioning.spmd_builder import SpmdBuilder

    monkeypatch.setattr(SpmdBuilder, "shard_offset", lambda builder, axes, local_size: builder.scalar(0, "i32"))
    path = write(tmp_path, 'mesh @mesh = <["x"=4]>\nfunc @main(%a: i32[8] {sharding = <@mesh, [{"x"}]>}) -> i32[8] {\n'
                           '  %0 = iota() {dimension = 0, dtype = "i32", shape = [8]} : i32[8]\n'
                           '  %1 = add(%a, %0) : i32[8]\n  return %1\n}\n')
    assert cli.main(["check", path, "--seed", "1"]) == 1
    output = capsys.readouterr().out
    assert "first op whose per-device values differ: %0 = iota()" in output
    assert "device 1 (x=1): expected 2, got 0 at index (0,)" in output


def test_compiler_warnings_are_printed_once_as_the_tools_own(capsys):
    conflict = str(GOLDEN_DIR / "strategy_conflict.mjir")
    assert cli.main(["check", conflict]) == 0
    expected = ("meshjit check: warning: involuntary full rematerialization: operand 1 of add: dim 0 of a "
                '[8, 16] value is gathered whole to go from <@mesh, [{"y"}, {}]> to <@mesh, [{"x"}, {}]>')
    assert capsys.readouterr().err.splitlines() == [expected]
