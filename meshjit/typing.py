"""``jax.typing``: the annotations JAX's API is written with."""

from __future__ import annotations

from typing import Any, Protocol, Union

import numpy as np

from meshjit.runtime.array import Array

__all__ = ("ArrayLike", "DTypeLike")

# Anything meshjit's functions accept as an array: an Array, a numpy array or a scalar.
ArrayLike = Union[Array, np.ndarray, np.bool_, np.number, bool, int, float, complex]


class SupportsDType(Protocol):
    @property
    def dtype(self) -> np.dtype: ...


# Anything meshjit's functions accept as a dtype.
DTypeLike = Union[str, type[Any], np.dtype, SupportsDType]
