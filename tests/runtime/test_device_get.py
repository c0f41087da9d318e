"""device_get: pytrees of Arrays to numpy, as jax.device_get (values checked against JAX 0.10.2)."""

from __future__ import annotations

import numpy as np
import pytest

import meshjit
import meshjit.numpy as jnp
from meshjit.sharding import NamedSharding
from meshjit.sharding import PartitionSpec as P

pytestmark = pytest.mark.usefixtures("restore_runtime_state")


def test_an_array_becomes_its_read_only_global_value(mesh_2x4):
    value = np.arange(16, dtype=np.int32).reshape(4, 4)
    array = meshjit.device_put(value, NamedSharding(mesh_2x4, P("x", "y")))
    host = meshjit.device_get(array)
    assert type(host) is np.ndarray and host.dtype == np.int32
    np.testing.assert_array_equal(host, value)
    assert not host.flags.writeable  # as JAX's


def test_pytrees_keep_their_structure_and_non_array_leaves():
    x = jnp.arange(8.0)
    numpy_leaf = np.ones(2)
    tree = {"a": x, "b": [jnp.bool_(True), 3, 2.5, numpy_leaf, "text", None], "c": (np.float32(2),)}
    host = meshjit.device_get(tree)
    assert set(host) == {"a", "b", "c"} and len(host["b"]) == 6
    assert type(host["a"]) is np.ndarray and host["a"].dtype == np.float32
    assert type(host["b"][0]) is np.ndarray and host["b"][0].dtype == np.bool_
    assert host["b"][1:3] == [3, 2.5] and host["b"][4:] == ["text", None]
    assert host["b"][3] is numpy_leaf  # numpy arrays pass through __array__ unchanged
    assert type(host["c"][0]) is np.ndarray and host["c"][0].shape == ()  # numpy scalars become 0-d arrays
    assert meshjit.device_get(1) == 1


def test_registered_pytree_nodes_are_mapped():
    @meshjit.tree_util.register_pytree_node_class
    class Pair:
        def __init__(self, first, second):
            self.first, self.second = first, second

        def tree_flatten(self):
            return (self.first, self.second), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    host = meshjit.device_get(Pair(jnp.ones(2), jnp.zeros(3)))
    assert isinstance(host, Pair) and type(host.first) is np.ndarray and host.second.shape == (3,)


def test_traced_values_pass_through_inside_jit():
    doubled = meshjit.jit(lambda x: meshjit.device_get(x) * 2)(jnp.arange(3.0))
    np.testing.assert_array_equal(np.asarray(doubled), [0.0, 2.0, 4.0])


def test_a_deleted_array_raises_runtime_error_as_jax():
    array = jnp.arange(8.0)
    array.delete()
    with pytest.raises(RuntimeError, match="deleted"):
        meshjit.device_get(array)
