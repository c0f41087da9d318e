"""The discrete samplers: bernoulli, randint, categorical, permutation and choice, with JAX's
algorithms (randint's two-word modulus, the Gumbel-max and Gumbel-top-k tricks, shuffling by
rounds of sorts on random keys)."""

from __future__ import annotations

import math

import numpy as np
from meshjit.ir.dtypes import to_numpy

from .. import lax_ops as lax
from .. import numpy_api as jnp
from ..lax_slicing import top_k
from ..operands import as_operand, dtype_of, shape_of, x64
from ..promotion import default_int
from .bits import random_bits, split
from .continuous import _bounds_to, _constant, _log, gumbel, uniform

_UNSIGNED = {"i32": "u32", "i64": "u64", "u32": "u32", "u64": "u64"}


def bernoulli(key, p, shape, mode: str):
    """True with probability ``p``: a uniform draw below ``p`` ("high": two draws, for
    probabilities below float resolution)."""
    dtype = dtype_of(p).name
    p = lax.convert_element_type(as_operand(p, dtype), dtype)
    shape = tuple(shape)
    p = _bounds_to(p, shape, dtype, "p", "bernoulli")
    if mode == "low":
        return lax.lt(uniform(key, shape, dtype, 0.0, 1.0, "bernoulli"), p)
    both = uniform(key, (2,) + shape, dtype, 0.0, 1.0, "bernoulli")
    first, second = (lax.reshape(lax.slice(both, (index,) + (0,) * len(shape),
                                           (index + 1,) + shape), shape) for index in (0, 1))
    second = lax.mul(second, _constant(shape, 2.0 ** -np.finfo(to_numpy(dtype)).nmant, dtype))
    return lax.lt(second, lax.sub(p, first))


def _clip_integer(value, dtype: str):
    """``value`` (an integer array) in ``dtype``, clipped to the range both types share."""
    source, target = np.iinfo(to_numpy(dtype_of(value).name)), np.iinfo(to_numpy(dtype))
    name = dtype_of(value).name
    low = lax.full(shape_of(value), np.asarray(max(source.min, target.min), to_numpy(name)), name)
    high = lax.full(shape_of(value), np.asarray(min(source.max, target.max), to_numpy(name)), name)
    return lax.convert_element_type(lax.min(lax.max(value, low), high), dtype)


def _integer_bound(value):
    value = jnp.asarray(value)
    if dtype_of(value).name in ("f32", "f64", "bool"):
        value = jnp.asarray(value).astype(int)
    return value


