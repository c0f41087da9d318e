"""Compare a page's cell outputs under meshjit with JAX's (``PAGE.expected.json``): the same
text with numbers equal to 1e-5 (test_jax_doc_programs' tokens). Cells that fail under JAX
for want of a module (matplotlib, torch, ...) are not counted. ``python compare.py`` runs every
page under meshjit and prints the table of matching cells."""

from __future__ import annotations

import json
import math
import pathlib
import re
import subprocess
import sys

HERE = pathlib.Path(__file__).parent
PAGES = sorted(path.name.removesuffix(".cells.json") for path in HERE.glob("*.cells.json"))
_NUMBER = re.compile(r"-?\d+\.\d*(?:e[-+]?\d+)?|-?\d+(?:e[-+]?\d+)?")
_MISSING_MODULE = "EXCEPTION: ModuleNotFoundError"


_ADDRESS = re.compile(r"0x[0-9a-f]+")


def tokens(text: str) -> list:
    """Numbers as floats and everything else as text without whitespace; object addresses
    (``at 0x7f...``, different in every run) are one token."""
    text = _ADDRESS.sub("ADDRESS", text)
    result, position = [], 0
    for match in _NUMBER.finditer(text):
        result.append("".join(text[position:match.start()].split()))
        result.append(float(match.group()))
        position = match.end()
    result.append("".join(text[position:].split()))
    return [token for token in result if token != ""]


def same_output(expected: str, actual: str) -> bool:
    want, have = tokens(expected), tokens(actual)
    if len(want) != len(have):
        return False
    for a, b in zip(want, have):
        if isinstance(a, float) and isinstance(b, float):
            if not math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-6):
                return False
        elif a != b:
            return False
    return True


def run_page(page: str, python: str = sys.executable, timeout: float = 900) -> list[dict]:
    completed = subprocess.run([python, str(HERE / "run_cells.py"), page, "meshjit"], capture_output=True,
                               text=True, timeout=timeout)
    if completed.returncode:
        raise RuntimeError(f"{page}: run_cells failed:\n{completed.stderr[-3000:]}")
    return json.loads(completed.stdout)


def score(page: str, outputs: list[dict]) -> tuple[list[int], list[int]]:
    """(the counted cells, the counted cells whose output matches JAX's)."""
    expected = json.loads((HERE / f"{page}.expected.json").read_text())
    counted = [index for index, cell in enumerate(expected) if _MISSING_MODULE not in cell["output"]]
    matching = [index for index in counted if same_output(expected[index]["output"], outputs[index]["output"])]
    return counted, matching


def main(python: str = sys.executable, *, pages=None, scorer=None, runner=None) -> None:
    """Print the matching cells per page and the total (the sharding pages' scorer passes its
    own pages, scoring and runner)."""
    pages, scorer, runner = pages or PAGES, scorer or score, runner or run_page
    total_counted = total_matching = 0
    for page in pages:
        counted, matching = scorer(page, runner(page, python))
        total_counted += len(counted)
        total_matching += len(matching)
        print(f"{page:28s} {len(matching):3d} / {len(counted):3d}  missing: {sorted(set(counted) - set(matching))}")
    print(f"{'total':28s} {total_matching:3d} / {total_counted:3d} = {100 * total_matching / total_counted:.1f}%")


if __name__ == "__main__":
    main(*sys.argv[1:])
