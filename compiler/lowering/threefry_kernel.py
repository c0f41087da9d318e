"""The Numba loop of ``threefry2x32`` (compiler/rules/random.py), in a module of its own so that
Numba is imported only by programs that hash random bits."""

from __future__ import annotations

import numba
import numpy as np
from meshjit.ir.ops.random import KEY_PARITY


@numba.njit(cache=True, nogil=True, inline="always")
def _rounds(x0, x1, a, b, c, d):
    """Four rounds: add, rotate left by the amount, xor."""
    x0, x1 = _round(x0, x1, a)
    x0, x1 = _round(x0, x1, b)
    x0, x1 = _round(x0, x1, c)
    return _round(x0, x1, d)


@numba.njit(cache=True, nogil=True, inline="always")
def _round(x0, x1, amount):
    x0 = np.uint32(x0 + x1)
    return x0, np.uint32((x1 << np.uint32(amount)) | (x1 >> np.uint32(32 - amount))) ^ x0


@numba.njit(cache=True, nogil=True)
def hash_words(key0, key1, count0, count1, out0, out1):
    # NOTE: the groups are spelled out (rather than looped over ROTATIONS) so that LLVM sees
    # constant rotation amounts; the reference in ir/ops/random.py is the readable form.
    parity = np.uint32(KEY_PARITY)
    for index in range(out0.size):
        k0, k1 = key0[index], key1[index]
        k2 = k0 ^ k1 ^ parity
        x0, x1 = np.uint32(count0[index] + k0), np.uint32(count1[index] + k1)
        x0, x1 = _rounds(x0, x1, 13, 15, 26, 6)
        x0, x1 = np.uint32(x0 + k1), np.uint32(x1 + k2 + np.uint32(1))
        x0, x1 = _rounds(x0, x1, 17, 29, 16, 24)
        x0, x1 = np.uint32(x0 + k2), np.uint32(x1 + k0 + np.uint32(2))
        x0, x1 = _rounds(x0, x1, 13, 15, 26, 6)
        x0, x1 = np.uint32(x0 + k0), np.uint32(x1 + k1 + np.uint32(3))
        x0, x1 = _rounds(x0, x1, 17, 29, 16, 24)
        x0, x1 = np.uint32(x0 + k1), np.uint32(x1 + k2 + np.uint32(4))
        x0, x1 = _rounds(x0, x1, 13, 15, 26, 6)
        out0[index], out1[index] = np.uint32(x0 + k2), np.uint32(x1 + k0 + np.uint32(5))
