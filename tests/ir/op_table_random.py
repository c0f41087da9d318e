"""Op-table rows of the random family: threefry2x32 against a Python-int Threefry-2x32 written
from the Random123 paper's description."""

from __future__ import annotations

import numpy as np
from op_records import Bad, Case, OpRecord

_MASK = 2**32 - 1


def _rotate(word: int, amount: int) -> int:
    return ((word << amount) | (word >> (32 - amount))) & _MASK


def _threefry(key0: int, key1: int, x0: int, x1: int) -> tuple[int, int]:
    keys = [key0, key1, key0 ^ key1 ^ 0x1BD11BDA]
    rotations = [[13, 15, 26, 6], [17, 29, 16, 24]]
    x0, x1 = (x0 + keys[0]) & _MASK, (x1 + keys[1]) & _MASK
    for injection in range(1, 6):
        for amount in rotations[(injection - 1) % 2]:
            x0 = (x0 + x1) & _MASK
            x1 = _rotate(x1, amount) ^ x0
        x0 = (x0 + keys[injection % 3]) & _MASK
        x1 = (x1 + keys[(injection + 1) % 3] + injection) & _MASK
    return x0, x1


def _oracle(attrs, *words):
    flat = [word.ravel().tolist() for word in words]
    pairs = [_threefry(*scalars) for scalars in zip(*flat)]
    shape = words[0].shape
    return tuple(np.array([pair[index] for pair in pairs], np.uint32).reshape(shape)
                 for index in (0, 1))


def _words(rng, shapes, dtype, attrs=None):
    return [rng.integers(0, 2**32, shape, dtype=np.uint32) for shape in shapes]


RANDOM_RECORDS = [
    OpRecord(
        "threefry2x32",
        ("u32",),
        tuple(Case({}, (shape,) * 4) for shape in ((), (0,), (5,), (2, 3))),
        _oracle,
        (
            Bad("u32[2] u32[2] u32[2]", {}, "threefry2x32: expected 4 operands, got 3"),
            Bad("u32[2] u32[2] u32[2] i32[2]", {}, "count 1 has dtype i32, expected u32"),
            Bad("u32[2] u32[2] u32[2] u32[3]", {}, "count 1 is u32[3], expected the shape"),
        ),
        make=_words,
    ),
]

