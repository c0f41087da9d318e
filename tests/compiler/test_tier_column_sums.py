"""Float sums and products over the leading dims on the first tier (tier_reductions.py): each
column's rows combined one after another from the identity, the order of their ``columns``
kernel (codegen_reductions.py), for any number of columns and any layout in memory; numpy's
reduce gives it only where two or more columns lie innermost, so these check both of its paths.

The expected bits come from the rows combined one at a time in numpy (vectorised over columns,
no reduce), not from the CPU."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from meshjit.compiler.lowering.tier_reductions import reduction_kernel
from tier_helpers import bits


def _op(name: str, dtype: str, axes: tuple[int, ...]):
    """What ``reduction_kernel`` reads of a reduction op."""
    return SimpleNamespace(name=name, attrs={"axes": axes}, result=SimpleNamespace(type=SimpleNamespace(dtype=dtype)))


def _in_order(operand: np.ndarray, name: str) -> np.ndarray:
    """``operand`` (lead 1, then the rows, then the columns) combined over the rows one row at a time."""
    total = np.full((operand.shape[0],) + operand.shape[2:], 1 if name == "reduce_prod" else 0, operand.dtype)
    for row in range(operand.shape[1]):
        total = total * operand[:, row] if name == "reduce_prod" else total + operand[:, row]
    return total


@pytest.mark.parametrize("name", ["reduce_sum", "reduce_prod"])
@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("shape", [(2, 3000, 1), (1, 3000, 2), (2, 500, 3), (1, 4096, 64), (2, 300, 1000), (1, 5000)])
@pytest.mark.parametrize("layout", ["C", "F"])
def test_first_tier_combines_each_columns_rows_in_order(name, dtype, shape, layout):
    rng = np.random.default_rng(sum(shape))
    numpy_dtype = np.float32 if dtype == "f32" else np.float64
    if name == "reduce_prod":
        operand = (1.0 + rng.standard_normal(shape) * 1e-3).astype(numpy_dtype)
    else:
        operand = (rng.standard_normal(shape) * 10.0 ** rng.integers(-6, 7, shape)).astype(numpy_dtype)
    operand = np.asfortranarray(operand) if layout == "F" else operand
    (result,) = reduction_kernel(_op(name, dtype, (0,)), 1, True)(operand)
    assert result.dtype == numpy_dtype
    assert bits(result) == bits(_in_order(operand, name))


def test_first_tier_column_sum_of_negative_zeros_is_the_kernels_positive_zero():
    operand = np.full((1, 100, 3), -0.0, np.float32)
    (result,) = reduction_kernel(_op("reduce_sum", "f32", (0,)), 1, True)(operand)
    assert not np.signbit(result).any()
    (single,) = reduction_kernel(_op("reduce_sum", "f32", (0,)), 1, True)(operand[:, :, :1])
    assert not np.signbit(single).any()
