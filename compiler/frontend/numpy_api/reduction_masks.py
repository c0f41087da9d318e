"""The ``where`` masks and ``initial`` values of jax.numpy's reductions.

A masked-out element is replaced by the reduction's identity (0 for sums, 1 for products, the
lowest value for max, ...), so a mask costs one select before the reduction and shards with it.
"""

from __future__ import annotations

import math

import numpy as np

from .. import lax_ops as lax
from ..operands import dtype_of, shape_of
from ..promotion import is_complex, is_float
from .arguments import as_array_argument, broadcast_to_shape, convert_operand
from meshjit.ir.dtypes import to_numpy


def mask_of(where, operand, function: str):
    """``where`` as a bool mask of ``operand``'s shape (numpy's truthiness for other dtypes)."""
    mask = as_array_argument(where, function)
    if dtype_of(mask).name != "bool":
        mask = lax.ne(convert_operand(mask, dtype_of(mask).name), 0)
    return broadcast_to_shape(mask, shape_of(operand), function)


def with_mask(operand, where, fill, function: str):
    """``operand`` with ``fill`` where ``where`` is False; ``operand`` itself without a mask."""
    if where is None:
        return operand
    filler = lax.full(shape_of(operand), fill, dtype_of(operand).name)
    return lax.select(mask_of(where, operand, function), operand, filler)


def lowest(dtype: str):
    """The identity of max over ``dtype``: -inf (-inf + 0i), the least integer, or False."""
    if dtype == "bool":
        return False
    return -math.inf if is_float(dtype) or is_complex(dtype) else int(np.iinfo(to_numpy(dtype)).min)


def highest(dtype: str):
    """The identity of min over ``dtype``: inf (inf + 0i), the greatest integer, or True."""
    if dtype == "bool":
        return True
    return math.inf if is_float(dtype) or is_complex(dtype) else int(np.iinfo(to_numpy(dtype)).max)


def masked_count(where, operand, axes, function: str, dtype: str):
    """How many elements ``where`` keeps along ``axes``, in ``dtype`` (the reduced shape)."""
    kept = convert_operand(mask_of(where, operand, function), dtype)
    return lax.reduce_sum(kept, axes)
