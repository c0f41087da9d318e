"""Keys and random bits: seeding, split, fold_in, and the bits of any shape.

With partitionable threefry, the counter of element ``i`` of a random array is its flat index
(as a pair of uint32 words, high then low), built from one iota per dim; the bits are the
threefry2x32 hash of the counters under the key. Every op is elementwise or an iota, so a sharded
result is computed block by block: each device hashes only its own counters.

With ``jax_threefry_partitionable=False`` (JAX's older layout) the counters are one iota over the
flat result, whose first and second halves are hashed together as word pairs: other numbers, and
a sharded draw needs the whole iota.
"""

from __future__ import annotations

import math

import numpy as np

from meshjit.ir.config import config

from .. import lax_ops as lax
from ..operands import as_operand, dtype_of, shape_of
from ..trace import bind

_WORD_LIMIT = 2**32


def _words(key):
    """The two uint32 words of a raw key ``u32[2]``, as 0-d arrays."""
    return [lax.reshape(lax.slice(key, (index,), (index + 1,)), ()) for index in (0, 1)]


def _u32(shape, value):
    return lax.full(shape, np.uint32(value), "u32")


def counters(shape) -> tuple:
    """The flat index of every element of ``shape`` as (high, low) uint32 words."""
    shape = tuple(shape)
    if not shape:
        return _u32((), 0), _u32((), 0)
    # NOTE: below 2**32 elements the high word is 0 and uint32 arithmetic is exact; larger
    # shapes count in uint64 and split the words.
    wide = math.prod(shape) >= _WORD_LIMIT
    dtype = "u64" if wide else "u32"
    strides = [math.prod(shape[dim + 1:]) for dim in range(len(shape))]
    index = None
    for dim, stride in enumerate(strides):
        term = lax.broadcasted_iota(dtype, shape, dim)
        if stride != 1:
            term = lax.mul(term, lax.full(shape, np.asarray(stride, dtype=_numpy(dtype)), dtype))
        index = term if index is None else lax.add(index, term)
    if not wide:
        return _u32(shape, 0), index
    high = lax.shift_right_logical(index, lax.full(shape, np.uint64(32), "u64"))
    return lax.convert_element_type(high, "u32"), lax.convert_element_type(index, "u32")


def _numpy(dtype: str):
    return {"u32": np.uint32, "u64": np.uint64}[dtype]


def hash_counters(key, high, low):
    """threefry2x32 of the counter words under ``key``'s words (broadcast to their shape)."""
    shape = shape_of(low)
    key0, key1 = (lax.broadcast_in_dim(word, shape, ()) for word in _words(key))
    return bind("threefry2x32", [key0, key1, high, low])


def seed(seed_value):
    """The raw key of an integer seed: (high word, low word) of its 64-bit value; a 32-bit seed
    has a zero high word (JAX's threefry_seed)."""
    seed_value = as_operand(seed_value)
    dtype = dtype_of(seed_value).name
    low = lax.convert_element_type(seed_value, "u32")
    if dtype in ("i64", "u64"):
        shifted = lax.shift_right_logical(seed_value, lax.full((), np.asarray(32, _integer(dtype)), dtype))
        high = lax.convert_element_type(shifted, "u32")
    else:
        high = _u32((), 0)
    return lax.concatenate([lax.reshape(high, (1,)), lax.reshape(low, (1,))], 0)


def _integer(dtype: str):
    return {"i64": np.int64, "u64": np.uint64}[dtype]


def split(key, shape):
    """``shape`` new keys (``u32[*shape, 2]``): the hashes of their flat indices."""
    shape = tuple(shape)
    if not _partitionable():
        return lax.reshape(_hash_flat(key, _iota(2 * math.prod(shape))), shape + (2,))
    high, low = counters(shape)
    first, second = hash_counters(key, high, low)
    pieces = [lax.reshape(word, shape + (1,)) for word in (first, second)]
    return lax.concatenate(pieces, len(shape))


def _partitionable() -> bool:
    return config.read("jax_threefry_partitionable")


def _iota(size: int):
    return lax.broadcasted_iota("u32", (size,), 0)


