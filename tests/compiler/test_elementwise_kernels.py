"""The elementwise kernels that call numpy directly (no errstate of their own, no asarray where
a ufunc keeps the dtype) give what the reference implementation gives, as arrays of its dtype,
on unsharded scalars and on plan buffers with leading mesh dims."""

from __future__ import annotations

import numpy as np
import pytest
from meshjit.compiler.rules import kernel_rules
from meshjit.compiler.rules.elementwise_kernels import _keeps_dtype
from meshjit.ir import Op, TensorType, Value
from meshjit.ir.reference import reference_impls
from meshjit.runtime.float_errors import quiet_float_errors, restore_float_errors

CASES = [("add", "f32", 2), ("sub", "i32", 2), ("mul", "i32", 2), ("max", "f32", 2), ("and", "bool", 2),
         ("pow", "f32", 2), ("div", "i32", 2), ("neg", "f32", 1), ("exp", "f32", 1), ("not", "bool", 1),
         ("sign", "f32", 1), ("abs", "i32", 1)]


def _values(dtype: str, shape, rng):
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype == "i32":
        return rng.integers(-5, 6, shape).astype(np.int32)
    return np.float32(1e30) * rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("name, dtype, arity", CASES)
@pytest.mark.parametrize("shape, lead", [((), 0), ((), 1), ((3, 2), 0), ((3, 2), 2)])
def test_direct_kernels_equal_the_reference(name, dtype, arity, shape, lead):
    value_type = TensorType(shape, dtype)
    op = Op(name, tuple(Value.fresh(value_type) for _ in range(arity)), (Value.fresh(value_type),), {})
    rng = np.random.default_rng(arity)
    buffers = [_values(dtype, (2,) * lead + shape, rng) for _ in range(arity)]
    kernel = kernel_rules[name](op, lead)
    single = getattr(kernel, "single_output", None)
    quiet = quiet_float_errors()
    try:
        (got,) = kernel(*buffers)
        # NOTE: what the plan function calls instead, when the kernel names it
        direct = got if single is None else single(*buffers)
    finally:
        restore_float_errors(quiet)
    (want,) = reference_impls[name]({}, *buffers)
    for result in (got, direct):
        assert type(result) is np.ndarray and result.dtype == want.dtype and result.shape == want.shape
        np.testing.assert_array_equal(result, want)
    if name == "add" and lead + len(shape) > 0:
        assert single is np.add


def test_only_ufuncs_that_keep_the_dtype_skip_the_conversion():
    assert _keeps_dtype(np.add, 2, np.dtype(np.float32)) and _keeps_dtype(np.invert, 1, np.dtype(np.bool_))
    assert not _keeps_dtype(np.abs, 1, np.dtype(np.complex64))  # complex abs is real
    assert not _keeps_dtype(np.divide, 2, np.dtype(np.int32))  # true division of ints is float
    assert not _keeps_dtype(np.sign, 1, np.dtype(np.str_))  # no loop for the dtype
    assert not _keeps_dtype(lambda x: x, 1, np.dtype(np.float32))  # not a ufunc


# NOTE: the shape rule refuses negative exponents of ints
POWERS = [("f32", exponent) for exponent in (-3, -2, -1, 0, 1, 2, 3, 5, 8)] + [("i32", e) for e in (0, 1, 2, 3, 5, 8)]


@pytest.mark.parametrize("dtype, exponent", POWERS)
@pytest.mark.parametrize("shape, lead", [((), 0), ((3, 2), 1)])
def test_integer_pow_kernel_equals_the_reference(dtype, exponent, shape, lead):
    value_type = TensorType(shape, dtype)
    attrs = {"y": exponent}
    op = Op("integer_pow", (Value.fresh(value_type),), (Value.fresh(value_type),), attrs)
    operand = _values(dtype, (2,) * lead + shape, np.random.default_rng(exponent + 10))
    if dtype == "f32":
        operand = np.concatenate([operand.ravel()[:-3], [np.nan, -0.0, 3e-20]]).astype(np.float32).reshape(
            operand.shape) if operand.size >= 4 else np.float32(1.7).reshape(operand.shape)
    quiet = quiet_float_errors()
    try:
        (got,) = kernel_rules["integer_pow"](op, lead)(operand)
    finally:
        restore_float_errors(quiet)
    (want,) = reference_impls["integer_pow"](attrs, operand)
    assert type(got) is np.ndarray and got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
