"""Property tests with hypothesis: broadcasting and promotion of binary functions, reductions
over random axes, basic and integer-array indexing, transposes and einsum, all traced and
compared with numpy."""

from __future__ import annotations

import string
import warnings

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from helpers import assert_close, dtype_name, run_traced
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import meshjit.numpy as jnp

pytestmark = pytest.mark.usefixtures("restore_runtime_state")
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

DTYPES = {"bool": np.bool_, "i32": np.int32, "f32": np.float32}
# JAX's lattice restricted to these three: the wider kind wins; a Python scalar is weak and
# takes the array's dtype unless its kind is wider (then the default of its kind).
KIND = {"bool": 0, "i32": 1, "f32": 2}


def _array(draw, shape, dtype: str):
    elements = {
        "bool": st.booleans(),
        "i32": st.integers(-20, 20),
        "f32": st.floats(-10, 10, width=32, allow_subnormal=False),
    }[dtype]
    return draw(hnp.arrays(DTYPES[dtype], shape, elements=elements))


@st.composite
def broadcastable_pair(draw):
    shapes = draw(
        hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3)
    ).input_shapes
    dtypes = [draw(st.sampled_from(sorted(DTYPES))) for _ in shapes]
    return [_array(draw, shape, dtype) for shape, dtype in zip(shapes, dtypes)]


BINARY = {
    "add": np.add,
    "multiply": np.multiply,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "less": np.less,
    "equal": np.equal,
}


@SETTINGS
@given(pair=broadcastable_pair(), name=st.sampled_from(sorted(BINARY)))
def test_binary_broadcasting_and_promotion(pair, name):
    left, right = pair
    result = run_traced(getattr(jnp, name), left, right)
    kinds = [KIND[dtype_name(array)] for array in pair]
    expected_dtype = "bool" if name in ("less", "equal") else ["bool", "i32", "f32"][max(kinds)]
    widest = [np.bool_, np.int64, np.float64][max(kinds)]
    expected = BINARY[name](left.astype(widest), right.astype(widest))
    if expected_dtype == "bool" and name not in ("less", "equal"):
        expected = expected.astype(bool)
    assert_close(result, expected, dtype=expected_dtype, rtol=1e-6)


@SETTINGS
@given(
    shape=hnp.array_shapes(min_dims=0, max_dims=3, max_side=3),
    dtype=st.sampled_from(sorted(DTYPES)),
    scalar=st.one_of(st.integers(-3, 3), st.floats(-3, 3, allow_nan=False)),
    data=st.data(),
)
def test_weak_python_scalars(shape, dtype, scalar, data):
    array = _array(data.draw, shape, dtype)
    result = run_traced(lambda x: jnp.add(x, scalar), array)
    scalar_kind = 2 if isinstance(scalar, float) else 1
    expected_dtype = dtype if KIND[dtype] >= scalar_kind else ["bool", "i32", "f32"][scalar_kind]
    assert_close(
        result, array.astype(np.float64) + scalar, dtype=expected_dtype, rtol=1e-6, atol=1e-5
    )


@st.composite
def reduction_case(draw):
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3))
    rank = len(shape)
    axes = draw(st.lists(st.integers(0, rank - 1), unique=True, max_size=rank)) if rank else []
    axes = tuple(axis - rank if draw(st.booleans()) else axis for axis in axes)
    axis = draw(st.sampled_from([None, axes] + ([axes[0]] if axes else [])))
    return _array(draw, shape, "f32"), axis, draw(st.booleans())


@SETTINGS
@given(
    case=reduction_case(),
    name=st.sampled_from(["sum", "mean", "max", "min", "prod", "var", "all", "any"]),
)
def test_reductions_over_random_axes(case, name):
    array, axis, keepdims = case
    reduced_axes = range(array.ndim) if axis is None else np.atleast_1d(axis)
    if name in ("max", "min") and any(array.shape[dim] == 0 for dim in reduced_axes):
        return
    result = run_traced(lambda x: getattr(jnp, name)(x, axis=axis, keepdims=keepdims), array)
    # numpy warns about the NaNs of empty means and variances, which are intended here.
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = getattr(np, name)(array.astype(np.float64), axis=axis, keepdims=keepdims)
    assert_close(result, expected, rtol=1e-4, atol=1e-4)


@SETTINGS
@given(data=st.data(), shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4))
def test_basic_indexing(data, shape):
    array = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    index = data.draw(hnp.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True))
    assert_close(run_traced(lambda x: x[index], array), array[index])


@st.composite
def advanced_index(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4))
    index_shape = draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3))
    entries = []
    for size in shape:
        kind = draw(st.sampled_from(["array", "slice", "int", "none"]))
        if kind == "array":
            entries.append(
                draw(hnp.arrays(np.int32, index_shape, elements=st.integers(-size, size - 1)))
            )
        elif kind == "int":
            entries.append(draw(st.integers(-size, size - 1)))
        elif kind == "slice":
            entries.append(slice(None, None, draw(st.sampled_from([1, 2, -1]))))
        else:
            entries.extend([None, slice(None)])
    return shape, tuple(entries)


@SETTINGS
@given(case=advanced_index())
def test_integer_array_indexing(case):
    shape, index = case
    array = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    assert_close(run_traced(lambda x: x[index], array), array[index])


@SETTINGS
@given(shape=hnp.array_shapes(min_dims=1, max_dims=4, max_side=3), data=st.data())
def test_transpose_and_moveaxis(shape, data):
    array = np.arange(np.prod(shape), dtype=np.int32).reshape(shape)
    permutation = tuple(data.draw(st.permutations(range(len(shape)))))
    source, destination = (
        data.draw(st.integers(-len(shape), len(shape) - 1)),
        data.draw(st.integers(0, len(shape) - 1)),
    )
    result = run_traced(
        lambda x: (jnp.transpose(x, permutation), jnp.moveaxis(x, source, destination)), array
    )
    assert_close(result[0], np.transpose(array, permutation))
    assert_close(result[1], np.moveaxis(array, source, destination))


@st.composite
def einsum_case(draw):
    letters = draw(
        st.lists(st.sampled_from(string.ascii_lowercase[:6]), min_size=1, max_size=5, unique=True)
    )
    sizes = {letter: draw(st.integers(1, 3)) for letter in letters}
    terms = [
        draw(st.lists(st.sampled_from(letters), max_size=3, unique=True))
        for _ in range(draw(st.integers(1, 3)))
    ]
    used = sorted({letter for term in terms for letter in term})
    output = draw(st.lists(st.sampled_from(used), unique=True)) if used else []
    subscripts = ",".join("".join(term) for term in terms) + "->" + "".join(output)
    operands = [
        draw(
            hnp.arrays(
                np.float32,
                tuple(sizes[letter] for letter in term),
                elements=st.floats(-2, 2, width=32),
            )
        )
        for term in terms
    ]
    return subscripts, operands


@SETTINGS
@given(case=einsum_case())
def test_einsum_random_subscripts(case):
    subscripts, operands = case
    result = run_traced(lambda *arrays: jnp.einsum(subscripts, *arrays), *operands)
    expected = np.einsum(subscripts, *(operand.astype(np.float64) for operand in operands))
    assert_close(result, expected, rtol=1e-4, atol=1e-4)
