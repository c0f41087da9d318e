"""``jax.nn.initializers``: functions ``init(key, shape, dtype=None, out_sharding=None)`` that draw
parameter arrays, and the factories that configure them (``normal(stddev)``, ``glorot_uniform()``,
``variance_scaling(scale, mode, distribution)``, ...).

They draw through ``meshjit.random`` with JAX's scalings, so a key gives the values JAX's
initializer gives, and ``out_sharding`` places the result as ``meshjit.random`` does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from meshjit import numpy as jnp
from meshjit import random

__all__ = (
    "Initializer",
    "constant",
    "delta_orthogonal",
    "glorot_normal",
    "glorot_uniform",
    "he_normal",
    "he_uniform",
    "kaiming_normal",
    "kaiming_uniform",
    "lecun_normal",
    "lecun_uniform",
    "normal",
    "ones",
    "orthogonal",
    "truncated_normal",
    "uniform",
    "variance_scaling",
    "xavier_normal",
    "xavier_uniform",
    "zeros",
)

# The standard deviation of a standard normal truncated to (-2, 2).
_TRUNCATED_STDDEV = 0.87962566103423978


class Initializer(Protocol):
    """What every initializer is: ``init(key, shape, dtype=None, out_sharding=None) -> Array``."""

    def __call__(self, key, shape, dtype=None, out_sharding=None): ...


def _float_dtype(dtype):
    return jnp.dtype(jnp.float_ if dtype is None else dtype)


def zeros(key, shape, dtype=None, out_sharding=None):
    """An array of zeros (the key is not used)."""
    return jnp.zeros(shape, _float_dtype(dtype), device=out_sharding)


def ones(key, shape, dtype=None, out_sharding=None):
    """An array of ones (the key is not used)."""
    return jnp.ones(shape, _float_dtype(dtype), device=out_sharding)


def constant(value, dtype=None) -> Initializer:
    """An initializer filling every element with ``value``."""

    def init(key, shape, dtype=dtype, out_sharding=None):
        return jnp.full(shape, value, _float_dtype(dtype), device=out_sharding)

    return init


def _scaled(draw, factor, dtype) -> Initializer:
    """An initializer returning ``draw(key, shape, dtype, out_sharding) * factor``."""

    def init(key, shape, dtype=dtype, out_sharding=None):
        dtype = _float_dtype(dtype)
        return draw(key, shape, dtype, out_sharding) * jnp.array(factor, dtype)

    return init


def normal(stddev=1e-2, dtype=None) -> Initializer:
    """An initializer drawing normal values with standard deviation ``stddev``."""
    return _scaled(lambda key, shape, dtype, sharding: random.normal(key, shape, dtype, out_sharding=sharding),
                   stddev, dtype)


def uniform(scale=1e-2, dtype=None) -> Initializer:
    """An initializer drawing uniform values in ``[0, scale)``."""
    return _scaled(lambda key, shape, dtype, sharding: random.uniform(key, shape, dtype, out_sharding=sharding),
                   scale, dtype)


def truncated_normal(stddev=1e-2, dtype=None, lower=-2.0, upper=2.0) -> Initializer:
    """An initializer drawing normal values truncated to ``(lower, upper)``, times ``stddev``."""

    def draw(key, shape, dtype, sharding):
        return random.truncated_normal(key, lower, upper, shape, dtype, out_sharding=sharding)

    return _scaled(draw, stddev, dtype)


def _size(shape, axes) -> int:
    return shape[axes] if isinstance(axes, int) else math.prod(shape[axis] for axis in axes)


def _fans(shape, in_axis, out_axis, batch_axis) -> tuple[float, float]:
    """The fan-in and fan-out of a weight of ``shape``: the input and output sizes times the
    receptive field (every dim not named as input, output or batch)."""
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
        raise ValueError(
            f"Can't compute input and output sizes of a {len(shape)}-dimensional weights tensor "
            f"with default in_axis. Must be at least 2D or specify in_axis explicitly."
        )
    in_size, out_size = _size(shape, in_axis), _size(shape, out_axis)
    receptive_field = math.prod(shape) / in_size / out_size / _size(shape, batch_axis)
    return in_size * receptive_field, out_size * receptive_field


_DENOMINATORS = {
    "fan_in": lambda fan_in, fan_out: fan_in,
    "fan_out": lambda fan_in, fan_out: fan_out,
    "fan_avg": lambda fan_in, fan_out: (fan_in + fan_out) / 2,
    "fan_geo_avg": lambda fan_in, fan_out: (fan_in * fan_out) ** 0.5,
}


def variance_scaling(
    scale,
    mode: str,
    distribution: str,
    in_axis: int | Sequence[int] = -2,
    out_axis: int | Sequence[int] = -1,
    batch_axis: int | Sequence[int] = (),
    dtype=None,
) -> Initializer:
    """An initializer whose draws have variance ``scale / n``, ``n`` the fan-in, fan-out, their
    mean or their geometric mean (``mode``), from a truncated normal, normal or uniform
    ``distribution``."""
    if distribution not in ("truncated_normal", "normal", "uniform"):
        raise ValueError(f"invalid distribution for variance scaling initializer: {distribution}")

    def init(key, shape, dtype=dtype, out_sharding=None):
        shape = tuple(int(size) for size in shape)
        dtype = _float_dtype(dtype)
        if mode not in _DENOMINATORS:
            raise ValueError(f"invalid mode for variance scaling initializer: {mode}")
        variance = jnp.array(scale / _DENOMINATORS[mode](*_fans(shape, in_axis, out_axis, batch_axis)), dtype)
        if distribution == "truncated_normal":
            stddev = jnp.sqrt(variance) / jnp.array(_TRUNCATED_STDDEV, dtype)
            return random.truncated_normal(key, -2, 2, shape, dtype, out_sharding=out_sharding) * stddev
        if distribution == "normal":
            return random.normal(key, shape, dtype, out_sharding=out_sharding) * jnp.sqrt(variance)
        draws = random.uniform(key, shape, dtype, -1, out_sharding=out_sharding)
        return draws * jnp.sqrt(3 * variance)

    return init


def _scaling(scale: float, mode: str, distribution: str, doc: str):
    def factory(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None) -> Initializer:
        return variance_scaling(scale, mode, distribution, in_axis, out_axis, batch_axis, dtype)

    factory.__doc__ = doc
    return factory


glorot_uniform = _scaling(1.0, "fan_avg", "uniform", "Glorot/Xavier uniform: variance 2 / (fan_in + fan_out).")
glorot_normal = _scaling(1.0, "fan_avg", "truncated_normal", "Glorot/Xavier truncated normal.")
lecun_uniform = _scaling(1.0, "fan_in", "uniform", "LeCun uniform: variance 1 / fan_in.")
lecun_normal = _scaling(1.0, "fan_in", "truncated_normal", "LeCun truncated normal.")
he_uniform = _scaling(2.0, "fan_in", "uniform", "He/Kaiming uniform: variance 2 / fan_in.")
he_normal = _scaling(2.0, "fan_in", "truncated_normal", "He/Kaiming truncated normal.")
xavier_uniform, xavier_normal = glorot_uniform, glorot_normal
kaiming_uniform, kaiming_normal = he_uniform, he_normal


def orthogonal(scale=1.0, column_axis: int = -1, dtype=None) -> Initializer:
    """An initializer drawing (semi-)orthogonal matrices: the Q of a normal matrix's QR with
    R's diagonal signs folded in, along ``column_axis`` against the other dims, times ``scale``."""

    def init(key, shape, dtype=dtype, out_sharding=None):
        shape = tuple(int(size) for size in shape)
        dtype = _float_dtype(dtype)
        if len(shape) < 2:
            raise ValueError("orthogonal initializer requires at least a 2D shape")
        columns = shape[column_axis]
        rows = math.prod(shape) // columns
        wide = rows < columns
        matrix = random.normal(key, (columns, rows) if wide else (rows, columns), dtype)
        q, r = jnp.linalg.qr(matrix)
        q = q * jnp.sign(jnp.linalg.diagonal(r))[None, :]
        if wide:
            q = q.T
        q = jnp.reshape(q, tuple(np.delete(shape, column_axis)) + (columns,))
        result = jnp.array(scale, dtype) * jnp.moveaxis(q, -1, column_axis)
        return result if out_sharding is None else jnp.asarray(result, device=out_sharding)

    return init


def delta_orthogonal(scale=1.0, column_axis: int = -1, dtype=None) -> Initializer:
    """An initializer for 1-3 d convolution kernels ``(*spatial, in, out)``: zero but for an
    orthogonal ``(in, out)`` matrix at the spatial centre (Xiao et al., 2018)."""

    def init(key, shape, dtype=dtype, out_sharding=None):
        shape = tuple(int(size) for size in shape)
        dtype = _float_dtype(dtype)
        if len(shape) not in (3, 4, 5):
            raise ValueError("Delta orthogonal initializer requires a 3D, 4D or 5D shape.")
        if shape[-1] < shape[-2]:
            raise ValueError("`fan_in` must be less or equal than `fan_out`. ")
        centre = tuple((size - 1) // 2 for size in shape[:-2])
        matrix = orthogonal(scale, column_axis, dtype)(key, shape[-2:])
        result = jnp.zeros(shape, dtype).at[centre].set(matrix)
        return result if out_sharding is None else jnp.asarray(result, device=out_sharding)

    return init
