"""The small helpers every autodiff rule shares (symbolic zeros, tangent sums, operand types)
and the op lists read from autodiff's tables (``jvp_rules``, ``transpose_rules``, ... in
``compiler/tables.py``). A tangent or cotangent of ``None`` is a symbolic zero."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from meshjit.ir import TensorType
from meshjit.ir.dtypes import from_numpy, to_numpy


from ...tables import MARKER_OPS, TRANSFORMATION_OPS, jvp_rules, transpose_rules
from ..trace import Tracer, bind

def non_differentiable_ops() -> frozenset[str]:
    """The ops whose results carry no tangent: those whose JVP rule is ``jvp.no_tangent``."""
    from .jvp import no_tangent

    return frozenset(name for name in jvp_rules if jvp_rules[name] is no_tangent)


def linear_ops() -> frozenset[str]:
    """The ops JVP rules apply to tangents: a tangent program is built from these alone, so
    each has a transpose rule for reverse mode (the transpose table is the list)."""
    return frozenset(transpose_rules) - set(MARKER_OPS) - set(TRANSFORMATION_OPS)


@dataclass(frozen=True)
class LinearInput:
    """An operand of a linear op whose cotangent the transpose rule computes (JAX's
    UndefinedPrimal): only its type is known."""

    type: TensorType


def is_float(dtype: str) -> bool:
    """Whether values of ``dtype`` carry tangents: the real floats and the complex types."""
    return dtype in ("f32", "f64", "f16", "bf16", "c64", "c128")


def type_of(value) -> TensorType:
    """The IR type of a Tracer, device array, numpy array or LinearInput."""
    if isinstance(value, Tracer):
        return value.value.type
    if isinstance(value, LinearInput):
        return value.type
    array_dtype = np.asarray(value).dtype if not hasattr(value, "dtype") else value.dtype
    return TensorType(
        tuple(value.shape) if hasattr(value, "shape") else (), from_numpy(array_dtype)
    )


def scalar(value, dtype: str) -> np.ndarray:
    """A 0-d numpy constant of IR dtype ``dtype``."""
    return np.asarray(value, dtype=to_numpy(dtype))


def full(value_type: TensorType, fill) -> Tracer:
    """An array of ``value_type`` filled with ``fill``."""
    attrs = {"shape": value_type.shape, "broadcast_dimensions": ()}
    return bind("broadcast_in_dim", [scalar(fill, value_type.dtype)], attrs)[0]


def zeros(value_type: TensorType) -> Tracer:
    return full(value_type, 0)


def instantiate(tangent, value_type: TensorType):
    """``tangent``, or real zeros of ``value_type`` for a symbolic zero."""
    return zeros(value_type) if tangent is None else tangent


def add_tangents(first, second):
    """The sum of two tangents (or cotangents), either of which may be a symbolic zero."""
    if first is None:
        return second
    if second is None:
        return first
    return bind("add", [first, second])[0]


def single(name: str, operands, attrs=None):
    """Bind a one-result op and return its result."""
    return bind(name, operands, attrs)[0]
