"""jnp.vstack/hstack/dstack/column_stack, atleast_Nd and the split family give numpy's (and JAX
0.10.2's) shapes and values, eagerly and under jit; jax.jacobian is jacrev and
jax.test_util.check_grads accepts right derivatives and rejects wrong ones."""

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit.test_util import check_grads

A, B = np.arange(3.0, dtype=np.float32), np.arange(3.0, 6.0, dtype=np.float32)
M = np.arange(6.0, dtype=np.float32).reshape(2, 3)
JOINS = {
    "vstack 1d": ("vstack", [A, B]), "vstack 2d": ("vstack", [M, M]),
    "hstack 1d": ("hstack", [A, B]), "hstack 2d": ("hstack", [M, M]),
    "dstack 1d": ("dstack", [A, B]), "dstack 2d": ("dstack", [M, M]),
    "column_stack 1d": ("column_stack", [A, B]), "column_stack mixed": ("column_stack", [M.T, A]),
}


@pytest.mark.parametrize("name", JOINS)
def test_joins_match_numpy(name):
    function, arrays = JOINS[name]
    expected = getattr(np, function)(arrays)
    eager = getattr(jnp, function)([jnp.asarray(array) for array in arrays])
    jitted = jax.jit(lambda *xs: getattr(jnp, function)(list(xs)))(*arrays)
    for result in (eager, jitted):
        assert result.shape == expected.shape and result.dtype == expected.dtype
        np.testing.assert_array_equal(np.asarray(result), expected)


def test_hstack_promotes_like_jax():
    assert jnp.vstack([jnp.arange(2), jnp.ones(2)]).dtype == np.float32
    assert jnp.hstack([1.0, 2.0]).tolist() == [1.0, 2.0]


@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("shape", [(), (4,), (2, 3), (2, 3, 4)])
def test_atleast_nd_match_numpy(rank, shape):
    array = np.zeros(shape, np.float32)
    function = f"atleast_{rank}d"
    assert getattr(jnp, function)(array).shape == getattr(np, function)(array).shape
    assert [x.shape for x in getattr(jnp, function)(array, array)] == [x.shape for x in getattr(np, function)(array, array)]


def test_split_family_match_numpy():
    seven = np.arange(7)
    assert [x.tolist() for x in jnp.array_split(seven, 3)] == [x.tolist() for x in np.array_split(seven, 3)]
    cube = np.arange(16.0, dtype=np.float32).reshape(2, 2, 4)
    for function, argument in (("hsplit", 2), ("vsplit", 2), ("dsplit", [1, 3])):
        got = getattr(jnp, function)(cube, argument)
        want = getattr(np, function)(cube, argument)
        assert [np.asarray(x).tolist() for x in got] == [x.tolist() for x in want]
    with pytest.raises(ValueError, match="dsplit only works on arrays of 3 or more dimensions"):
        jnp.dsplit(M, 2)


def test_jacobian_is_jacrev():
    np.testing.assert_allclose(np.asarray(jax.jacobian(jnp.sin)(jnp.arange(3.0))),
                               np.diag([1.0, 0.5403023, -0.41614684]), rtol=1e-6)


def test_check_grads_accepts_right_and_rejects_wrong_derivatives():
    check_grads(jnp.sin, (1.0,), order=2)
    check_grads(lambda x, y: jnp.tanh(x @ y).sum(), (jnp.ones((2, 3)) * 0.3, jnp.ones(3) * 0.2), order=2)
    wrong = jax.custom_jvp(jnp.sin)
    wrong.defjvp(lambda primals, tangents: (jnp.sin(primals[0]), 2 * tangents[0]))
    with pytest.raises(AssertionError, match="JVP differs"):
        check_grads(wrong, (1.0,), order=1, modes=["fwd"])
    with pytest.raises(AssertionError, match="VJP differs"):
        check_grads(wrong, (1.0,), order=1, modes=["rev"])
