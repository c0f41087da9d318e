"""``jax.dtypes``: float0, the abstract key dtypes, and dtype queries on JAX's lattice.

``float0`` is the dtype of the tangents and cotangents of integer and boolean values: a
zero-width structured numpy dtype, so such arrays hold no data. ``vjp`` returns them for integer
primals, ``jvp`` and ``linearize`` take and return them, and ``grad(..., allow_int=True)`` gives
them for integer arguments, as in JAX.
"""

from __future__ import annotations

import numpy as np

from meshjit.compiler.frontend.numpy_api.array_api_dtypes import finfo, iinfo, result_type
from meshjit.compiler.frontend.operands import x64
from meshjit.ir.dtypes import canonicalize, kind_of, to_numpy

from ._prng_keys import KeyDType

__all__ = (
    "TypePromotionError",
    "canonicalize_dtype",
    "extended",
    "finfo",
    "float0",
    "iinfo",
    "issubdtype",
    "itemsize_bits",
    "prng_key",
    "result_type",
    "scalar_type_of",
)

float0 = np.dtype([("float0", np.void, 0)])


class TypePromotionError(ValueError):
    """Raised where JAX's promotion refuses a pair of dtypes."""


class extended:  # noqa: N801 - JAX's name
    """Abstract parent of the dtypes that are not numpy's (typed PRNG keys)."""


class prng_key(extended):  # noqa: N801 - JAX's name
    """Abstract dtype of typed PRNG key arrays: ``issubdtype(key.dtype, prng_key)`` is True."""


def issubdtype(a, b) -> bool:
    """numpy's ``issubdtype``, extended to key dtypes (under ``prng_key`` and ``extended``)
    and to ``float0`` (a dtype of its own, under no numeric kind)."""
    if isinstance(a, KeyDType) or a is prng_key or a is extended:
        parents = {extended, prng_key} if a is not extended else {extended}
        return b in parents or isinstance(b, KeyDType)
    if isinstance(b, KeyDType) or b in (extended, prng_key):
        return False
    if np.dtype(a) == float0:
        return _is_float0(b)
    if np.dtype(a) == _BFLOAT16:
        # ml_dtypes' bfloat16 is a numpy scalar type outside numpy's hierarchy; JAX puts it
        # under floating
        return b in _FLOAT_PARENTS or _is_bfloat16(b)
    return bool(np.issubdtype(a, b))


_BFLOAT16 = to_numpy("bf16")
_FLOAT_PARENTS = (np.floating, np.inexact, np.number, np.generic)


def _is_bfloat16(value) -> bool:
    try:
        return np.dtype(value) == _BFLOAT16
    except TypeError:
        return False


def _is_float0(value) -> bool:
    try:
        return np.dtype(value) == float0
    except TypeError:
        return False


def canonicalize_dtype(dtype, allow_extended_dtype: bool = False):
    """The dtype meshjit stores for ``dtype``: 64-bit types narrow to 32 bits without x64."""
    if isinstance(dtype, KeyDType):
        if not allow_extended_dtype:
            raise ValueError(f"Internal: canonicalize_dtype called on extended dtype {dtype}")
        return dtype
    return canonicalize(dtype, x64=x64())


def scalar_type_of(x) -> type:
    """The Python scalar type (bool, int, float or complex) whose kind ``x``'s dtype has."""
    kind = kind_of(x.dtype if hasattr(x, "dtype") else np.result_type(x))
    return {"b": bool, "i": int, "u": int, "f": float, "c": complex}[kind]


def itemsize_bits(dtype) -> int:
    """The bits one element of ``dtype`` occupies (a bool counts 8, as it is stored)."""
    return np.dtype(dtype).itemsize * 8
