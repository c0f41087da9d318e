"""``meshjit draw``: SVG through Graphviz when ``dot`` is on PATH (a stand-in script here), DOT
with a note when it is not, and collectives highlighted in per-device modules."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from meshjit.ir import parse_module

from meshjit import cli
from meshjit.cli_draw import COLLECTIVE_COLOUR, to_coloured_dot

GOLDEN_DIR = Path(__file__).parent.parent / "golden" / "tools"
CONFLICT = str(GOLDEN_DIR / "strategy_conflict.mjir")
posix_only = pytest.mark.skipif(os.name != "posix", reason="the stand-in dot is a shell script")


def fake_dot(directory: Path, body: str) -> None:
    """An executable ``dot`` in ``directory`` running the shell ``body``."""
    directory.mkdir()
    script = directory / "dot"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


@posix_only
def test_svg_through_graphviz_when_installed(tmp_path, monkeypatch, capsys):
    # NOTE: the stand-in writes its arguments and the DOT it read, so the call can be checked.
    fake_dot(tmp_path / "bin", 'echo "<svg> $1 $2" > "$3"; cat >> "$3"')
    monkeypatch.setenv("PATH", str(tmp_path / "bin") + os.pathsep + os.environ["PATH"])
    output = tmp_path / "graph.svg"
    assert cli.main(["draw", CONFLICT, "-o", str(output)]) == 0
    assert capsys.readouterr().out == f"wrote {output}\n"
    text = output.read_text()
    assert text.startswith("<svg> -Tsvg -o\ndigraph \"strategy_conflict\" {")


def test_without_graphviz_writes_dot_and_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert cli.main(["draw", CONFLICT, "-o", str(tmp_path / "graph.svg")]) == 0
    message = capsys.readouterr().out
    assert "Graphviz's `dot` is not installed, so wrote DOT to" in message
    assert not (tmp_path / "graph.svg").exists()
    assert (tmp_path / "graph.dot").read_text().startswith('digraph "strategy_conflict" {')


@posix_only
def test_graphviz_failure_is_an_error(tmp_path, monkeypatch, capsys):
    fake_dot(tmp_path / "bin", "echo 'syntax error in line 3' >&2; exit 1")
    monkeypatch.setenv("PATH", str(tmp_path / "bin") + os.pathsep + os.environ["PATH"])
    assert cli.main(["draw", CONFLICT, "-o", str(tmp_path / "graph.svg")]) == 2
    assert "Graphviz's dot failed to write" in capsys.readouterr().err


def test_dot_output_file(tmp_path, capsys):
    assert cli.main(["draw", CONFLICT, "-o", str(tmp_path / "graph.dot"), "--strategy", "gspmd"]) == 0
    text = (tmp_path / "graph.dot").read_text()
    assert '"@main:%0" [shape=ellipse, fillcolor="#ffffb3", label="%0: f32[8,16]\\n<@mesh, [{\\"y\\"}, {}]>"];' in text


def test_per_device_module_highlights_collectives(capsys):
    assert cli.main(["draw", str(GOLDEN_DIR / "per_device.mjir"), "-o", "-"]) == 0
    text = capsys.readouterr().out
    assert text.count(f'fillcolor="{COLLECTIVE_COLOUR}"') == 4
    assert 'label="all_reduce\\naxes = y"' in text


def test_drawing_without_passes_keeps_the_module_as_written():
    module = parse_module(Path(CONFLICT).read_text())
    text = to_coloured_dot(module, "as written")
    assert '"@main:%0" [shape=ellipse, fillcolor="white"' in text
    assert text == to_coloured_dot(module, "as written"), "the DOT text is deterministic"


def test_draw_of_the_partitioned_pipeline_output(capsys):
    passes = "propagate_shardings,normalize_boundaries,partition"
    assert cli.main(["draw", CONFLICT, "-o", "-", "--passes", passes]) == 0
    assert f'fillcolor="{COLLECTIVE_COLOUR}", label="all_gather' in capsys.readouterr().out
