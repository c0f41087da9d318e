"""jax.lax's functions built from primitives equal JAX 0.10.2's values (exactly where the
arithmetic is exact: the scans of add and max, the selections and slices; a few ulps where exp,
log or the trigonometric functions come in), and shard and differentiate."""

from pathlib import Path

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit.sharding import NamedSharding, PartitionSpec as P

from lax_extra_cases import compute

EXPECTED = np.load(Path(__file__).parent / "data" / "jax_lax_extra_values.npz")
INEXACT = {"cls", "cls_rev", "acos", "sinh"}


@pytest.fixture(scope="module")
def values():
    return compute(jax, jnp)


@pytest.mark.parametrize("name", sorted(EXPECTED.files))
def test_equal_to_jax(values, name):
    got, expected = values[name], EXPECTED[name]
    assert got.shape == expected.shape and got.dtype == expected.dtype
    if name in INEXACT:
        np.testing.assert_allclose(got, expected, rtol=2e-6, atol=1e-7)
    else:
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("size", [0, 1, 2, 3, 7, 8, 33])
def test_associative_scan_sizes_sharded_and_gradient(size):
    mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=jax.sharding.AxisType.Auto)
    values = np.arange(size * 8, dtype=np.float32).reshape(size, 8) % 5
    sharded = jax.device_put(values, NamedSharding(mesh, P(None, "y")))
    scanned = jax.jit(lambda v: jax.lax.associative_scan(jnp.add, v))(sharded)
    np.testing.assert_array_equal(np.asarray(scanned), np.cumsum(values, axis=0))
    if size:
        gradient = jax.grad(lambda v: jax.lax.associative_scan(jnp.add, v, reverse=True).sum())(
            values
        )
        # v[i] is in the reversed running sums 0..i
        expected = np.broadcast_to((np.arange(size) + 1.0)[:, None], values.shape)
        np.testing.assert_array_equal(np.asarray(gradient), expected)


def test_reduce_general_and_errors():
    m = np.arange(12, dtype=np.int32).reshape(3, 4)
    assert int(
        jax.lax.reduce(m, np.int32(0), jax.lax.bitwise_xor, (0, 1))
    ) == np.bitwise_xor.reduce(m.ravel())
    np.testing.assert_array_equal(
        np.asarray(jax.lax.reduce(np.zeros((0, 3), np.float32), np.float32(5), jax.lax.add, (0,))),
        np.full(3, 5.0),
    )
    with pytest.raises(ValueError, match="tree structure"):
        jax.lax.reduce((m, m), np.int32(0), jax.lax.add, (0,))
    with pytest.raises(TypeError, match="same shapes and dtypes"):
        jax.lax.select_n(True, np.zeros(2, np.float32), np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="Sum of sizes"):
        jax.lax.split(m, (1, 1), axis=0)
