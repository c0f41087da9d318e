"""Tensor types: a static shape and an element type."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .dtypes import DTYPES


@dataclass(frozen=True, slots=True)
class TensorType:
    """A ranked tensor type such as ``f32[8,16]``; ``f32[]`` is a scalar."""

    shape: tuple[int, ...]
    dtype: str

    def __post_init__(self):
        if self.dtype not in DTYPES:
            raise ValueError(f"unknown dtype {self.dtype!r}; expected one of {', '.join(DTYPES)}")
        if not isinstance(self.shape, tuple) or any(
            not isinstance(size, int) or isinstance(size, bool) or size < 0 for size in self.shape
        ):
            raise ValueError(f"shape must be a tuple of non-negative ints, got {self.shape!r}")

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def with_shape(self, shape) -> TensorType:
        return TensorType(tuple(shape), self.dtype)

    def with_dtype(self, dtype: str) -> TensorType:
        return TensorType(self.shape, dtype)

    def __str__(self) -> str:
        return f"{self.dtype}[{','.join(str(size) for size in self.shape)}]"
