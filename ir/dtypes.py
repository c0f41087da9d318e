"""The IR's element types and their numpy counterparts, and JAX's 64-bit canonicalisation."""

from __future__ import annotations

import ml_dtypes
import numpy as np

# NOTE: the IR knows exactly these element types; every op's rules are written for them.
# The unsigned ones carry random bits and PRNG keys (threefry computes on uint32 words) and
# quantised data, as do the 8- and 16-bit signed ones. The 16-bit floats (f16, and bf16 from
# ml_dtypes) are storage types: ops compute on them in f32 and round each result (see
# NARROW_FLOATS).
DTYPES: tuple[str, ...] = ("bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64", "f16", "bf16")

# NOTE: XLA's CPU backend computes every op on these in f32 and rounds its result back.
NARROW_FLOATS: tuple[str, ...] = ("f16", "bf16")
# Complex numbers: a (real, imaginary) pair of f32 or f64 (docs/complex.md).
COMPLEX_DTYPES: tuple[str, ...] = ("c64", "c128")
DTYPES += COMPLEX_DTYPES

_TO_NUMPY = {
    "bool": np.dtype(np.bool_),
    "i8": np.dtype(np.int8),
    "i16": np.dtype(np.int16),
    "u8": np.dtype(np.uint8),
    "u16": np.dtype(np.uint16),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "u32": np.dtype(np.uint32),
    "u64": np.dtype(np.uint64),
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
    "f16": np.dtype(np.float16),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "c64": np.dtype(np.complex64),
    "c128": np.dtype(np.complex128),
}
_FROM_NUMPY = {value: key for key, value in _TO_NUMPY.items()}

# Without x64, JAX stores every 64-bit type in its 32-bit sibling.
_NARROW_WITHOUT_X64 = {
    np.dtype(np.float64): np.dtype(np.float32),
    np.dtype(np.int64): np.dtype(np.int32),
    np.dtype(np.uint64): np.dtype(np.uint32),
    np.dtype(np.complex128): np.dtype(np.complex64),
}


def to_numpy(dtype: str) -> np.dtype:
    """The numpy dtype of an IR dtype name such as ``"f32"``."""
    try:
        return _TO_NUMPY[dtype]
    except KeyError:
        raise ValueError(f"unknown IR dtype {dtype!r}; expected one of {', '.join(DTYPES)}") from None


def from_numpy(dtype) -> str:
    """The IR dtype name of a numpy dtype; raises TypeError for dtypes the IR does not have."""
    numpy_dtype = np.dtype(dtype)
    try:
        return _FROM_NUMPY[numpy_dtype]
    except KeyError:
        raise TypeError(
            f"dtype {numpy_dtype} is not supported by meshjit programs; "
            f"expected one of bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16, "
            f"float32, float64, complex64, complex128"
        ) from None


def canonicalize(dtype, *, x64: bool) -> np.dtype:
    """JAX's canonical dtype: 64-bit types become 32-bit unless x64 is enabled."""
    numpy_dtype = np.dtype(dtype)
    if x64:
        return numpy_dtype
    return _NARROW_WITHOUT_X64.get(numpy_dtype, numpy_dtype)


def is_float(dtype: str) -> bool:
    return dtype in ("f32", "f64", "f16", "bf16")


def is_int(dtype: str) -> bool:
    """Signed or unsigned integer."""
    return dtype in ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")


def is_unsigned(dtype: str) -> bool:
    return dtype in ("u8", "u16", "u32", "u64")


def kind_of(dtype) -> str:
    """numpy's kind letter of a dtype, with ml_dtypes' bfloat16 (kind "V") a float "f"."""
    numpy_dtype = np.dtype(dtype)
    return "f" if numpy_dtype == _TO_NUMPY["bf16"] else numpy_dtype.kind
def is_complex(dtype: str) -> bool:
    return dtype in COMPLEX_DTYPES


# The real type of a complex one's parts, and the complex type of a real float's pairs.
COMPONENT_DTYPE = {"c64": "f32", "c128": "f64"}
COMPLEX_OF = {"f32": "c64", "f64": "c128"}


def real_dtype(dtype: str) -> str:
    """The dtype of ``real(x)`` and ``abs(x)``: a complex type's parts, any other type itself."""
    return COMPONENT_DTYPE.get(dtype, dtype)
