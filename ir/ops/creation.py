"""The creation ops, iota and constant: results built from attributes alone."""

from __future__ import annotations

import math

import numpy as np

from ..core import DenseAttr
from ..dtypes import to_numpy
from ..reference import reference_impls
from ..shape_rules import (
    NUMERIC,
    check_dim,
    choice_attr,
    expect_operand_count,
    fail,
    int_attr,
    ints_attr,
    shape_rules,
    typed_attr,
)
from ..types import TensorType

OPS = ("iota", "constant")

# --- creation --------------------------------------------------------------------------------


@shape_rules.register("iota")
def _iota(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 0)
    dtype = choice_attr(op, attrs, "dtype", NUMERIC)
    shape = ints_attr(op, attrs, "shape", minimum=0)
    check_dim(op, "dimension", int_attr(op, attrs, "dimension"), len(shape))
    return (TensorType(shape, dtype),)


@shape_rules.register("constant")
def _constant(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 0)
    value = typed_attr(op, attrs, "value", DenseAttr, "a DenseAttr")
    expected_bytes = math.prod(value.type.shape) * to_numpy(value.type.dtype).itemsize
    if len(value.data) != expected_bytes:
        fail(op, f"value holds {len(value.data)} bytes but {value.type} needs {expected_bytes}")
    return (value.type,)


# --- reference implementations ------------------------------------------------------------

# --- creation --------------------------------------------------------------------------------


@reference_impls.register("iota")
def _iota(attrs, *operands):
    shape, dimension = attrs["shape"], attrs["dimension"]
    values = np.arange(shape[dimension], dtype=to_numpy(attrs["dtype"]))
    along = [1] * len(shape)
    along[dimension] = shape[dimension]
    return (np.broadcast_to(values.reshape(along), shape).copy(),)


@reference_impls.register("constant")
def _constant(attrs, *operands):
    return (attrs["value"].array,)
