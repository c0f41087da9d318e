"""What the lax and numpy layers accept as an array, and how to read its shape and dtype."""

from __future__ import annotations

import numpy as np
from meshjit.ir.config import config
from meshjit.ir.dtypes import canonicalize, from_numpy, kind_of, to_numpy

from .promotion import DType, python_scalar_dtype
from .trace import Tracer, is_concrete_array


def x64() -> bool:
    return config.read("jax_enable_x64")


def is_python_scalar(value) -> bool:
    return type(value) in (bool, int, float, complex)


def dtype_of(value) -> DType:
    """The IR dtype and weak flag of any accepted array-like."""
    if isinstance(value, Tracer):
        return DType(value.ir_dtype, value.weak_type)
    if is_python_scalar(value):
        return python_scalar_dtype(value, x64())
    if is_concrete_array(value):
        return DType(from_numpy(value.dtype), bool(getattr(value, "weak_type", False)))
    if isinstance(value, np.ndarray):
        return DType(from_numpy(canonical_numpy(value).dtype))
    return DType(from_numpy(canonical_numpy(value).dtype))


def shape_of(value) -> tuple[int, ...]:
    if isinstance(value, Tracer) or is_concrete_array(value):
        return tuple(value.shape)
    return np.shape(value)


def canonical_numpy(value, dtype: str | None = None) -> np.ndarray:
    """A numpy constant with JAX's canonical dtype (or the given IR dtype)."""
    if isinstance(value, (list, tuple)) and any(isinstance(item, Tracer) for item in np.ravel(np.asarray(value, dtype=object))):
        raise TypeError("a list containing traced values cannot become a constant; use meshjit.numpy.stack")
    if is_python_scalar(value) and dtype is None:
        dtype = python_scalar_dtype(value, x64()).name
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as error:
        raise TypeError(f"cannot interpret {type(value).__name__} as an array: {error}") from None
    if kind_of(array.dtype) not in "biufc":
        raise TypeError(f"dtype {array.dtype} of {type(value).__name__} is not supported; expected a numeric or bool array")
    if dtype is not None:
        return array.astype(to_numpy(dtype), copy=False)
    return array.astype(canonicalize(array.dtype, x64=x64()), copy=False)


def as_operand(value, dtype: str | None = None):
    """Tracers and device arrays pass through; anything else becomes a canonical numpy constant."""
    if isinstance(value, Tracer) or is_concrete_array(value):
        return value
    return canonical_numpy(value, dtype)


def is_array_like(value) -> bool:
    return isinstance(value, (Tracer, np.ndarray, np.generic)) or is_concrete_array(value) or is_python_scalar(value)
