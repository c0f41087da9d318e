"""What the bit-exact math tests share: a result compared with JAX's bit for bit (any NaN equals
any NaN), and the names of a compiled program's steps."""

from __future__ import annotations

import numpy as np

_WORDS = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def assert_same_bits(label: str, got, expected: np.ndarray, inputs: np.ndarray | None = None) -> None:
    """``got`` has ``expected``'s dtype and bits; a failure shows the first differing positions
    (and the ``inputs`` there, when given)."""
    got = np.asarray(got)
    assert got.dtype == expected.dtype, label
    words = _WORDS[got.dtype.itemsize]
    nan = np.isnan(got.astype(np.float32)) & np.isnan(expected.astype(np.float32))
    where = np.flatnonzero((got.view(words) != expected.view(words)) & ~nan)
    at = where[:5] if inputs is None else inputs[where[:5] % inputs.size]
    assert where.size == 0, f"{label}: {where.size} differ, e.g. at {at}: {got[where[:5]]} vs {expected[where[:5]]}"


def step_names(compiled) -> list[str]:
    """The names of ``compiled``'s top-level plan steps."""
    return [getattr(step, "name", "") for step in compiled.runtime_executable().plan.steps]
