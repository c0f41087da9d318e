"""Golden tests of sharding propagation.

Each ``tests/golden/propagate_shardings/*.mjir`` file starts with a RUN line naming the pass
and its options (``// RUN: propagate_shardings strategy=shardy``), then comments saying what
the case shows, the input module, a ``// CHECK:`` line and the expected printed module. The
expected text is a specification reviewed by hand against GSPMD/Shardy semantics, not a
snapshot: ``pytest --update-goldens`` rewrites it from the current output so that the change
can be reviewed with ``git diff``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from meshjit.compiler.pipeline import GLOBAL, PER_DEVICE, default_pipeline
from meshjit.ir import Module, parse_module, print_module, verify

GOLDEN_DIR = Path(__file__).parent.parent / "golden" / "propagate_shardings"
GOLDEN_FILES = sorted(GOLDEN_DIR.glob("*.mjir"))
CHECK_LINE = "// CHECK:"
RUN_LINE = re.compile(r"//\s*RUN:\s*(?P<pass_name>\w+)(?P<options>(\s+\w+=\S+)*)\s*$")

# NOTE: a RUN line may name any module pass of the pipeline, with that pass's options.
PASSES = default_pipeline().of_stage(GLOBAL, PER_DEVICE).names()


@dataclass(frozen=True)
class Golden:
    """One golden file: its pass and options, the text before ``// CHECK:`` (RUN line, comments
    and input module) and the expected output (None when the file has none yet)."""

    path: Path
    pass_name: str
    options: dict[str, str]
    head: str
    expected: str | None

    def run(self, module: Module) -> Module:
        pipeline = default_pipeline().with_pass_options(self.pass_name, **self.options)
        return pipeline.select([self.pass_name]).run(module).module


def read_golden(path: Path) -> Golden:
    text = path.read_text()
    first_line = text.splitlines()[0] if text else ""
    match = RUN_LINE.match(first_line)
    if match is None or match["pass_name"] not in PASSES:
        raise ValueError(f"{path.name}: the first line must be '// RUN: <pass> key=value ...' with "
                         f"a pass from {sorted(PASSES)}, got {first_line!r}")
    options = dict(option.split("=", 1) for option in match["options"].split())
    head, separator, expected = text.partition(CHECK_LINE + "\n")
    return Golden(path, match["pass_name"], options, head, expected if separator else None)


def write_expected(golden: Golden, output: str) -> None:
    golden.path.write_text(f"{golden.head.rstrip()}\n{CHECK_LINE}\n{output}")


def test_golden_directory_has_one_file_per_family():
    assert len(GOLDEN_FILES) >= 15, f"expected the propagation goldens in {GOLDEN_DIR}"


@pytest.mark.parametrize("path", GOLDEN_FILES, ids=lambda path: path.stem)
def test_propagation_matches_golden(path: Path, request):
    golden = read_golden(path)
    output = print_module(golden.run(parse_module(golden.head)))
    if request.config.getoption("--update-goldens"):
        write_expected(golden, output)
        return
    assert golden.expected is not None, (
        f"{path.name} has no '{CHECK_LINE}' section; run pytest --update-goldens")
    assert output == golden.expected, f"{path.name}: propagated module differs from the golden"


@pytest.mark.parametrize("path", GOLDEN_FILES, ids=lambda path: path.stem)
def test_golden_output_verifies_and_is_a_fixpoint(path: Path):
    """The expected module is valid IR, and propagating it again changes nothing."""
    golden = read_golden(path)
    assert golden.expected is not None, f"{path.name} has no // CHECK: section (run with --update-goldens)"
    expected = parse_module(golden.expected)
    verify(expected)
    assert print_module(golden.run(expected)) == golden.expected
