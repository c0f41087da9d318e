"""The record type of the meshjit.numpy differential tables, and random inputs from specs.

A record's function takes the numpy-like module first (``meshjit.numpy``, or ``numpy`` for the
reference), so most rows need no separate reference. This file imports only numpy, so the same
tables can be checked against jax.numpy itself where JAX is installed.
"""

from __future__ import annotations

import re
import warnings
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

_SPEC = re.compile(r"^(bool|i8|i16|i32|i64|u8|u16|u32|u64|f32|f64)\[([0-9,]*)\]$")
_NUMPY = {"bool": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8,
          "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "f32": np.float32, "f64": np.float64}


@dataclass(frozen=True)
class Input:
    """A random input: an IR type spec like ``"f32[3,4]"`` and the range of its values."""

    spec: str
    low: float | None = None
    high: float | None = None

    def sample(self, rng: np.random.Generator) -> np.ndarray:
        match = _SPEC.match(self.spec.replace(" ", ""))
        if match is None:
            raise ValueError(f"bad array spec {self.spec!r}; expected e.g. 'f32[3,4]'")
        dtype, dims = match.group(1), match.group(2)
        shape = tuple(int(size) for size in dims.split(",") if size)
        if dtype == "bool":
            return rng.random(shape) < 0.5
        if dtype.startswith("u"):
            low = 0 if self.low is None else int(self.low)
            high = 9 if self.high is None else int(self.high)
            return rng.integers(low, high + 1, size=shape).astype(_NUMPY[dtype])
        if dtype.startswith("i"):
            low = -5 if self.low is None else int(self.low)
            high = 5 if self.high is None else int(self.high)
            return rng.integers(low, high + 1, size=shape).astype(_NUMPY[dtype])
        low = -2.0 if self.low is None else self.low
        high = 2.0 if self.high is None else self.high
        return rng.uniform(low, high, size=shape).astype(_NUMPY[dtype])


def inputs(*specs) -> tuple[Input, ...]:
    """``inputs("f32[3]", ("i32[3]", 1, 5))``: Inputs from specs or (spec, low, high) triples."""
    return tuple(Input(spec) if isinstance(spec, str) else Input(*spec) for spec in specs)


@dataclass(frozen=True)
class Record:
    """One differential test: ``function(module, *arrays)`` with module meshjit.numpy must give
    ``dtype`` (one IR dtype name, or one per output leaf) and the values of the reference
    (``reference(numpy, *arrays)``, by default the function itself run on numpy)."""

    name: str
    function: Callable
    args: tuple[Input, ...]
    dtype: str | tuple[str, ...]
    reference: Callable | None = None
    rtol: float = 1e-5
    atol: float = 1e-6
    x64: bool = False
    # Uses Python operators or methods on its arguments, which need meshjit arrays eagerly.
    operators: bool = False
    tags: tuple[str, ...] = field(default_factory=tuple)

    def sample(self, seed: int = 0) -> list[np.ndarray]:
        rng = np.random.default_rng(zlib.crc32(self.name.encode()) + seed)
        return [arg.sample(rng) for arg in self.args]

    def expected(self, arrays):
        reference = self.reference or self.function
        # The references compute NaNs and infinities on purpose (empty means, log of negatives).
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return reference(np, *arrays)

    def __str__(self) -> str:
        return self.name + (" [x64]" if self.x64 else "")
