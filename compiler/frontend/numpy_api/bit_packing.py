"""jax.numpy's bit-level functions: ``packbits``/``unpackbits`` (eight booleans per uint8, big
or little bit order) and ``bitwise_count`` (set bits per element, by the shift-and-mask
population count on the unsigned view)."""

from __future__ import annotations

import numpy as np

from .. import lax_ops as lax
from .. import numpy_api as jnp
from .arguments import as_array_argument, normalize_axis

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "bitwise_count",
    "packbits",
    "unpackbits",
)

_UNSIGNED = {1: jnp.uint8, 2: jnp.uint16, 4: jnp.uint32, 8: jnp.uint64}
_IR_UNSIGNED = {1: "u8", 2: "u16", 4: "u32", 8: "u64"}


def _bit_order(bitorder: str, function: str) -> str:
    if bitorder not in ("big", "little"):
        raise ValueError(f"{function}: 'order' must be either 'little' or 'big', got {bitorder!r}")
    return bitorder


def packbits(a, axis=None, bitorder: str = "big"):
    """The nonzero-ness of ``a``'s elements packed eight to a uint8 along ``axis`` (flattened
    when None), zero-padded at the end."""
    a = jnp.asarray(as_array_argument(a, "packbits"))
    if not (np.issubdtype(a.dtype, np.integer) or a.dtype == np.bool_):
        raise TypeError(f"Expected an input array of integer or boolean data type, got {a.dtype}")
    _bit_order(bitorder, "packbits")
    if axis is None:
        a, axis = jnp.ravel(a), 0
    axis = normalize_axis(axis, a.ndim, "packbits")
    bits = jnp.moveaxis((a != 0).astype(jnp.uint8), axis, -1)
    remainder = (-bits.shape[-1]) % 8
    bits = jnp.pad(bits, [(0, 0)] * (bits.ndim - 1) + [(0, remainder)])
    bits = jnp.reshape(bits, bits.shape[:-1] + (-1, 8))
    shifts = np.arange(8, dtype=np.uint8)
    shifts = shifts[::-1] if bitorder == "big" else shifts
    packed = jnp.sum(jnp.left_shift(bits, jnp.asarray(shifts)), axis=-1, dtype=jnp.uint8)
    return jnp.moveaxis(packed, -1, axis)


def unpackbits(a, axis=None, count=None, bitorder: str = "big"):
    """The bits of the uint8 array ``a`` as a uint8 array eight times longer along ``axis``
    (flattened when None), keeping the first ``count``."""
    a = jnp.asarray(as_array_argument(a, "unpackbits"))
    if a.dtype != np.uint8:
        raise TypeError("Expected an input array of unsigned byte data type")
    _bit_order(bitorder, "unpackbits")
    if axis is None:
        a, axis = jnp.ravel(a), 0
    axis = normalize_axis(axis, a.ndim, "unpackbits")
    shifts = np.arange(8, dtype=np.uint8)
    shifts = shifts[::-1] if bitorder == "big" else shifts
    moved = jnp.moveaxis(a, axis, -1)
    bits = jnp.bitwise_and(jnp.right_shift(moved[..., None], jnp.asarray(shifts)), 1).astype(jnp.uint8)
    bits = jnp.reshape(bits, moved.shape[:-1] + (-1,))
    if count is not None:
        bits = bits[..., :count]
    return jnp.moveaxis(bits, -1, axis)


def bitwise_count(x, /):
    """The number of set bits in each element's absolute value (uint8)."""
    x = jnp.asarray(as_array_argument(x, "bitwise_count"))
    if x.dtype == np.bool_:
        return x.astype(jnp.uint8)
    if not np.issubdtype(x.dtype, np.integer):
        raise TypeError(f"bitwise_count requires an integer or boolean input, got {x.dtype}")
    width = x.dtype.itemsize
    if np.issubdtype(x.dtype, np.signedinteger):
        x = jnp.absolute(x)
    unsigned = lax.bitcast_convert_type(x, _IR_UNSIGNED[width]) if x.dtype.kind == "i" else x
    count = jnp.zeros(x.shape, dtype=_UNSIGNED[width])
    for bit in range(8 * width):
        count = count + jnp.bitwise_and(jnp.right_shift(unsigned, bit), 1)
    return count.astype(jnp.uint8)
