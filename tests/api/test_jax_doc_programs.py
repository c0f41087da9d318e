"""The programs of JAX's documentation pages in tests/api/jax_docs/ ("Explicit sharding",
"Introduction to parallel programming", "Distributed arrays and automatic parallelization",
"Manual parallelism with shard_map", with JAX 0.10's names) run with ``import meshjit as jax`` and print what
they print under JAX 0.10.2 (``NAME.out``, made once by ``jax_docs/generate.py``): the same
types, shardings, meshes, errors and values (floats to 1e-5)."""

from __future__ import annotations

import contextlib
import io
import math
import pathlib
import re
import runpy
import sys

import pytest

pytestmark = pytest.mark.usefixtures("restore_runtime_state")

HERE = pathlib.Path(__file__).parent / "jax_docs"
PROGRAMS = sorted(path.stem for path in HERE.glob("*.py") if path.stem != "generate")
_NUMBER = re.compile(r"-?\d+\.\d*(?:e[-+]?\d+)?|-?\d+(?:e[-+]?\d+)?")


def tokens(text: str) -> list:
    """Numbers as floats and everything else as text without whitespace (numpy's line wrapping
    and column widths depend on the digits printed)."""
    result, position = [], 0
    for match in _NUMBER.finditer(text):
        result.append("".join(text[position:match.start()].split()))
        result.append(float(match.group()))
        position = match.end()
    result.append("".join(text[position:].split()))
    return [token for token in result if token != ""]


def same(expected, actual) -> bool:
    if isinstance(expected, float) and isinstance(actual, float):
        return math.isclose(expected, actual, rel_tol=1e-5, abs_tol=1e-6)
    return expected == actual


def run_program(name: str) -> str:
    stdout = io.StringIO()
    argv = sys.argv
    sys.argv = [str(HERE / f"{name}.py"), "meshjit"]
    try:
        with contextlib.redirect_stdout(stdout):
            runpy.run_path(str(HERE / f"{name}.py"), run_name="__main__")
    finally:
        sys.argv = argv
    return stdout.getvalue()


@pytest.mark.parametrize("name", PROGRAMS)
def test_doc_program_prints_what_jax_prints(name):
    expected_lines = (HERE / f"{name}.out").read_text().splitlines()
    actual_lines = run_program(name).splitlines()
    expected, actual = tokens("\n".join(expected_lines)), tokens("\n".join(actual_lines))
    for index, (want, have) in enumerate(zip(expected, actual)):
        assert same(want, have), (f"{name}: token {index} differs: JAX printed {want!r}, meshjit {have!r}\n"
                                  f"JAX:\n" + "\n".join(expected_lines) + "\nmeshjit:\n" + "\n".join(actual_lines))
    assert len(expected) == len(actual), f"{name}: JAX printed {len(expected)} tokens, meshjit {len(actual)}"


def test_the_comparison_notices_a_different_sharding():
    assert not all(same(a, b) for a, b in zip(tokens("float32[8@X,4]"), tokens("float32[8@Y,4]")))
    assert all(same(a, b) for a, b in zip(tokens("[ 0.84147096  1.]"), tokens("[0.841471 1.0]")))
