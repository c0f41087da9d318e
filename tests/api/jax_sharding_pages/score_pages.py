"""Compare the sharding pages' cell outputs under meshjit with JAX's (``PAGE.expected.json``): the
same text with numbers equal to 1e-5 (the tutorials' comparison, tests/api/jax_tutorials/compare.py).
Only the cells that run under JAX without an exception are counted (a doctest that needs names
from its module, a figure without its data). ``python score_pages.py`` runs every page under meshjit
and prints the matching cells per page and the percentage over all of them."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE))
from run_page_cells import _tutorials_module  # noqa: E402

tutorials_compare = _tutorials_module("compare")
same_output = tutorials_compare.same_output

PAGES = sorted(path.name.removesuffix(".cells.json") for path in HERE.glob("*.cells.json"))


def run_page(page: str, python: str = sys.executable, timeout: float = 900) -> list[dict]:
    completed = subprocess.run([python, str(HERE / "run_page_cells.py"), page, "meshjit"], capture_output=True,
                               text=True, timeout=timeout)
    if completed.returncode:
        raise RuntimeError(f"{page}: run_cells failed:\n{completed.stderr[-3000:]}")
    return json.loads(completed.stdout)


def score(page: str, outputs: list[dict]) -> tuple[list[int], list[int]]:
    """(the counted cells, the counted cells whose output matches JAX's)."""
    expected = json.loads((HERE / f"{page}.expected.json").read_text())
    counted = [index for index, cell in enumerate(expected) if "EXCEPTION:" not in cell["output"]]
    matching = [index for index in counted if same_output(expected[index]["output"], outputs[index]["output"])]
    return counted, matching


def main(python: str = sys.executable) -> None:
    tutorials_compare.main(python, pages=PAGES, scorer=score, runner=run_page)


if __name__ == "__main__":
    main(*sys.argv[1:])
