"""The 16-bit floats (f16, bf16) as XLA's CPU backend runs them: every arithmetic op computes in
f32 and rounds its results back, so ``(x * y + z) * w`` in bf16 rounds after each op, and a
matmul or a sum accumulates in f32 and rounds once. The reference implementations of the ops
listed here are wrapped so (``computing_in_float32``); lowering runs their f32 kernels between
converts (``in_float32``). Data movement (layout, indexing, select, convert) runs on the narrow
values themselves.
"""

from __future__ import annotations

import functools

import numpy as np

from .core import Op, Value
from .dtypes import NARROW_FLOATS, to_numpy
from .ops import elementwise, indexing, reductions, windows

# NOTE: integer_pow and logistic stay narrow: JAX lowers them to multiplies, and to
# 1 / (1 + exp(-x)), in the operand's type, each op rounded. nextafter steps in the narrow
# type's own ulps.
_ELEMENTWISE = tuple(name for name in elementwise.UNARY_FLOAT_OPS if name != "logistic") + (
    elementwise.UNARY_NUMERIC_OPS + elementwise.BINARY_NUMERIC_OPS
    + ("pow", "atan2", "fma", "round", "is_finite", "compare", "clamp")
)
COMPUTED_IN_FLOAT32: frozenset[str] = frozenset(_ELEMENTWISE + reductions.OPS + windows.OPS + ("dot_general",))
# The ops whose kernels are Numba loops, which know no 16-bit floats: with them they run their
# reference implementations (a scatter_add of bf16 rounds after every update there, as XLA's).
NUMBA_KERNEL_OPS: frozenset[str] = frozenset(("gather", "dynamic_slice", "dynamic_update_slice") + indexing.SCATTERS)
_NARROW_NUMPY = frozenset(to_numpy(name) for name in NARROW_FLOATS)
_FLOAT32 = np.dtype(np.float32)


def has_narrow_float(op: Op) -> bool:
    """Whether an operand or result of ``op`` is a 16-bit float."""
    return any(value.type.dtype in NARROW_FLOATS for value in op.operands + op.results)


def involves_narrow_float(op: Op) -> bool:
    """Whether ``op`` is computed in f32 for a narrow float operand or result."""
    return op.name in COMPUTED_IN_FLOAT32 and has_narrow_float(op)


def _widened_attrs(attrs) -> dict:
    attrs = dict(attrs)
    if attrs.get("preferred_element_type") in NARROW_FLOATS:
        attrs["preferred_element_type"] = "f32"
    return attrs


def widened_op(op: Op) -> Op:
    """``op`` with its narrow float operands, results and dtype attributes in f32: the op whose
    kernel computes it."""
    return Op(op.name, tuple(_widened(value) for value in op.operands), tuple(_widened(value) for value in op.results),
              _widened_attrs(op.attrs), op.regions, op.shardings, op.location)


def _widened(value: Value) -> Value:
    if value.type.dtype not in NARROW_FLOATS:
        return value
    return Value(value.id, value.type.with_dtype("f32"), value.hint)


def _widen(array: np.ndarray) -> np.ndarray:
    return array.astype(_FLOAT32) if array.dtype in _NARROW_NUMPY else array


def computing_in_float32(implementation):
    """A reference implementation that, given a narrow float operand, computes in f32 and
    rounds its f32 results to that dtype (or to a dot's ``preferred_element_type``). It keeps
    the implementation's attributes (``numpy_function``, which the kernels of other dtypes call
    directly)."""

    @functools.wraps(implementation)
    def run(attrs, *operands):
        narrow = next((array.dtype for array in operands if array.dtype in _NARROW_NUMPY), None)
        if narrow is None:
            return implementation(attrs, *operands)
        results = implementation(_widened_attrs(attrs), *(_widen(array) for array in operands))
        target = to_numpy(attrs["preferred_element_type"]) if "preferred_element_type" in attrs else narrow
        return tuple(result.astype(target) if result.dtype == _FLOAT32 else result for result in results)

    return run


def in_float32(function, op: Op):
    """``function`` (arrays to a tuple of arrays) run on f32 copies of the narrow float arrays,
    its results rounded to ``op``'s result dtypes."""
    targets = tuple(to_numpy(value.type.dtype) for value in op.results)

    def run(*arrays):
        results = function(*(_widen(array) for array in arrays))
        return tuple(np.asarray(result).astype(target, copy=False) for result, target in zip(results, targets))

    return run
