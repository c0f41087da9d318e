"""The gamma sampler as JAX computes it: Marsaglia and Tsang's rejection method run for every
element under its own key (JAX vmaps its scalar algorithm over ``split(key, size)``), a while
loop of normal and uniform draws until the element is accepted, in XLA's arithmetic: the
multiply-adds LLVM fuses, XLA's float32 log, ``1/3 / sqrt(d)`` as ``1/3 * rsqrt(d)``, and the
C library's pow. The loops run over all elements at once, as the vmapped loops do: an element
already accepted keeps its state while the others draw again.

For ``alpha < 1`` the sample is boosted: Gamma(alpha) = Gamma(alpha + 1) * U^(1/alpha), in log
space for ``loggamma`` (log Gamma(alpha + 1) + log(U) / alpha).
"""

from __future__ import annotations

import numpy as np
from meshjit.ir.dtypes import to_numpy

from .. import lax_ops as lax
from ..lax_loops import while_loop
from ..operands import dtype_of, shape_of
from . import xla_float32, xla_rsqrt
from .bits import split
from .keyed import normal_of_keys, split_keys, uniform_of_keys
from .libm_pow import pow as _pow


def _full(like, value):
    dtype = dtype_of(like).name
    return lax.full(shape_of(like), np.asarray(value, to_numpy(dtype)), dtype)


def _log(x):
    return xla_float32.log(x) if dtype_of(x).name == "f32" else xla_float32.log_f64(x)


def _rsqrt(x):
    return lax.rsqrt(x) if dtype_of(x).name == "f32" else xla_rsqrt.rsqrt_f64(x)  # f32: XLA's (ir/xla_rsqrt.py)


def _select(pred, on_true, on_false):
    if len(shape_of(on_true)) == 2:
        pred = lax.broadcast_in_dim(pred, shape_of(on_true), (0,))
    return lax.select(pred, on_true, on_false)


def _rejected(d, X, V, U):
    """Marsaglia and Tsang's test, true while an element must draw again."""
    one = _full(d, 1.0)
    squeeze = lax.fma(_full(d, -0.0331), lax.mul(X, X), one)
    bound = lax.fma(X, _full(d, 0.5), lax.mul(d, lax.add(lax.sub(one, V), _log(V))))
    return lax.bitwise_and(lax.ge(U, squeeze), lax.ge(_log(U), bound))


def _positive_normal(keys, c):
    """Normal draws x with v = 1 + x c > 0, each element drawing again until it has one."""
    def pending(state):
        return lax.reduce_or(lax.le(state[2], _full(c, 0.0)), (0,))

    def draw(state):
        keys, x, v = state
        still = lax.le(v, _full(c, 0.0))
        keys, subkeys = split_keys(keys, 2)
        new_x = normal_of_keys(subkeys, dtype_of(c).name)
        new_v = lax.fma(new_x, c, _full(c, 1.0))
        return _select(still, keys, state[0]), lax.select(still, new_x, x), lax.select(still, new_v, v)

    _, x, v = while_loop(pending, draw, (keys, _full(c, 0.0), _full(c, -1.0)))
    return x, v


def _accepted(keys, d, c):
    """V = v^3 of each element's accepted proposal."""
    dtype = dtype_of(d).name

    def pending(state):
        return lax.reduce_or(_rejected(d, *state[1:]), (0,))

    def propose(state):
        keys = state[0]
        still = _rejected(d, *state[1:])
        keys, x_keys, u_keys = split_keys(keys, 3)
        x, v = _positive_normal(x_keys, c)
        proposal = (keys, lax.mul(x, x), lax.mul(lax.mul(v, v), v), uniform_of_keys(u_keys, dtype))
        return tuple(_select(still, new, old) for new, old in zip(proposal, state))

    start = (keys, _full(d, 0.0), _full(d, 1.0), _full(d, 2.0))
    return while_loop(pending, propose, start)[2]


def gamma(key, alpha, log_space: bool = False):
    """Gamma(alpha) samples (their logs with ``log_space``) of the flat float array ``alpha``,
    element i under the i-th key of ``split(key, size)``."""
    size = shape_of(alpha)[0]
    dtype = dtype_of(alpha).name
    if size == 0:
        return alpha
    keys = split(key, (size,))
    boost_mask = lax.ge(alpha, _full(alpha, 1.0))
    boosted = lax.select(boost_mask, alpha, lax.add(alpha, _full(alpha, 1.0)))
    d = lax.sub(boosted, _full(alpha, np.float32(1.0 / 3.0) if dtype == "f32" else 1.0 / 3.0))
    c = lax.mul(_full(alpha, 1.0 / 3.0), _rsqrt(d))
    keys, subkeys = split_keys(keys, 2)
    V = _accepted(keys, d, c)
    one_over_alpha = lax.div(_full(alpha, 1.0), alpha)
    if log_space:
        log_u = xla_float32.log1p(lax.neg(uniform_of_keys(subkeys, dtype)))
        skip = lax.bitwise_or(boost_mask, lax.eq(log_u, _full(alpha, 0.0)))
        log_boost = lax.select(skip, _full(alpha, 0.0), lax.mul(log_u, one_over_alpha))
        return lax.add(lax.add(_log(d), _log(V)), log_boost)
    samples = lax.sub(_full(alpha, 1.0), uniform_of_keys(subkeys, dtype))
    boost = lax.select(boost_mask, _full(alpha, 1.0), _pow(samples, one_over_alpha))
    return lax.mul(lax.mul(d, V), boost)
