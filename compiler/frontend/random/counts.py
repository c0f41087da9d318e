"""The count samplers as JAX computes them: poisson (Knuth's product of uniforms below a rate
of 10, Hormann's transformed rejection above), binomial (geometric inversion when n q <= 10,
Hormann's BTRS above) and multinomial (a scan of binomials over the conditional ratios). Unlike
gamma they draw whole arrays under one key per trip of their loop, as JAX's; their arithmetic
is XLA's float32 log with plain +, *, / (the counts come from floors and comparisons, so a last-
bit difference in an intermediate value rarely changes a count; poisson's lgamma is meshjit's)."""

from __future__ import annotations

import numpy as np
from meshjit.ir.dtypes import to_numpy

from .. import lax_ops as lax
from .. import numpy_api as jnp
from ..lax_loops import scan, while_loop
from ..operands import dtype_of, shape_of
from . import xla_float32
from .bits import split
from .continuous import uniform


def _log(x):
    return xla_float32.log(x) if dtype_of(x).name == "f32" else xla_float32.log_f64(x)


def _log1p(x):
    return xla_float32.log1p(x)


def _split2(key, count: int = 2):
    keys = split(key, (count,))
    return [lax.reshape(lax.slice(keys, (index, 0), (index + 1, 2)), (2,)) for index in range(count)]


def _full(shape, value, dtype: str):
    return lax.full(tuple(shape), np.asarray(value, to_numpy(dtype)), dtype)


def _poisson_knuth(key, lam, shape):
    """Knuth: count uniforms until their product falls below exp(-lam) (in log space)."""
    def pending(state):
        return lax.reduce_or(lax.gt(state[2], lax.neg(lam)), tuple(range(len(shape))))

    def draw(state):
        key, k, log_product = state
        key, subkey = _split2(key)
        k = lax.select(lax.gt(log_product, lax.neg(lam)), lax.add(k, _full(shape, 1, "i32")), k)
        return key, k, lax.add(log_product, _log(uniform(subkey, shape, "f32")))

    _, k, _ = while_loop(pending, draw, (key, _full(shape, 0, "i32"), _full(shape, 0.0, "f32")))
    return lax.sub(k, _full(shape, 1, "i32"))


def _poisson_rejection(key, lam, shape):
    """Hormann's transformed rejection (PTRS) for rates of 10 and more."""
    log_lam = _log(lam)
    b = 0.931 + 2.53 * jnp.sqrt(lam)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2.0)
    axes = tuple(range(len(shape)))

    def draw(state):
        key, k_out, accepted = state
        key, key_u, key_v = _split2(key, 3)
        u = uniform(key_u, shape, "f32") - 0.5
        v = uniform(key_v, shape, "f32")
        u_shifted = 0.5 - jnp.abs(u)
        k = jnp.floor((2.0 * a / u_shifted + b) * u + lam + 0.43)
        s = _log(v * inv_alpha / (a / (u_shifted * u_shifted) + b))
        t = -lam + k * log_lam - _lgamma(k + 1.0)
        accept1 = (u_shifted >= 0.07) & (v <= v_r)
        reject = (k < 0) | ((u_shifted < 0.013) & (v > u_shifted))
        accept = accept1 | (~reject & (s <= t))
        return key, lax.select(accept, k, k_out), accepted | accept

    start = (key, _full(shape, -1.0, "f32"), _full(shape, False, "bool"))
    _, k, _ = while_loop(lambda state: lax.reduce_or(lax.bitwise_not(state[2]), axes), draw, start)
    return lax.convert_element_type(k, "i32")


def _lgamma(x):
    from ..scipy.special import gammaln

    return gammaln(x)


def poisson(key, lam, shape, dtype: str):
    """Poisson(lam) counts of ``shape`` (``lam`` float32, broadcast to ``shape``)."""
    shape = tuple(shape)
    use_knuth = lax.bitwise_or(lax.ne(lam, lam), lax.lt(lam, _full(shape, 10.0, "f32")))
    lam_knuth = lax.select(use_knuth, lam, _full(shape, 0.0, "f32"))
    lam_rejection = lax.select(use_knuth, _full(shape, 1e5, "f32"), lam)
    counts = lax.select(use_knuth, _poisson_knuth(key, lam_knuth, shape), _poisson_rejection(key, lam_rejection, shape))
    counts = lax.select(lax.eq(lam, _full(shape, 0.0, "f32")), _full(shape, 0, "i32"), counts)
    return lax.convert_element_type(counts, dtype)


_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
                  0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
                  0.00925546218271273, 0.00833056343336287)


def _stirling_tail(k):
    """log k! - Stirling's approximation of it: tabulated for k <= 9, the series above."""
    dtype = dtype_of(k).name
    small = k <= 9.0
    clamped = jnp.clip(k, 0.0, 9.0)
    square = (clamped + 1.0) * (clamped + 1.0)
    approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / square) / square) / (clamped + 1.0)
    table = lax._constant(np.array(_STIRLING_TAIL, to_numpy(dtype)))
    tabulated = _gather_flat(table, jnp.floor(clamped))
    return lax.select(small, tabulated, approx)


