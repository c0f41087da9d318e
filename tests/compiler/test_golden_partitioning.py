"""Golden tests of partitioning and of each optimisation on per-device modules.

Each ``tests/golden/<pass>/*.mjir`` file (``partition``, ``eliminate_common_subexpressions``,
``merge_chained_collectives``, ``eliminate_dead_code``) starts with ``// RUN: <pass>``, then
comments saying what the case shows, the input module, a ``// CHECK:`` line and the expected
printed module, reviewed by hand. ``pytest --update-goldens`` rewrites the expected part from
the current output for review with ``git diff``. A partition golden's input is a propagated
module (every value has a sharding); its expected output must also compute what the input does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from meshjit.compiler.optimize.combine_collectives import merge_chained_collectives
from meshjit.compiler.optimize.cse import eliminate_common_subexpressions
from meshjit.compiler.optimize.dce import eliminate_dead_code
from meshjit.compiler.optimize.xla_arithmetic import contract_multiply_adds, rewrite_divisions
from meshjit.compiler.partitioning.partition import partition
from meshjit.ir import Module, interpret, parse_module, print_module, verify
from meshjit.ir.layout import shard_array, unshard_array
from partition_cases import normal

GOLDEN_ROOT = Path(__file__).parent.parent / "golden"
PASSES = {
    "partition": partition,
    "eliminate_common_subexpressions": eliminate_common_subexpressions,
    "merge_chained_collectives": merge_chained_collectives,
    "eliminate_dead_code": eliminate_dead_code,
    "rewrite_divisions": rewrite_divisions,
    "contract_multiply_adds": contract_multiply_adds,
}
OPTIMISATIONS = sorted(set(PASSES) - {"partition"})
GOLDEN_FILES = sorted(path for name in PASSES for path in (GOLDEN_ROOT / name).glob("*.mjir"))
CHECK_LINE = "// CHECK:"
RUN_LINE = re.compile(r"//\s*RUN:\s*(?P<pass_name>\w+)\s*$")


@dataclass(frozen=True)
class Golden:
    """One golden file: its pass, the text before ``// CHECK:`` (RUN line, comments and input
    module) and the expected output (None when the file has none yet)."""

    path: Path
    pass_name: str
    head: str
    expected: str | None

    def run(self, module: Module) -> Module:
        return PASSES[self.pass_name](module)


def read_golden(path: Path) -> Golden:
    text = path.read_text()
    match = RUN_LINE.match(text.splitlines()[0] if text else "")
    if match is None or match["pass_name"] != path.parent.name:
        raise ValueError(f"{path}: the first line must be '// RUN: {path.parent.name}'")
    head, separator, expected = text.partition(CHECK_LINE + "\n")
    return Golden(path, match["pass_name"], head, expected if separator else None)


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def test_every_pass_has_goldens():
    assert sorted({path.parent.name for path in GOLDEN_FILES}) == sorted(PASSES)


@pytest.mark.parametrize("path", GOLDEN_FILES, ids=_id)
def test_pass_matches_golden(path: Path, request):
    golden = read_golden(path)
    output = print_module(golden.run(parse_module(golden.head)))
    if request.config.getoption("--update-goldens"):
        path.write_text(f"{golden.head.rstrip()}\n{CHECK_LINE}\n{output}")
        return
    assert golden.expected is not None, f"{path.name} has no '{CHECK_LINE}' section; run pytest --update-goldens"
    assert output == golden.expected, f"{_id(path)}: the pass's output differs from the golden"


@pytest.mark.parametrize("path", GOLDEN_FILES, ids=_id)
def test_golden_output_verifies_and_round_trips(path: Path):
    golden = read_golden(path)
    assert golden.expected is not None, f"{path.name} has no // CHECK: section (run with --update-goldens)"
    expected = parse_module(golden.expected)
    verify(expected)
    assert print_module(expected) == golden.expected


@pytest.mark.parametrize("path", [path for path in GOLDEN_FILES if path.parent.name in OPTIMISATIONS], ids=_id)
def test_optimisation_golden_is_a_fixpoint_and_keeps_the_results(path: Path):
    """Running the pass again changes nothing, and input and output compute the same."""
    golden = read_golden(path)
    before, after = parse_module(golden.head), parse_module(golden.expected)
    assert print_module(golden.run(after)) == golden.expected
    _assert_same_results(before, after, per_device=True)


@pytest.mark.parametrize("path", [path for path in GOLDEN_FILES if path.parent.name == "partition"], ids=_id)
def test_partition_golden_computes_the_global_program(path: Path):
    golden = read_golden(path)
    _assert_same_results(parse_module(golden.head), parse_module(golden.expected), per_device=False)


def _assert_same_results(before: Module, after: Module, *, per_device: bool) -> None:
    """Interpret both on the same random inputs: per-device modules on stacked shards, or the
    global ``before`` against the per-device ``after``."""
    rng = np.random.default_rng(0)
    mesh = after.mesh(after.main.spmd_mesh)
    lead = (mesh.size,) if per_device else ()
    arrays = [normal(rng, lead + arg.type.shape, arg.type.dtype) for arg in before.main.args]
    if per_device:
        for got, want in zip(interpret(after, *arrays), interpret(before, *arrays)):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        return
    stacked = [shard_array(array, sharding, mesh) for array, sharding in zip(arrays, after.main.arg_shardings)]
    outputs = interpret(after, *stacked)
    for output, sharding, value, want in zip(outputs, after.main.result_shardings, before.main.returns,
                                             interpret(before, *arrays)):
        np.testing.assert_allclose(unshard_array(output, sharding, mesh, value.type.shape), want,
                                   rtol=1e-4, atol=1e-4)
