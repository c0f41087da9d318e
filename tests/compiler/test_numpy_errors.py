"""meshjit.numpy's boundary errors: the exception type JAX 0.10 raises (shape mismatches of
reshape, transpose, concatenate, products and same-rank arithmetic are TypeErrors there; axis
errors are numpy's AxisError, both a ValueError and an IndexError), and a message naming the
function, the argument and the shapes or axes involved."""

from __future__ import annotations

import inspect

import ml_dtypes
import numpy as np
import pytest
from helpers import run_traced
from meshjit.compiler.frontend.trace import (
    ConcretizationTypeError,
    TracerArrayConversionError,
    TracerBoolConversionError,
)

import meshjit.numpy as jnp

X = np.zeros((2, 3), np.float32)

# (call, exception type, regex the message must match)
ERRORS = [
    (
        lambda: jnp.sum(X, axis=3),
        ValueError,
        r"sum: axis 3 is out of bounds for array of dimension 2",
    ),
    (
        lambda: jnp.mean(X, axis=(0, -3)),
        ValueError,
        r"mean: axis -3 is out of bounds for array of dimension 2",
    ),
    (lambda: jnp.max(X, axis=(1, 1)), ValueError, r"max: repeated axis in \(1, 1\)"),
    (
        lambda: jnp.argmax(X, axis=2),
        IndexError,
        r"argmax: axis 2 is out of bounds for array of dimension 2",
    ),
    (lambda: jnp.cumsum(X, axis=-3), ValueError, r"cumsum: axis -3 is out of bounds"),
    (
        lambda: jnp.expand_dims(X, 3),
        ValueError,
        r"expand_dims: axis 3 is out of bounds for array of dimension 3",
    ),
    (lambda: jnp.swapaxes(X, 0, 2), ValueError, r"swapaxes: axis 2 is out of bounds"),
    (
        lambda: jnp.squeeze(X, axis=0),
        ValueError,
        r"squeeze: cannot select axis 0 of shape \(2, 3\): its size is 2",
    ),
    (lambda: jnp.concatenate([X, X], axis=2), ValueError, r"concatenate: axis 2 is out of bounds"),
    (lambda: jnp.sum(X, axis=1.0), TypeError, r"sum: axis must be an int, got float"),
    (
        lambda: jnp.add(np.ones(3), np.ones(4)),
        TypeError,
        r"add: shapes \(3,\), \(4,\) cannot be broadcast together",
    ),
    (
        lambda: jnp.add(np.ones((2, 3)), np.ones(2)),
        ValueError,
        r"add: shapes \(2, 3\), \(2,\) cannot be broadcast together",
    ),
    (
        lambda: jnp.where(X > 0, np.ones(4), 0.0),
        ValueError,
        r"where: shapes \(2, 3\), \(4,\), \(\) cannot be broadcast",
    ),
    (
        lambda: jnp.broadcast_to(np.ones(3), (4,)),
        ValueError,
        r"broadcast_to: shapes \(3,\), \(4,\) cannot be broadcast",
    ),
    (
        lambda: jnp.broadcast_to(np.ones((2, 1)), (2,)),
        ValueError,
        r"cannot broadcast an array of shape \(2, 1\) to shape \(2,\)",
    ),
    (
        lambda: jnp.reshape(X, (4, 2)),
        TypeError,
        r"reshape: cannot reshape an array of shape \(2, 3\) \(size 6\) into shape \(4, 2\)",
    ),
    (lambda: jnp.reshape(X, (-1, -1)), TypeError, r"reshape: cannot reshape"),
    (lambda: jnp.reshape(X, 6, order="K"), ValueError, r"reshape: order must be 'C', 'F' or 'A'"),
    (
        lambda: jnp.transpose(X, (0, 0)),
        TypeError,
        r"transpose: axes \(0, 0\) are not a permutation of the 2 dims",
    ),
    (
        lambda: jnp.concatenate([X, np.zeros((2, 4))]),
        TypeError,
        r"concatenate: shapes \(2, 3\), \(2, 4\) do not match outside axis 0",
    ),
    (
        lambda: jnp.concatenate([np.float32(1.0), np.float32(2.0)]),
        ValueError,
        r"zero-dimensional arrays cannot be concatenated",
    ),
    (lambda: jnp.concatenate([]), ValueError, r"concatenate: need at least one array"),
    (
        lambda: jnp.stack([X, X.T]),
        ValueError,
        r"stack: all arrays must have the same shape, got \(2, 3\), \(3, 2\)",
    ),
    (
        lambda: jnp.split(X, 2, axis=1),
        ValueError,
        r"split: array split does not result in an equal division: axis 1 of size 3",
    ),
    (lambda: jnp.matmul(X, X), TypeError, r"matmul: shapes \(2, 3\) and \(2, 3\) do not align"),
    (
        lambda: jnp.matmul(np.float32(1.0), X),
        ValueError,
        r"matmul: input operand 0 must have ndim at least 1",
    ),
    (
        lambda: jnp.matmul(np.ones((2, 2, 3)), np.ones((3, 3, 2))),
        ValueError,
        r"matmul: shapes \(2,\), \(3,\) cannot be broadcast",
    ),
    (lambda: jnp.dot(X, X), TypeError, r"dot: shapes \(2, 3\) and \(2, 3\) not aligned"),
    (
        lambda: jnp.tensordot(X, X, axes=((0,), (1,))),
        TypeError,
        r"tensordot: shape mismatch: dim 0 of a \(2, 3\)",
    ),
    (
        lambda: jnp.tensordot(X, X, axes=3),
        ValueError,
        r"tensordot: axes=3 needs operands of rank at least 3",
    ),
    (
        lambda: jnp.einsum("ij,jk->ik", X),
        ValueError,
        r"einsum: subscripts 'ij,jk->ik' name 2 operands, but 1 were given",
    ),
    (
        lambda: jnp.einsum("ij,jk->il", X, X.T),
        ValueError,
        r"'ij,jk->il': output label 'l' appears in no input",
    ),
    (
        lambda: jnp.einsum("ijk->i", X),
        ValueError,
        r"'ijk->i': term 'ijk' names 3 dims but its operand has 2",
    ),
    (lambda: jnp.einsum("i1->i", X), ValueError, r"'i1->i': invalid character '1' in term 'i1'"),
    (lambda: jnp.einsum("ij->i->j", X), ValueError, r"'ij->i->j' have more than one '->'"),
    (lambda: jnp.einsum("ij->ii", X), ValueError, r"output 'ii' repeats a label"),
    (lambda: jnp.einsum("i..j->i", X), ValueError, r"term 'i..j' has a malformed ellipsis"),
    (
        lambda: jnp.einsum("ij,ij->i", X, np.ones((2, 4))),
        ValueError,
        r"einsum: dimension 'j' has size 3 in one operand and 4",
    ),
    (lambda: jnp.einsum(3, X), TypeError, r"einsum: a sublist holds ints in \[0, 52\) and Ellipsis"),
    (lambda: jnp.subtract(X > 0, X > 0), TypeError, r"subtract does not accept dtype bool"),
    (lambda: jnp.negative(X > 0), TypeError, r"negative does not accept dtype bool"),
    (lambda: jnp.left_shift(X, 1), TypeError, r"left_shift does not accept dtype f32"),
    (
        lambda: jnp.power(np.arange(3), -1),
        ValueError,
        r"power: integers cannot be raised to negative powers",
    ),
    (
        lambda: jnp.zeros(3, dtype=ml_dtypes.float8_e4m3fn),
        TypeError,
        r"zeros: dtype float8_e4m3fn is not supported|full: dtype float8_e4m3fn",
    ),
    (lambda: jnp.zeros(3, dtype="nonsense"), TypeError, r"dtype 'nonsense' is not a dtype"),
    (lambda: jnp.add(X, "text"), TypeError, r"add: dtype <U4 of str is not supported"),
    (
        lambda: jnp.max(np.zeros((0, 2))),
        ValueError,
        r"max: zero-size array to reduction operation max",
    ),
    (
        lambda: jnp.argmax(np.zeros((0, 2)), axis=0),
        ValueError,
        r"argmax: attempt to get argmax of an empty sequence",
    ),
    (lambda: jnp.where(X > 0, 1), TypeError, r"where requires ndarray or scalar arguments"),
    (lambda: jnp.arange(0, 5, 0), ValueError, r"arange: step must not be zero"),
    (lambda: jnp.full((2, -1), 0.0), TypeError, r"full: negative dimensions are not allowed"),
    (
        lambda: jnp.take(X, np.array([0]), mode="raise"),
        ValueError,
        r"take: mode must be one of fill, clip, wrap",
    ),
    (
        lambda: jnp.take(X, np.array([0.5])),
        TypeError,
        r"take: indices must be integers, got dtype f32",
    ),
    (lambda: jnp.round(X, 1.5), TypeError, r"round: decimals must be a Python int"),
]


