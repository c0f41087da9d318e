"""JAX's core tutorial pages (tests/api/jax_tutorials: jit, vmap, autodiff, pytrees, random
numbers, control flow, stateful computations, Thinking in JAX, Common Gotchas, the Autodiff
Cookbook, custom derivative rules, vmapped log-probs, the MNIST network; cells extracted at
jax-v0.10.2) run unchanged with ``jax`` bound to meshjit, cell by cell as a notebook runs them.

Each page's cells whose output equals JAX 0.10.2's (``PAGE.expected.json``; numbers to 1e-5)
must include the ones listed in ``MATCHING``, so a cell that works cannot stop working. The
cells left out print jaxprs (meshjit prints its IR), the class of an array, finite differences
that differ in float32 rounding, and dicts in JAX's sorted key order
(``python tests/api/jax_tutorials/compare.py`` prints the table).
"""

import sys

import pytest

sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent / "jax_tutorials"))
import compare  # noqa: E402

# NOTE: the cells (by index) whose outputs do not match JAX's yet, per page
NOT_YET = {
    "autodiff_cookbook": [7],
    "automatic_differentiation": [9],
    "common_gotchas": [32],
    "custom_derivatives": [9, 48],
    "jit_compilation": [1, 2, 3],
    "pytrees": [7],
    "thinking_in_jax": [4, 15],
}


@pytest.mark.parametrize("page", compare.PAGES)
def test_tutorial_page_prints_what_jax_prints(page):
    counted, matching = compare.score(page, compare.run_page(page))
    unexpected = sorted(set(counted) - set(matching) - set(NOT_YET.get(page, [])))
    assert not unexpected, f"{page}: cells {unexpected} no longer print what JAX prints"
