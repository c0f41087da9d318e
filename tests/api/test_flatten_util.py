"""``jax.flatten_util.ravel_pytree``: values, dtypes and errors as JAX 0.10.2 gives them (checked
side by side), under jit, grad and vmap, and with the flat vector sharded."""

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit.flatten_util import ravel_pytree
from meshjit.sharding import Mesh, NamedSharding, PartitionSpec as P


def _tree():
    return {"b": jnp.ones((2, 2)), "a": (jnp.arange(3), 2.0)}


def test_leaves_in_tree_order_in_their_common_dtype():
    flat, unravel = ravel_pytree(_tree())
    assert flat.dtype == np.float32 and flat.shape == (8,)
    np.testing.assert_array_equal(flat, [0, 1, 2, 2, 1, 1, 1, 1])
    back = unravel(flat)
    assert jax.tree.structure(back) == jax.tree.structure(_tree())
    assert back["a"][0].dtype == np.int32 and back["a"][1].dtype == np.float32
    np.testing.assert_array_equal(back["a"][0], [0, 1, 2])
    np.testing.assert_array_equal(back["b"], np.ones((2, 2)))


def test_integer_leaves_promote_as_jax_does():
    flat, unravel = ravel_pytree([jnp.ones(2, jnp.int32), jnp.ones(1, jnp.int8)])
    assert flat.dtype == np.int32
    assert [leaf.dtype for leaf in unravel(flat)] == [np.int32, np.int8]
    flat, unravel = ravel_pytree((1, 2.0, True))  # Python scalars take their canonical dtypes
    assert flat.dtype == np.float32
    assert [leaf.dtype for leaf in unravel(flat)] == [np.int32, np.float32, np.bool_]


def test_a_tree_without_leaves_is_an_empty_float32_vector():
    flat, unravel = ravel_pytree([])
    assert flat.shape == (0,) and flat.dtype == np.float32
    assert unravel(flat) == []


@pytest.mark.parametrize("bad, error, text", [
    (jnp.ones(3), ValueError, "Sum of sizes 8 must be equal to dimension 0 of the operand shape [3]"),
    (jnp.ones(8, jnp.int32), TypeError, "unravel function given array of dtype int32, but expected dtype float32"),
    (jnp.ones((9, 1)), ValueError, "Sum of sizes 8 must be equal to dimension 0 of the operand shape [9, 1]"),
])
def test_unravel_refuses_a_vector_of_another_size_or_dtype_with_jaxs_error(bad, error, text):
    _, unravel = ravel_pytree(_tree())
    with pytest.raises(error) as caught:
        unravel(bad)
    assert str(caught.value) == text


def test_under_jit_grad_and_vmap():
    flat, unravel = ravel_pytree(_tree())
    np.testing.assert_array_equal(jax.jit(lambda t: ravel_pytree(t)[0])(_tree()), flat)
    gradient = jax.grad(lambda vector: jnp.sum(unravel(vector)["b"] ** 2))(flat)
    np.testing.assert_array_equal(gradient, [0, 0, 0, 0, 2, 2, 2, 2])
    rows = jax.vmap(lambda vector: unravel(vector)["b"].sum())(jnp.stack([flat, 2 * flat]))
    np.testing.assert_array_equal(rows, [4, 8])


def test_a_sharded_flat_vector_unravels_to_the_same_values():
    params = {"w": jnp.arange(12.0).reshape(3, 4), "b": jnp.arange(4.0)}
    flat, unravel = ravel_pytree(params)
    mesh = Mesh(np.array(jax.devices()[:8]), ("x",))
    sharded = jax.device_put(flat, NamedSharding(mesh, P("x")))
    back = jax.jit(unravel)(sharded)
    np.testing.assert_array_equal(back["w"], params["w"])
    np.testing.assert_array_equal(back["b"], params["b"])


def test_result_type_takes_numpy_dtype_instances_as_strong_dtypes():
    # np.dtype(bool) == bool in numpy: it once took the path of Python's (weak) bool type
    assert jnp.result_type(np.dtype(bool)) == np.bool_
    assert jnp.result_type(np.dtype("int32"), np.dtype("float32"), np.dtype("bool")) == np.float32
    assert jnp.result_type(np.dtype("int8"), jnp.int8) == np.int8
