"""dot_general, the contraction: batch, contracting and free dims of two operands."""

from __future__ import annotations

import math

import numpy as np

from ..dtypes import from_numpy, is_complex, is_float, to_numpy
from ..reference import reference_impls
from ..shape_rules import (
    NUMERIC_OR_COMPLEX,
    check_dims,
    expect_dtype,
    expect_operand_count,
    fail,
    is_int,
    required_attr,
    shape_rules,
)
from ..types import TensorType

OPS = ("dot_general",)

# --- contraction -----------------------------------------------------------------------------


def _dims_pair(op: str, attrs, name: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    value = required_attr(op, attrs, name)
    if not (
        isinstance(value, tuple)
        and len(value) == 2
        and all(isinstance(side, tuple) and all(is_int(d) for d in side) for side in value)
    ):
        fail(op, f"attribute {name!r} must be a pair ((lhs dims..), (rhs dims..)), got {value!r}")
    if len(value[0]) != len(value[1]):
        fail(op, f"{name} {value} must list as many lhs dims as rhs dims")
    return value


def _dot_result_dtype(op: str, operand_dtype: str, attrs) -> str:
    preferred = attrs.get("preferred_element_type", operand_dtype)
    if preferred not in NUMERIC_OR_COMPLEX:
        fail(op, f"preferred_element_type must be one of {', '.join(NUMERIC_OR_COMPLEX)}, got {preferred!r}")
    if is_float(operand_dtype) and not is_float(preferred):
        fail(op, f"preferred_element_type {preferred} cannot hold {operand_dtype} products")
    if is_complex(operand_dtype) and not is_complex(preferred):
        fail(op, f"preferred_element_type {preferred} cannot hold {operand_dtype} products")
    return preferred


@shape_rules.register("dot_general")
def _dot_general(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 2)
    lhs, rhs = operands
    expect_dtype(op, "lhs", lhs, NUMERIC_OR_COMPLEX)
    if rhs.dtype != lhs.dtype:
        fail(op, f"operands must have equal dtypes, got lhs {lhs} and rhs {rhs}")
    contracting = _dims_pair(op, attrs, "contracting_dims")
    batch = _dims_pair(op, attrs, "batch_dims")
    for side, (name, operand) in enumerate((("lhs", lhs), ("rhs", rhs))):
        used = contracting[side] + batch[side]
        check_dims(op, f"{name} contracting and batch dims", used, operand.rank)
    for kind, (lhs_dims, rhs_dims) in (("contracting", contracting), ("batch", batch)):
        for lhs_dim, rhs_dim in zip(lhs_dims, rhs_dims):
            if lhs.shape[lhs_dim] != rhs.shape[rhs_dim]:
                fail(
                    op,
                    f"{kind} dim {lhs_dim} of lhs has size {lhs.shape[lhs_dim]} but {kind} "
                    f"dim {rhs_dim} of rhs has size {rhs.shape[rhs_dim]}",
                )
    shape = tuple(lhs.shape[dim] for dim in batch[0])
    for side, operand in enumerate(operands):
        used = contracting[side] + batch[side]
        shape += tuple(size for dim, size in enumerate(operand.shape) if dim not in used)
    return (TensorType(shape, _dot_result_dtype(op, lhs.dtype, attrs)),)


# --- reference implementations ------------------------------------------------------------

# --- contraction -----------------------------------------------------------------------------


def _group_dims(array: np.ndarray, *groups) -> np.ndarray:
    """Transpose ``array`` so that the dim groups come in order, then merge each group."""
    order = [dim for group in groups for dim in group]
    sizes = [math.prod(array.shape[dim] for dim in group) for group in groups]
    return np.transpose(array, order).reshape(sizes)


@reference_impls.register("dot_general")
def _dot_general(attrs, lhs, rhs):
    lhs_contracting, rhs_contracting = attrs["contracting_dims"]
    lhs_batch, rhs_batch = attrs["batch_dims"]
    dtype = to_numpy(attrs.get("preferred_element_type", from_numpy(lhs.dtype)))
    lhs_free = [dim for dim in range(lhs.ndim) if dim not in lhs_contracting + lhs_batch]
    rhs_free = [dim for dim in range(rhs.ndim) if dim not in rhs_contracting + rhs_batch]
    # As (batch, free, contracting) @ (batch, contracting, free), computed in the result dtype.
    lhs_matrices = _group_dims(lhs.astype(dtype), lhs_batch, lhs_free, lhs_contracting)
    rhs_matrices = _group_dims(rhs.astype(dtype), rhs_batch, rhs_contracting, rhs_free)
    with np.errstate(all="ignore"):
        product = np.matmul(lhs_matrices, rhs_matrices)
    shape = [lhs.shape[dim] for dim in lhs_batch + tuple(lhs_free)]
    shape += [rhs.shape[dim] for dim in rhs_free]
    return (product.reshape(shape),)
