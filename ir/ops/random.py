"""The random family: threefry2x32, the Threefry-2x32 block cipher (Salmon et al., "Parallel
random numbers: as easy as 1, 2, 3", 2011) that JAX's default PRNG is built on. It hashes a
pair of uint32 counter words under a pair of key words, elementwise; the random functions of
``meshjit.random`` feed it counters from iota, so any block of a random array is computed on
its own."""

from __future__ import annotations

import numpy as np

from ..reference import reference_impls
from ..shape_rules import expect_dtype, expect_operand_count, fail, shape_rules

OPS = ("threefry2x32",)

# The cipher's constants: the rotation amounts of its two alternating groups of four rounds,
# and the parity word that makes the third key word.
ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
KEY_PARITY = 0x1BD11BDA
GROUPS = 5  # 20 rounds


@shape_rules.register("threefry2x32")
def _threefry2x32(op, operands, attrs, regions, meshes):
    # key words k0, k1 and counter words c0, c1 -> the two hashed words, all of one shape
    expect_operand_count(op, operands, 4)
    for name, operand in zip(("key 0", "key 1", "count 0", "count 1"), operands):
        expect_dtype(op, name, operand, ("u32",))
        if operand.shape != operands[0].shape:
            fail(op, f"{name} is {operand}, expected the shape of key 0 {operands[0]}")
    return (operands[0], operands[0])


def _rotate_left(word: np.ndarray, amount: int) -> np.ndarray:
    return (word << np.uint32(amount)) | (word >> np.uint32(32 - amount))


def threefry2x32(key0, key1, count0, count1) -> tuple[np.ndarray, np.ndarray]:
    """The cipher on uint32 arrays of one shape (numpy wraps uint32 sums modulo 2**32)."""
    keys = (key0, key1, key0 ^ key1 ^ np.uint32(KEY_PARITY))
    x0, x1 = count0 + keys[0], count1 + keys[1]
    for group in range(GROUPS):
        for amount in ROTATIONS[group % 2]:
            x0 = x0 + x1
            x1 = _rotate_left(x1, amount) ^ x0
        x0 = x0 + keys[(group + 1) % 3]
        x1 = x1 + keys[(group + 2) % 3] + np.uint32(group + 1)
    return x0, x1


@reference_impls.register("threefry2x32")
def _threefry2x32_impl(attrs, key0, key1, count0, count1):
    with np.errstate(over="ignore"):
        words = threefry2x32(*(np.asarray(word, np.uint32) for word in (key0, key1, count0, count1)))
    return tuple(np.asarray(word, np.uint32) for word in words)  # 0-d arithmetic gives scalars
