"""``jax.ops.segment_*``: per-segment reductions as JAX 0.10.2 computes them (out-of-range ids,
including negative ones, dropped or clipped; empty segments hold the identity), checked against
numpy's ``ufunc.at``, under jit, vmap and grad, and with rows sharded over 8 devices."""

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit import ops
from meshjit.sharding import Mesh, NamedSharding, PartitionSpec as P

_CASES = {  # name: (function, numpy ufunc, identity of float32)
    "segment_sum": (ops.segment_sum, np.add, 0.0),
    "segment_prod": (ops.segment_prod, np.multiply, 1.0),
    "segment_max": (ops.segment_max, np.maximum, -np.inf),
    "segment_min": (ops.segment_min, np.minimum, np.inf),
}


def _expected(ufunc, identity, data, ids, num_segments, clip=False):
    data, ids = np.asarray(data), np.asarray(ids)
    out = np.full((num_segments,) + data.shape[1:], identity, data.dtype)
    if clip:
        ids = np.clip(ids, 0, num_segments - 1)
    keep = (ids >= 0) & (ids < num_segments)
    ufunc.at(out, ids[keep], data[keep])
    return out


@pytest.mark.parametrize("name", sorted(_CASES))
@pytest.mark.parametrize("shape", [(6,), (6, 3), (0,), (6, 0)])
def test_values_drop_out_of_range_ids_including_negative_ones(name, shape):
    function, ufunc, identity = _CASES[name]
    data = np.arange(1.0, 1.0 + np.prod(shape), dtype=np.float32).reshape(shape)
    ids = np.array([0, 0, 2, 2, 5, -1][:shape[0]], np.int32)
    got = function(jnp.asarray(data), jnp.asarray(ids), 4)
    np.testing.assert_array_equal(got, _expected(ufunc, identity, data, ids, 4))
    np.testing.assert_array_equal(jax.jit(function, static_argnums=2)(data, ids, 4), got)
    clipped = function(jnp.asarray(data), jnp.asarray(ids), 4, mode="clip")
    np.testing.assert_array_equal(clipped, _expected(ufunc, identity, data, ids, 4, clip=True))


def test_integer_and_bool_identities():
    ids = jnp.array([0, 0, 2])
    assert ops.segment_max(jnp.arange(3), ids, 4).tolist() == [1, -2**31, 2, -2**31]
    assert ops.segment_min(jnp.arange(3, dtype=jnp.int8), ids, 2).tolist() == [0, 127]
    assert ops.segment_max(jnp.array([True, False, True]), ids, 2).tolist() == [True, False]
    assert ops.segment_min(jnp.array([True, False, True]), ids, 2).tolist() == [False, True]
    with pytest.raises(TypeError, match="add does not accept dtype bool at position 0"):
        ops.segment_sum(jnp.array([True]), jnp.array([0]), 1)


def test_num_segments_from_concrete_ids_and_its_error_under_jit():
    np.testing.assert_array_equal(ops.segment_sum(jnp.arange(6.0), jnp.array([0, 1, 1, 2, 2, 2])), [0, 3, 12])
    with pytest.raises(jax.errors.ConcretizationTypeError):
        jax.jit(lambda data, ids: ops.segment_sum(data, ids))(jnp.arange(3.0), jnp.array([0, 1, 1]))


def test_gradients_and_vmap_as_jax():
    ids = jnp.array([0, 0, 2, 2, 5, -1])
    gradient = jax.grad(lambda d: ops.segment_sum(d, ids, 3).sum() + ops.segment_max(d, ids, 3).sum())(
        jnp.arange(6.0))
    np.testing.assert_array_equal(gradient, [1, 2, 1, 2, 0, 0])  # JAX 0.10.2's values
    np.testing.assert_array_equal(jax.vmap(lambda d: ops.segment_sum(d, ids, 3))(jnp.ones((2, 6))),
                                  [[2, 0, 2], [2, 0, 2]])


@pytest.mark.parametrize("name", sorted(_CASES))
def test_rows_sharded_over_eight_devices(name):
    function, ufunc, identity = _CASES[name]
    mesh = Mesh(np.array(jax.devices()[:8]), ("x",))
    data = np.linspace(-2, 2, 16 * 3, dtype=np.float32).reshape(16, 3)
    ids = (np.arange(16) * 7 % 6 - 1).astype(np.int32)
    sharded = jax.device_put(data, NamedSharding(mesh, P("x")))
    got = jax.jit(function, static_argnums=2)(sharded, jax.device_put(ids, NamedSharding(mesh, P("x"))), 5)
    np.testing.assert_array_equal(got, _expected(ufunc, identity, data, ids, 5))
