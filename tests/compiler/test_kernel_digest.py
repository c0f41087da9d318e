"""Object digests (compiler/lowering/kernel_digest.py): a kernel's objects are named by its entry
and the prelude definitions it reaches, so a prelude helper it does not call can change without
recompiling it, and one it calls (directly or through another helper) cannot."""

from __future__ import annotations

from meshjit.compiler.lowering.codegen_math import PRELUDE
from meshjit.compiler.lowering.kernel_digest import object_digest

HELPERS = '''import math
import numba

TABLE = (1.0, 2.0)


@numba.njit(cache=True)
def _inner(x):
    return x * TABLE[0]


@numba.njit(cache=True)
def _outer(x):
    return _inner(x) + 1


@numba.njit(cache=True)
def _other(x):
    return math.exp(x)
'''
ENTRY = "@numba.njit\ndef kernel(x):\n    return _outer(x)\n"


def test_an_unreached_helper_does_not_change_the_digest():
    changed = HELPERS.replace("math.exp(x)", "math.log(x)") + "\n\ndef _added(x):\n    return x\n"
    assert object_digest(changed, ENTRY) == object_digest(HELPERS, ENTRY)


def test_a_reached_helper_constant_import_or_the_entry_changes_it():
    digest = object_digest(HELPERS, ENTRY)
    for changed in (HELPERS.replace("x * TABLE[0]", "x * TABLE[1]"),   # a helper the entry reaches through another
                    HELPERS.replace("(1.0, 2.0)", "(1.5, 2.0)"),         # a constant a reached helper reads
                    HELPERS.replace("import math", "import math\nimport cmath"),  # imports always count
                    HELPERS.replace("@numba.njit(cache=True)\ndef _outer", "@numba.njit(fastmath=True)\ndef _outer")):
        assert object_digest(changed, ENTRY) != digest
    assert object_digest(HELPERS, ENTRY.replace("_outer(x)", "_outer(x) * 2")) != digest


def test_the_real_prelude_parses_and_kernels_reach_only_their_helpers():
    tanh = "@numba.njit\ndef kernel(x):\n    return _tanh_f32(x)\n"
    exp = "@numba.njit\ndef kernel(x):\n    return _exp_f32(x)\n"
    assert object_digest(PRELUDE, tanh) != object_digest(PRELUDE, exp)
    unrelated = PRELUDE + "\n\n@numba.njit\ndef _a_new_helper(x):\n    return x + 1\n"
    assert object_digest(unrelated, tanh) == object_digest(PRELUDE, tanh)
