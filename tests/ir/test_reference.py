"""The numpy reference against the op table's independent oracles: every op, every case, every
dtype it supports (0-d and size-0 arrays included), and random shapes with hypothesis."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from meshjit.ir import Attrs
from meshjit.ir.reference import reference_impls
from op_oracles import NUMPY_DTYPES
from op_records import assert_results_match, instances, rng_for
from op_table import RECORDS, RECORDS_BY_NAME

# A numpy warning escaping a reference implementation fails the test.
pytestmark = pytest.mark.filterwarnings("error")

ORACLE_CASES = [
    pytest.param(record, case, dtype, test_id, id=test_id)
    for record, case, dtype, test_id in instances(RECORDS)
    if record.oracle is not None
]


def run_both(record, attrs, operands):
    actual = reference_impls[record.name](Attrs(attrs), *operands)
    with np.errstate(all="ignore"):
        expected = record.oracle(Attrs(attrs), *operands)
    return actual, expected


@pytest.mark.parametrize("record, case, dtype, test_id", ORACLE_CASES)
def test_reference_matches_oracle(record, case, dtype, test_id):
    attrs = case.attrs_for(dtype)
    operands = record.make(rng_for(test_id), case.shapes, dtype, attrs)
    assert_results_match(*run_both(record, attrs, operands), record)


# --- random shapes ---------------------------------------------------------------------------


def elements(dtype: str, bound: float | None = None):
    """Hypothesis elements of an IR dtype: every int, and floats with NaN and infinities unless
    ``bound`` limits them (so that float sums do not overflow in one order and not another)."""
    if dtype in ("f32", "f64"):
        width = 32 if dtype == "f32" else 64
        if bound is None:
            return st.floats(width=width, allow_subnormal=False)
        return st.floats(-bound, bound, width=width, allow_subnormal=False)
    return None  # hypothesis's default covers the whole range of ints and bools


@st.composite
def operands_of(draw, name: str, count: int, bound: float | None = None):
    dtype = draw(st.sampled_from(RECORDS_BY_NAME[name].dtypes))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4))
    # hypothesis has no 16-bit floats of ml_dtypes': f32 arrays rounded to them
    drawn = "f32" if dtype in ("f16", "bf16") else dtype
    with np.errstate(over="ignore"):
        return [
            draw(hnp.arrays(NUMPY_DTYPES[drawn], shape, elements=elements(drawn, bound))).astype(NUMPY_DTYPES[dtype])
            for _ in range(count)
        ]


BINARY = [
    "add",
    "sub",
    "mul",
    "div",
    "rem",
    "max",
    "min",
    "and",
    "or",
    "xor",
    "shift_left",
    "shift_right_arithmetic",
    "shift_right_logical",
]


@settings(max_examples=60, deadline=None)
@given(data=st.data(), name=st.sampled_from(BINARY))
def test_binary_ops_on_random_shapes(data, name):
    record = RECORDS_BY_NAME[name]
    assert_results_match(*run_both(record, {}, data.draw(operands_of(name, 2))), record)


@settings(max_examples=40, deadline=None)
@given(
    data=st.data(), name=st.sampled_from(["reduce_sum", "reduce_max", "reduce_min", "reduce_or"])
)
def test_reductions_on_random_shapes(data, name):
    record = RECORDS_BY_NAME[name]
    (operand,) = data.draw(operands_of(name, 1, bound=100.0 if name == "reduce_sum" else None))
    axes = data.draw(
        st.lists(st.sampled_from(range(operand.ndim)), unique=True) if operand.ndim else st.just([])
    )
    actual, expected = run_both(record, {"axes": tuple(axes)}, [operand])
    # A float sum of many terms depends on the order of additions; bound the absolute error.
    tolerance = 1e-3 if operand.dtype == np.float32 else 1e-9
    assert_results_match(
        actual, expected, record if name != "reduce_sum" else _with_atol(record, tolerance)
    )


def _with_atol(record, atol):
    from dataclasses import replace

    return replace(record, atol=atol)


# --- XLA's answers at the edges, written out ------------------------------------------------

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
EDGES = [
    (
        "div",
        {},
        [np.int32([7, -7, 7, 5, INT32_MIN]), np.int32([2, 2, -2, 0, -1])],
        np.int32([3, -3, -3, -1, INT32_MIN]),
    ),
    (
        "rem",
        {},
        [np.int32([7, -7, 7, 5, INT32_MIN]), np.int32([2, 2, -2, 0, -1])],
        np.int32([1, -1, 1, 5, 0]),
    ),
    ("rem", {}, [np.float64([5.5, -5.5]), np.float64([2.0, 2.0])], np.float64([1.5, -1.5])),
    ("shift_left", {}, [np.int32([1, 1, 1]), np.int32([31, 32, -1])], np.int32([INT32_MIN, 0, 0])),
    ("shift_right_logical", {}, [np.int32([-1, -1]), np.int32([28, 40])], np.int32([15, 0])),
    (
        "shift_right_arithmetic",
        {},
        [np.int32([-8, -8, 8]), np.int32([1, 33, 33])],
        np.int32([-4, -1, 0]),
    ),
    (
        "round",
        {},
        [np.float64([0.5, -0.5, 2.5, 0.49999999999999994])],
        np.float64([1.0, -1.0, 3.0, 0.0]),
    ),
    (
        "round",
        {"rounding_method": "to_nearest_even"},
        [np.float64([0.5, 1.5, 2.5])],
        np.float64([0.0, 2.0, 2.0]),
    ),
    (
        "convert",
        {"new_dtype": "i32"},
        [np.float32([math.nan, math.inf, -math.inf, -2.7, 3e9])],
        np.int32([0, INT32_MAX, INT32_MIN, -2, INT32_MAX]),
    ),
    (
        "argmax",
        {"axis": 0, "index_dtype": "i32"},
        [np.float32([1, math.nan, 5, math.nan])],
        np.int32(1),
    ),
    ("argmin", {"axis": 0, "index_dtype": "i32"}, [np.float32([1, 0, math.nan])], np.int32(2)),
    (
        "sort",
        {"dimension": 0, "is_stable": True, "num_keys": 1},
        [np.float32([math.nan, 2, -math.inf, 1])],
        np.float32([-math.inf, 1, 2, math.nan]),
    ),
    (
        "gather",
        {"offset_dims": (), "collapsed_slice_dims": (0,), "start_index_map": (0,), "operand_batching_dims": (), "start_indices_batching_dims": (), "slice_sizes": (1,), "mode": "fill"},
        [np.int64([4, 5]), np.int32([[1], [2], [-1]])],
        np.int64([5, -(2**63), -(2**63)]),
    ),
    (
        "gather",
        {"offset_dims": (), "collapsed_slice_dims": (0,), "start_index_map": (0,), "operand_batching_dims": (), "start_indices_batching_dims": (), "slice_sizes": (1,), "mode": "fill"},
        [np.bool_([False]), np.int32([[0], [1]])],
        np.bool_([False, True]),
    ),
    (
        "gather",
        {"offset_dims": (), "collapsed_slice_dims": (0,), "start_index_map": (0,), "operand_batching_dims": (), "start_indices_batching_dims": (), "slice_sizes": (1,), "mode": "clip"},
        [np.float32([4, 5]), np.int32([[-3], [9]])],
        np.float32([4, 5]),
    ),
    ("reduce_max", {"axes": (0,)}, [np.zeros(0, np.int32)], np.int32(INT32_MIN)),
    ("reduce_and", {"axes": (0,)}, [np.zeros(0, np.int32)], np.int32(-1)),
    (
        "dynamic_slice",
        {"slice_sizes": (2,)},
        [np.int32([0, 1, 2, 3]), np.int32(3)],
        np.int32([2, 3]),
    ),
]


@pytest.mark.parametrize("name, attrs, operands, expected", EDGES, ids=[edge[0] for edge in EDGES])
def test_xla_edge_semantics(name, attrs, operands, expected):
    (result,) = reference_impls[name](Attrs(attrs), *operands)[:1]
    assert result.dtype == expected.dtype
    np.testing.assert_array_equal(result, expected)
