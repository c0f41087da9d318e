"""``jax.experimental.shard_map.shard_map``: the deprecated spelling warns as JAX 0.10.2's does and
maps as ``jax.shard_map`` (old positional signature, ``check_rep``)."""

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit.sharding import NamedSharding, PartitionSpec as P


def test_reading_it_warns_and_it_maps_as_jax_shard_map():
    with pytest.warns(DeprecationWarning, match="jax.experimental.shard_map is deprecated in v0.8.0"):
        from meshjit.experimental.shard_map import shard_map
    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
    x = jax.device_put(jnp.arange(32.0).reshape(8, 4), NamedSharding(mesh, P("data", "model")))
    row_sums = shard_map(lambda b: jax.lax.psum(b.sum(axis=1), "model"), mesh, (P("data", "model"),), P("data"),
                         check_rep=False)
    np.testing.assert_array_equal(row_sums(x), np.arange(32.0).reshape(8, 4).sum(axis=1))
    assert jax.jit(row_sums)(x).sharding.spec == P("data")
    assert shard_map.__name__ == "shard_map"


def test_other_names_are_attribute_errors():
    import meshjit.experimental.shard_map as module
    with pytest.raises(AttributeError, match="has no attribute 'smap'"):
        module.smap
