"""``lax.Precision`` and the check of the ``precision`` arguments of the products and convolutions.

On CPU every float32 product is computed in float32 whatever the precision (as XLA's CPU backend
does), so a precision changes no value; it is still checked, so that a misspelt one fails as it
does in JAX.
"""

from __future__ import annotations

import enum


class Precision(enum.Enum):
    """A product's requested precision: ``DEFAULT`` (fastest), ``HIGH`` or ``HIGHEST``."""

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value):
        return _BY_NAME.get(value) if isinstance(value, str) else None

    def __str__(self) -> str:
        return self.name


_BY_NAME = {
    "default": Precision.DEFAULT, "fastest": Precision.DEFAULT, "bfloat16": Precision.DEFAULT,
    "high": Precision.HIGH, "bfloat16_3x": Precision.HIGH, "tensorfloat32": Precision.HIGH,
    "highest": Precision.HIGHEST, "float32": Precision.HIGHEST,
}


def _one(value) -> bool:
    return value is None or isinstance(value, Precision) or (isinstance(value, str) and value in _BY_NAME)


def check_precision(precision) -> None:
    """Raise JAX's ValueError unless ``precision`` is None, a name, a Precision or a pair of them."""
    if _one(precision):
        return
    if isinstance(precision, tuple) and len(precision) == 2 and all(_one(part) for part in precision):
        return
    raise ValueError(
        f"Precision argument must be one of:\n- None,\n- a string in {[*_BY_NAME, None]},\n"
        f"- a lax.Precision value,\n- a tuple of two lax.Precision values or strings; got {precision!r}"
    )
