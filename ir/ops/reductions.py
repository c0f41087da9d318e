"""The reductions (reduce_*, argmax, argmin) and the cumulative scans (cumsum, cumprod, cummax,
cummin) along dims."""

from __future__ import annotations

import numpy as np

from ..dtypes import kind_of, to_numpy
from ..reference import reference_impls
from ..shape_rules import (
    BOOL_OR_INT,
    INTS,
    NUMERIC,
    NUMERIC_OR_COMPLEX,
    bool_attr,
    check_dim,
    check_dims,
    choice_attr,
    expect_dtype,
    expect_operand_count,
    fail,
    int_attr,
    ints_attr,
    shape_rules,
)
from ..types import TensorType

# fmt: off
OPS = (
    "reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or",
    "argmax", "argmin", "cumsum", "cumprod", "cummax", "cummin",
)
# fmt: on

# --- reductions, scans, sort and gather ------------------------------------------------------


def _reduction_rule(allowed: tuple[str, ...]):
    def rule(op, operands, attrs, regions, meshes):
        expect_operand_count(op, operands, 1)
        (operand,) = operands
        expect_dtype(op, "operand 0", operand, allowed)
        axes = ints_attr(op, attrs, "axes")
        check_dims(op, "axes", axes, operand.rank)
        return (operand.with_shape(s for dim, s in enumerate(operand.shape) if dim not in axes),)

    return rule


shape_rules.register("reduce_max", "reduce_min")(_reduction_rule(NUMERIC))
shape_rules.register("reduce_sum", "reduce_prod")(_reduction_rule(NUMERIC_OR_COMPLEX))
shape_rules.register("reduce_and", "reduce_or")(_reduction_rule(BOOL_OR_INT))


@shape_rules.register("argmax", "argmin")
def _arg_reduction(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 1)
    (operand,) = operands
    axis = int_attr(op, attrs, "axis")
    check_dim(op, "axis", axis, operand.rank)
    index_dtype = choice_attr(op, attrs, "index_dtype", INTS)
    if operand.shape[axis] == 0:
        fail(op, f"axis {axis} of {operand} is empty; {op} needs at least one element")
    shape = operand.shape[:axis] + operand.shape[axis + 1 :]
    return (TensorType(shape, index_dtype),)


@shape_rules.register("cumsum", "cumprod", "cummax", "cummin")
def _cumulative(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 1)
    expect_dtype(op, "operand 0", operands[0], NUMERIC_OR_COMPLEX if op in ("cumsum", "cumprod") else NUMERIC)
    check_dim(op, "axis", int_attr(op, attrs, "axis"), operands[0].rank)
    bool_attr(op, attrs, "reverse")
    return (operands[0],)


# --- reference implementations ------------------------------------------------------------

# --- reductions and scans --------------------------------------------------------------------


def _lowest(dtype: np.dtype):
    return -np.inf if kind_of(dtype) == "f" else np.iinfo(dtype).min


def _highest(dtype: np.dtype):
    return np.inf if kind_of(dtype) == "f" else np.iinfo(dtype).max


# Each reduces over a tuple of axes; the initial values make empty reductions well defined,
# and bitwise and/or act as logical and/or on bool.
_REDUCTIONS = {
    "reduce_sum": lambda x, axes: np.sum(x, axis=axes, dtype=x.dtype),
    "reduce_prod": lambda x, axes: np.prod(x, axis=axes, dtype=x.dtype),
    "reduce_max": lambda x, axes: np.max(x, axis=axes, initial=_lowest(x.dtype)),
    "reduce_min": lambda x, axes: np.min(x, axis=axes, initial=_highest(x.dtype)),
    "reduce_and": lambda x, axes: np.bitwise_and.reduce(x, axis=axes),
    "reduce_or": lambda x, axes: np.bitwise_or.reduce(x, axis=axes),
}


def _reduction(function):
    def impl(attrs, operand):
        with np.errstate(all="ignore"):
            reduced = function(operand, tuple(attrs["axes"]))
        return (np.asarray(reduced, dtype=operand.dtype),)

    return impl


for _name, _function in _REDUCTIONS.items():
    reference_impls.register(_name)(_reduction(_function))


def _arg_reduction(function):
    # numpy's argmax and argmin return the first occurrence and treat NaN as the extreme value,
    # so the first NaN wins, as in jnp.
    def impl(attrs, operand):
        indices = function(operand, axis=attrs["axis"])
        return (np.asarray(indices, dtype=to_numpy(attrs["index_dtype"])),)

    return impl


reference_impls.register("argmax")(_arg_reduction(np.argmax))
reference_impls.register("argmin")(_arg_reduction(np.argmin))


def _cumulative(ufunc):
    def impl(attrs, operand):
        axis = attrs["axis"]
        ordered = np.flip(operand, axis) if attrs["reverse"] else operand
        with np.errstate(all="ignore"):
            result = ufunc.accumulate(ordered, axis=axis, dtype=operand.dtype)
        return (np.flip(result, axis) if attrs["reverse"] else result,)

    return impl


_SCANS = {"cumsum": np.add, "cumprod": np.multiply, "cummax": np.maximum, "cummin": np.minimum}
for _name, _ufunc in _SCANS.items():
    reference_impls.register(_name)(_cumulative(_ufunc))