def _hash_flat(key, count):
    """JAX's threefry_2x32 of a flat ``u32`` count: its first half and second half (an odd count
    padded with one zero word) hashed as word pairs, the two results concatenated back."""
    size = shape_of(count)[0]
    if size == 0:
        return count
    padded = lax.concatenate([count, _u32((1,), 0)], 0) if size % 2 else count
    half = (size + 1) // 2
    key0, key1 = (lax.broadcast_in_dim(word, (half,), ()) for word in _words(key))
    halves = [lax.slice(padded, (0,), (half,)), lax.slice(padded, (half,), (2 * half,))]
    first, second = bind("threefry2x32", [key0, key1, *halves])
    hashed = lax.concatenate([first, second], 0)
    return lax.slice(hashed, (0,), (size,)) if size % 2 else hashed


def fold_in(key, data):
    """A new key from ``key`` and a uint32 ``data`` word: the hash of the counter (0, data)."""
    data = lax.convert_element_type(as_operand(data), "u32")
    first, second = bind("threefry2x32", [*_words(key), _u32((), 0), data])
    return lax.concatenate([lax.reshape(first, (1,)), lax.reshape(second, (1,))], 0)


_NARROW_UNSIGNED = {8: "u8", 16: "u16"}


def random_bits(key, bit_width: int, shape):
    """Uniform random bits of ``shape``: ``u32`` (the xor of the two hashed words), its low
    bits for ``u8`` and ``u16``, or ``u64`` (the high word shifted over the low one)."""
    shape = tuple(shape)
    if not _partitionable():
        return _original_bits(key, bit_width, shape)
    high, low = counters(shape)
    first, second = hash_counters(key, high, low)
    if bit_width == 64:
        wide_first, wide_second = (lax.convert_element_type(word, "u64") for word in (first, second))
        shifted = lax.shift_left(wide_first, lax.full(shape, np.uint64(32), "u64"))
        return lax.bitwise_or(shifted, wide_second)
    if bit_width in _NARROW_UNSIGNED:
        return lax.convert_element_type(lax.bitwise_xor(first, second), _NARROW_UNSIGNED[bit_width])
    return lax.bitwise_xor(first, second)


_COUNT_LIMIT = 2**32 - 1


def _original_bits(key, bit_width: int, shape):
    """JAX's older layout: ``ceil(bit_width * size / 32)`` hashed words of one iota (in blocks of
    2**32 - 1 words under split keys past that); a 64-bit value takes its high word from the
    first half and its low word from the second."""
    size = math.prod(shape)
    words = -(-bit_width * size // 32)
    blocks, rest = divmod(words, _COUNT_LIMIT)
    if not blocks:
        bits = _hash_flat(key, _iota(rest))
    else:
        keys = split(key, (blocks + 1,))
        block_keys = [lax.reshape(lax.slice(keys, (index, 0), (index + 1, 2)), (2,)) for index in range(blocks + 1)]
        pieces = [_hash_flat(block_key, _iota(_COUNT_LIMIT)) for block_key in block_keys[:-1]]
        bits = lax.concatenate([*pieces, _hash_flat(block_keys[-1], _iota(rest))], 0)
    if bit_width == 64:
        high, low = (lax.convert_element_type(lax.slice(bits, (start,), (start + size,)), "u64")
                     for start in (0, size))
        bits = lax.bitwise_or(lax.shift_left(high, lax.full((size,), np.uint64(32), "u64")), low)
    if bit_width in _NARROW_UNSIGNED:
        bits = _split_words(bits, bit_width, size)
    return lax.reshape(bits, shape)


def _split_words(words, bit_width: int, size: int):
    """The first ``size`` ``bit_width``-bit pieces of the words, each word's low piece first."""
    pieces = 32 // bit_width
    count = shape_of(words)[0]
    spread = lax.broadcast_in_dim(words, (count, pieces), (0,))
    amounts = lax.mul(lax.broadcasted_iota("u32", (count, pieces), 1), lax.full((count, pieces), np.uint32(bit_width), "u32"))
    flat = lax.reshape(lax.shift_right_logical(spread, amounts), (count * pieces,))
    return lax.convert_element_type(lax.slice(flat, (0,), (size,)), _NARROW_UNSIGNED[bit_width])
