"""Golden tests of the ``meshjit`` tools on ``tests/golden/tools/*.mjir``.

Each input file starts with RUN lines, one per command line to run on it:
``// RUN <label>: meshjit <command> %s <options>`` (``%s`` is the file; ``-`` feeds the file on
standard input). The expected standard output of that run is ``<stem>.<label>.out`` next to
the input. The expected text is reviewed by hand; ``pytest --update-goldens`` rewrites it from
the current output so that a change can be reviewed with ``git diff``.
"""

from __future__ import annotations

import io
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from meshjit import cli

GOLDEN_DIR = Path(__file__).parent.parent / "golden" / "tools"
RUN_LINE = re.compile(r"//\s*RUN\s+(?P<label>[\w-]+):\s*meshjit\s+(?P<command>.+?)\s*$")
# NOTE: rich lays tables out for the terminal width; goldens are written at this one.
COLUMNS = "110"


@dataclass(frozen=True)
class Run:
    """One RUN line of a golden input: its label, its arguments, and the expected output file."""

    source: Path
    label: str
    arguments: tuple[str, ...]

    @property
    def expected_path(self) -> Path:
        return self.source.with_name(f"{self.source.stem}.{self.label}.out")

    @property
    def name(self) -> str:
        return f"{self.source.stem}.{self.label}"


def read_runs(path: Path) -> list[Run]:
    runs = []
    for line in path.read_text().splitlines():
        match = RUN_LINE.match(line)
        if match:
            arguments = tuple(str(path) if word == "%s" else word for word in shlex.split(match["command"]))
            runs.append(Run(path, match["label"], arguments))
    return runs


RUNS = [run for path in sorted(GOLDEN_DIR.glob("*.mjir")) for run in read_runs(path)]


def run_cli(run: Run, monkeypatch, capsys) -> str:
    monkeypatch.setenv("COLUMNS", COLUMNS)
    monkeypatch.delenv("MESHJIT_DUMP_DIR", raising=False)
    if "-" in run.arguments:
        monkeypatch.setattr(sys, "stdin", io.StringIO(run.source.read_text()))
    status = cli.main(list(run.arguments))
    captured = capsys.readouterr()
    assert status == 0, f"{run.name} exited {status}: {captured.err}"
    return captured.out


def test_every_golden_input_has_runs_and_every_output_has_a_run():
    inputs = sorted(GOLDEN_DIR.glob("*.mjir"))
    assert len(inputs) >= 4
    assert all(read_runs(path) for path in inputs), "every golden input needs RUN lines"
    expected = {run.expected_path for run in RUNS}
    assert set(GOLDEN_DIR.glob("*.out")) <= expected, "an .out file has no RUN line"
    assert {run.arguments[0] for run in RUNS} >= {"opt", "explain", "collectives", "draw", "check"}


@pytest.mark.parametrize("run", RUNS, ids=lambda run: run.name)
def test_tool_output_matches_golden(run: Run, monkeypatch, capsys, request):
    output = run_cli(run, monkeypatch, capsys)
    if request.config.getoption("--update-goldens"):
        run.expected_path.write_text(output)
        return
    assert run.expected_path.exists(), f"{run.expected_path.name} is missing; run pytest --update-goldens"
    assert output == run.expected_path.read_text(), f"{run.name}: output differs from {run.expected_path.name}"