def _gather_flat(table, indices):
    shape = shape_of(indices)
    flat = lax.reshape(lax.convert_element_type(indices, "i32"), (int(np.prod(shape)),))
    return lax.reshape(lax.gather_along_axis(table, flat, 0, mode="clip"), shape)


def _binomial_inversion(key, count, prob, shape):
    """Sums of geometric draws until they pass ``count``: how many fit."""
    log_one_minus = _log1p(-prob)
    axes = tuple(range(len(shape)))

    def draw(state):
        number, total, key = state
        subkey, key = _split2(key)
        number = lax.select(total <= count, number + 1.0, number)
        geometric = jnp.ceil(_log(uniform(subkey, shape, dtype_of(prob).name)) / log_one_minus)
        return number, total + geometric, key

    zeros = jnp.zeros_like(prob)
    number, _, _ = while_loop(lambda state: lax.reduce_or(state[1] <= count, axes), draw, (zeros, zeros, key))
    return number - 1.0


def _btrs(key, count, prob, shape):
    """Hormann's BTRS transformed rejection for n q > 10."""
    dtype = dtype_of(prob).name
    stddev = jnp.sqrt(count * prob * (1.0 - prob))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = count * prob + 0.5
    v_r = 0.92 - 4.2 / b
    r = prob / (1.0 - prob)
    alpha = (2.83 + 5.1 / b) * stddev
    m = jnp.floor((count + 1.0) * prob)
    axes = tuple(range(len(shape)))

    def draw(state):
        k_out, accepted, key = state
        key, key_u, key_v = _split2(key, 3)
        u = uniform(key_u, shape, dtype) - 0.5
        v = uniform(key_v, shape, dtype)
        us = 0.5 - jnp.abs(u)
        accept1 = (us >= 0.07) & (v <= v_r)
        k = jnp.floor((2.0 * a / us + b) * u + c)
        reject = (k < 0) | (k > count)
        v = _log(v * alpha / (a / (us * us) + b))
        bound = ((m + 0.5) * _log((m + 1.0) / (r * (count - m + 1.0)))
                 + (count + 1.0) * _log((count - m + 1.0) / (count - k + 1.0))
                 + (k + 0.5) * _log(r * (count - k + 1.0) / (k + 1.0))
                 + _stirling_tail(m) + _stirling_tail(count - m) - _stirling_tail(k) - _stirling_tail(count - k))
        accept = accept1 | (~reject & (v <= bound))
        return lax.select(accept, k, k_out), accepted | accept, key

    start = (jnp.full_like(prob, -1.0), _full(shape, False, "bool"), key)
    return while_loop(lambda state: lax.reduce_or(lax.bitwise_not(state[1]), axes), draw, start)[0]


def binomial(key, count, prob, shape, dtype: str):
    """Binomial(count, prob) counts (as floats of ``dtype``) of ``shape``; both parameters
    already ``dtype`` and broadcast to ``shape``. Computed for q = min(p, 1 - p) and mirrored."""
    shape = tuple(shape)
    p_below_half = prob < 0.5
    q = lax.select(p_below_half, prob, 1.0 - prob)
    count_nan_or_negative = (count != count) | (count < 0.0)
    count_inf = jnp.isinf(count)
    q_nan, q_negative = q != q, q < 0.0
    q = lax.select(q_nan | q_negative, jnp.full_like(q, 0.01), q)
    use_inversion = count_nan_or_negative | (count * q <= 10.0)
    count = jnp.floor(count)
    count_inversion = lax.select(use_inversion, count, jnp.zeros_like(count))
    count_btrs = lax.select(use_inversion, jnp.full_like(count, 1e4), count)
    q_btrs = lax.select(use_inversion, jnp.full_like(q, 0.5), q)
    samples = lax.select(use_inversion, _binomial_inversion(key, count_inversion, q, shape),
                         _btrs(key, count_btrs, q_btrs, shape))
    invalid = q_negative | q_nan | count_nan_or_negative
    samples = lax.select(invalid, jnp.full_like(samples, np.nan), samples)
    samples = lax.select(count_inf & ~invalid, jnp.full_like(samples, np.inf), samples)
    keep = p_below_half | count_nan_or_negative | q_nan | count_inf
    return lax.select(keep, samples, count - samples)


def multinomial(key, n, p, shape, dtype: str):
    """Multinomial(n, p) counts of ``shape`` (the categories last): a binomial per category of
    what the earlier ones left, with the category's share of the remaining probability."""
    p = jnp.moveaxis(p, -1, 0)
    remaining = lax.cumsum(p, 0, reverse=True)
    ratios = p / jnp.where(remaining == 0, 1.0, remaining)
    keys = split(key, (shape_of(ratios)[0],))

    def step(remainder, ratio_key):
        ratio, category_key = ratio_key
        drawn = binomial(category_key, remainder, jnp.clip(ratio, 0.0, 1.0), shape_of(remainder),
                         dtype_of(remainder).name)
        return remainder - drawn, drawn

    _, counts = scan(step, n, (ratios, keys))
    return lax.convert_element_type(jnp.moveaxis(counts, 0, -1), dtype)
