"""jax.numpy's scalar types (``jnp.float32`` and friends): usable wherever a dtype is expected
(numpy reads their ``dtype``) and callable to cast a value, traced or not, to that dtype."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from .creation import array

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "bool",
    "bool_",
    "bfloat16",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
    "float_",
    "int8",
    "int16",
    "int32",
    "int64",
    "int_",
    "uint",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
)


class _ScalarType(type):
    """The metaclass of the scalar types: calling one casts, like ``jnp.float32(x)``."""

    def __call__(cls, value):
        return array(value, dtype=cls.dtype)

    def __repr__(cls) -> str:
        return f"meshjit.numpy.{cls.__name__}"


def _scalar_type(name: str, dtype) -> type:
    return _ScalarType(name, (), {"dtype": np.dtype(dtype), "__doc__": f"The {name} scalar type."})


bool_ = _scalar_type("bool_", np.bool_)
bool = bool_  # noqa: A001 - the Array API standard's name for jax.numpy's bool_
int8 = _scalar_type("int8", np.int8)
int16 = _scalar_type("int16", np.int16)
int32 = _scalar_type("int32", np.int32)
int64 = _scalar_type("int64", np.int64)
uint8 = _scalar_type("uint8", np.uint8)
uint16 = _scalar_type("uint16", np.uint16)
uint32 = _scalar_type("uint32", np.uint32)
uint64 = _scalar_type("uint64", np.uint64)
float16 = _scalar_type("float16", np.float16)
bfloat16 = _scalar_type("bfloat16", ml_dtypes.bfloat16)
float32 = _scalar_type("float32", np.float32)
float64 = _scalar_type("float64", np.float64)
complex64 = _scalar_type("complex64", np.complex64)
complex128 = _scalar_type("complex128", np.complex128)

# numpy's default-width aliases, as in JAX (64-bit; stored in 32 bits without x64).
float_ = float64
int_ = int64
uint = uint64