@pytest.mark.parametrize(
    "call, error, message", ERRORS, ids=[pattern[:40] for _, _, pattern in ERRORS]
)
def test_boundary_error(call, error, message):
    with pytest.raises(error, match=message):
        call()


INDEX_ERRORS = [
    (lambda x: x[:0][0], IndexError, r"index 0 is out of bounds for axis 0 with size 0"),
    (
        lambda x: x[0, 0, 0],
        IndexError,
        r"too many indices for array: array is 2-dimensional, but 3 were indexed",
    ),
    (lambda x: x[..., ...], IndexError, r"an index can only have a single ellipsis"),
    (
        lambda x: x[1.5],
        TypeError,
        r"only integers, slices, ellipsis, None and integer or boolean arrays",
    ),
    (lambda x: x[::0], ValueError, r"slice step cannot be zero"),
    (
        lambda x: x[np.array([0, 1]), np.array([0, 1, 2])],
        ValueError,
        r"indexing: shapes \(2,\), \(3,\) cannot be broadcast",
    ),
    (
        lambda x: x[x > 0],
        jnp.NonConcreteBooleanIndexError,
        r"boolean mask of type bool\[2,3\] depends on traced values",
    ),
    (lambda x: x[: x[0, 0].astype(int)], ConcretizationTypeError, r"slice stop must be concrete"),
    (
        lambda x: jnp.arange(x[0, 0]),
        ConcretizationTypeError,
        r"arange: argument 'start' is a traced value f32\[\]",
    ),
    (
        lambda x: jnp.linspace(0, 1, x[0, 0].astype(int)),
        ConcretizationTypeError,
        r"linspace: argument 'num' is a traced",
    ),
]


