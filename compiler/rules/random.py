"""The compiler's rules for the random family: threefry2x32 is elementwise (its four words share
the result's factors, so a sharded random array is hashed block by block with no communication),
runs as one Numba loop over the words, has no tangent, and batches as an elementwise op.
"""

from __future__ import annotations

import numba
import numpy as np
from meshjit.ir import Op
from meshjit.ir.ops.random import KEY_PARITY

from ..factor_rules import FactorRule, joined, letters
from ..frontend.autodiff.jvp import no_tangent
from ..frontend.autodiff.registries import jvp_rules
from ..frontend.vmap.batching import batch_elementwise
from .registries import batching_rules, factor_rule, kernel_rules, sharding_rules

# --- sharding ------------------------------------------------------------------------------------


@sharding_rules.register("threefry2x32")
def _threefry2x32(op: Op) -> FactorRule:
    dims = joined(letters(op.results[0].type.rank))
    return factor_rule(op, f"{dims}, {dims}, {dims}, {dims} -> {dims}, {dims}")


# --- kernels -------------------------------------------------------------------------------------

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
def _hash_words(key0, key1, count0, count1, out0, out1):
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


@kernel_rules.register("threefry2x32")
def _threefry2x32_kernel(op: Op, lead: int):
    # NOTE: plan buffers of replicated words (the key) have size-1 leading dims; they are
    # broadcast against the counters' before the loop.
    def run(*words):
        shape = np.broadcast_shapes(*(word.shape for word in words))
        flat = [np.ascontiguousarray(np.broadcast_to(word, shape)).ravel() for word in words]
        out0, out1 = np.empty(flat[0].size, np.uint32), np.empty(flat[0].size, np.uint32)
        _hash_words(*flat, out0, out1)
        return out0.reshape(shape), out1.reshape(shape)

    return run


# --- autodiff and vmap ---------------------------------------------------------------------------

jvp_rules.register("threefry2x32")(no_tangent)
batching_rules.register("threefry2x32")(batch_elementwise)
