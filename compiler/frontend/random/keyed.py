"""Random draws with one key per element, as JAX's samplers get them when they vmap a
per-element algorithm over split keys (the gamma family's rejection loops): ``keys`` is
``u32[n, 2]`` and every function gives one value (or one new key) per key, the value JAX's
scalar draw under that key would be."""

from __future__ import annotations

import numpy as np
from meshjit.ir.dtypes import to_numpy

from .. import lax_ops as lax
from ..operands import shape_of
from ..trace import bind
from .bits import _partitionable
from .continuous import uniform_from_bits


def _words(keys):
    """The two words of every key, ``u32[n]`` each."""
    count = shape_of(keys)[0]
    return [lax.reshape(lax.slice(keys, (0, index), (count, index + 1)), (count,)) for index in (0, 1)]


def _u32(shape, value):
    return lax.full(shape, np.uint32(value), "u32")


def split_keys(keys, count: int) -> list:
    """``count`` new keys of every key (JAX's ``split(key, count)`` per key), ``u32[n, 2]`` each."""
    size = shape_of(keys)[0]
    shape = (size, count)
    key0, key1 = (lax.broadcast_in_dim(word, shape, (0,)) for word in _words(keys))
    if _partitionable():
        first, second = bind("threefry2x32", [key0, key1, _u32(shape, 0), lax.broadcasted_iota("u32", shape, 1)])
        pairs = [(first, second)]
        column = [(index, index) for index in range(count)]
    else:
        # NOTE: the older layout hashes the words 0..2count-1 as pairs (j, count + j) and reads
        # the new keys off the hashed words in order
        low = lax.broadcasted_iota("u32", shape, 1)
        high = lax.add(low, _u32(shape, count))
        first, second = bind("threefry2x32", [key0, key1, low, high])
        words = lax.concatenate([first, second], 1)
        pairs = [(words, words)]
        column = [(2 * index, 2 * index + 1) for index in range(count)]
    result = []
    for first_column, second_column in column:
        source_first, source_second = pairs[0]
        word0 = lax.slice(source_first, (0, first_column), (size, first_column + 1))
        word1 = lax.slice(source_second, (0, second_column), (size, second_column + 1))
        result.append(lax.concatenate([word0, word1], 1))
    return result


def bits_of_keys(keys, bit_width: int):
    """The bits of a scalar draw under every key (``random_bits(key, bit_width, ())``)."""
    size = shape_of(keys)[0]
    key0, key1 = _words(keys)
    partitionable = _partitionable()
    second_counter = 0 if partitionable or bit_width == 32 else 1
    first, second = bind("threefry2x32", [key0, key1, _u32((size,), 0), _u32((size,), second_counter)])
    if bit_width == 32:
        return lax.bitwise_xor(first, second) if partitionable else first
    wide_first, wide_second = (lax.convert_element_type(word, "u64") for word in (first, second))
    return lax.bitwise_or(lax.shift_left(wide_first, lax.full((size,), np.uint64(32), "u64")), wide_second)


def uniform_of_keys(keys, dtype: str, minval=0.0, maxval=1.0):
    """A uniform draw in ``[minval, maxval)`` under every key."""
    width = np.finfo(to_numpy(dtype)).bits
    return uniform_from_bits(bits_of_keys(keys, width), (shape_of(keys)[0],), dtype, minval, maxval, "uniform")


def normal_of_keys(keys, dtype: str):
    """A standard normal draw under every key (``normal(key, ())``)."""
    numpy_dtype = to_numpy(dtype)
    lowest = np.nextafter(np.array(-1.0, numpy_dtype), np.array(0.0, numpy_dtype))
    u = uniform_of_keys(keys, dtype, lowest, 1.0)
    return lax.mul(lax.full(shape_of(u), np.sqrt(np.asarray(2.0, numpy_dtype)), dtype), lax.erf_inv(u))