@pytest.mark.parametrize(
    "call, error, message", INDEX_ERRORS, ids=[pattern[:40] for _, _, pattern in INDEX_ERRORS]
)
def test_traced_index_error(call, error, message):
    with pytest.raises(error, match=message):
        run_traced(call, X)


def test_non_concrete_boolean_index_error_is_an_index_error_as_jax():
    assert issubclass(jnp.NonConcreteBooleanIndexError, IndexError)
    assert not issubclass(jnp.NonConcreteBooleanIndexError, TypeError)


def test_python_if_on_traced_value_names_the_line():
    def branchy(x):
        if x.sum() > 0:
            return x
        return -x

    line = inspect.getsourcelines(branchy)[1] + 1
    with pytest.raises(TracerBoolConversionError) as caught:
        run_traced(branchy, X)
    assert isinstance(caught.value, ConcretizationTypeError)
    assert f"{__file__}:{line}" in str(caught.value)


def test_int_of_traced_value_names_the_line():
    def sized(x):
        return jnp.zeros(int(x[0, 0]))

    line = inspect.getsourcelines(sized)[1] + 1
    with pytest.raises(ConcretizationTypeError, match=f"{__file__}:{line}"):
        run_traced(sized, X)


def test_numpy_conversion_of_traced_value_fails():
    with pytest.raises(TracerArrayConversionError, match="numpy.asarray"):
        run_traced(lambda x: np.asarray(x) + 1, X)


def test_boolean_mask_must_match_the_indexed_dims():
    with pytest.raises(IndexError, match=r"boolean index of shape \(2,\) does not match"):
        run_traced(lambda x: x[:, np.array([True, False])], X)