def randint(key, shape, minval, maxval, dtype: str):
    """Integers in ``[minval, maxval)``: two words of random bits reduced modulo the span."""
    shape = tuple(shape)
    minval, maxval = _integer_bound(minval), _integer_bound(maxval)
    info = np.iinfo(to_numpy(dtype))
    dtype_max = lax.full((), np.asarray(info.max, to_numpy(dtype)), dtype)
    # maxval past the dtype's range (randint(k, s, 0, 256, uint8)) means a span one larger
    out_of_range = lax.gt(maxval, lax.broadcast_in_dim(_clip_integer(dtype_max, dtype_of(maxval).name),
                                                      shape_of(maxval), ()))
    out_of_range = _bounds_to(out_of_range, shape, "bool", "maxval", "randint")
    minval = _bounds_to(_clip_integer(minval, dtype), shape, dtype, "minval", "randint")
    maxval = _bounds_to(_clip_integer(maxval, dtype), shape, dtype, "maxval", "randint")
    unsigned = _UNSIGNED[dtype]
    bits = info.bits
    keys = split(key, (2,))
    higher, lower = (random_bits(lax.reshape(lax.slice(keys, (index, 0), (index + 1, 2)), (2,)), bits, shape)
                     for index in (0, 1))
    one = _constant(shape, 1, unsigned)
    span = lax.convert_element_type(lax.sub(maxval, minval), unsigned)
    span = lax.select(lax.le(maxval, minval), one, span)
    widen = lax.bitwise_and(out_of_range, lax.gt(maxval, minval))
    span = lax.select(widen, lax.add(span, one), span)
    # (high * 2**bits + low) % span without overflow: 2**bits % span from (2**(bits/2) % span)**2
    multiplier = lax.rem(_constant(shape, 2 ** (bits // 2), unsigned), span)
    multiplier = lax.rem(lax.mul(multiplier, multiplier), span)
    offset = lax.add(lax.mul(lax.rem(higher, span), multiplier), lax.rem(lower, span))
    offset = lax.rem(offset, span)
    return lax.add(minval, lax.convert_element_type(offset, dtype))


def categorical(key, logits, axis: int, shape, replace: bool, mode: str):
    """Category indices: the argmax of logits plus Gumbel noise (with replacement), or the top
    ``k`` of one noisy copy (without)."""
    logits = jnp.asarray(logits)
    logits_shape = shape_of(logits)
    rank = len(logits_shape)
    axis = axis % rank
    batch_shape = logits_shape[:axis] + logits_shape[axis + 1:]
    shape = tuple(shape)
    prefix = shape[: len(shape) - len(batch_shape)]
    dtype = dtype_of(logits).name
    if replace:
        noise_shape = list(shape[len(prefix):])
        noise_shape.insert(axis, logits_shape[axis])
        noise = gumbel(key, prefix + tuple(noise_shape), dtype, mode)
        expanded = lax.reshape(logits, (1,) * len(prefix) + logits_shape)
        noisy = jnp.add(noise, expanded)
        return jnp.argmax(noisy, axis=axis + len(prefix))
    noisy = jnp.add(logits, gumbel(key, logits_shape, dtype, mode))
    count = math.prod(prefix)
    if count > logits_shape[axis]:
        raise ValueError(
            f"Number of samples without replacement ({count}) cannot exceed number of "
            f"categories ({logits_shape[axis]})."
        )
    _, indices = top_k(jnp.moveaxis(noisy, axis, -1), count)
    # indices is batch_shape + (count,); the samples go to the front
    return lax.reshape(indices, shape, (len(batch_shape),) + tuple(range(len(batch_shape))))


def shuffle(key, x, axis: int):
    """``x`` shuffled along ``axis`` by sorting on fresh 32-bit random keys, in as many rounds as
    make collisions negligible (JAX's heuristic: 3 * log(size) / log(2**32 - 1))."""
    size = math.prod(shape_of(x))
    rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(rounds):
        keys = split(key, (2,))
        key, subkey = (lax.reshape(lax.slice(keys, (index, 0), (index + 1, 2)), (2,)) for index in (0, 1))
        sort_keys = random_bits(subkey, 32, shape_of(x))
        _, x = lax.sort_key_val(sort_keys, x, axis)
    return x


def permutation(key, x, axis: int, independent: bool):
    """A shuffled ``arange(x)`` for an int, else ``x`` shuffled along ``axis`` (its slices
    whole, or each vector apart with ``independent``)."""
    if not shape_of(x):
        return shuffle(key, jnp.arange(int(x)), 0)
    if independent or len(shape_of(x)) == 1:
        return shuffle(key, x, axis)
    order = shuffle(key, jnp.arange(shape_of(x)[axis]), 0)
    return jnp.take(x, order, axis)


def choice(key, a, shape, replace: bool, p, axis: int, mode: str):
    """Samples from ``a`` (or ``arange(a)``) along ``axis``, uniform or weighted by ``p``."""
    array = jnp.asarray(a)
    scalar = not shape_of(array)
    count = int(a) if scalar else shape_of(array)[axis]
    shape = tuple(shape)
    draws = math.prod(shape)
    if draws == 0:
        return jnp.zeros(shape, dtype=array.dtype)
    if p is None and replace:
        indices = randint(key, shape, 0, count, default_int(x64()))
    elif p is None:
        permuted = permutation(key, count if scalar else array, axis, False)
        ranges = tuple(slice(None) for _ in range(axis)) + (slice(draws),)
        result = permuted[ranges] if not scalar else permuted[:draws]
        return _place(result, array, shape, axis, scalar)
    else:
        indices = _weighted_indices(key, as_operand(p), count, shape, replace, mode)
    result = indices if scalar else jnp.take(array, indices, axis)
    return _place(result, array, shape, axis, scalar)


def _weighted_indices(key, p, count: int, shape, replace: bool, mode: str):
    p = jnp.asarray(p)
    if dtype_of(p).name not in ("f32", "f64"):
        p = p.astype(float)
    dtype = dtype_of(p).name
    index_dtype = default_int(x64())
    if replace:
        totals = jnp.cumsum(p)
        last = jnp.reshape(totals[-1], (1,) * len(shape)) if shape else totals[-1]
        u = uniform(key, shape, dtype, 0.0, 1.0, "choice")
        r = jnp.multiply(last, jnp.subtract(_constant(shape, 1.0, dtype), u))
        return jnp.searchsorted(totals, r).astype(to_numpy(index_dtype))
    noisy = jnp.add(gumbel(key, (count,), dtype, mode), _log(p))
    return top_k(noisy, math.prod(shape))[1].astype(to_numpy(index_dtype))


def _place(result, array, shape, axis: int, scalar: bool):
    """The samples in ``shape`` where the population's ``axis`` was."""
    if scalar:
        return jnp.reshape(result, shape)
    array_shape = shape_of(array)
    return jnp.reshape(result, array_shape[:axis] + shape + array_shape[axis + 1:])
