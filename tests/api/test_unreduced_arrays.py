"""Arrays unreduced over mesh axes (``P(..., unreduced={...})``), as JAX 0.10.2 makes and uses
them: device_put's layout of the partials (each device's sums below are JAX's), their printing,
reshard to a reduced layout (the sum), and jit taking and returning them (the partials stay
pending through linear ops; a dot's ``out_sharding`` can leave its sum pending)."""

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp

pytestmark = pytest.mark.usefixtures("restore_runtime_state")

VALUE = np.arange(32.).reshape(8, 4)


@pytest.fixture
def x():
    with jax.set_mesh(jax.make_mesh((4, 2), ("X", "Y"))):
        yield jax.device_put(jnp.asarray(VALUE), jax.P("X", "Y"))


def partial_sums(array) -> list[float]:
    return [float(np.asarray(shard.data).sum()) for shard in array.addressable_shards]


@pytest.mark.parametrize("source, spec, sums", [
    (("X", "Y"), jax.P("X", None, unreduced={"Y"}), [10, 18, 42, 50, 74, 82, 106, 114]),
    (("X", "Y"), jax.P(unreduced={"X", "Y"}), [10, 18, 42, 50, 74, 82, 106, 114]),
    (("X", "Y"), jax.P("Y", unreduced={"X"}), [120, 376, 0, 0, 0, 0, 0, 0]),
    (("X", "Y"), jax.P(None, None, unreduced={"Y"}), [232, 264] * 4),
    (("X", "Y"), jax.P(None, None, unreduced={"X"}), [28, 28, 92, 92, 156, 156, 220, 220]),
    ((("X", "Y"),), jax.P("X", unreduced={"Y"}), [6, 22, 38, 54, 70, 86, 102, 118]),
    ((("X", "Y"),), jax.P(None, unreduced={"Y"}), [496, 0] * 4),
    (("Y", "X"), jax.P(None, "Y", unreduced={"X"}), [232, 264, 0, 0, 0, 0, 0, 0]),
    (("Y", "X"), jax.P("X", unreduced={"Y"}), [28, 0, 92, 0, 156, 0, 220, 0]),
])
def test_device_put_lays_partials_out_as_jax(x, source, spec, sums):
    y = jax.device_put(jax.device_put(x, jax.P(*source)), spec)
    assert y.sharding.spec == spec
    assert partial_sums(y) == sums
    np.testing.assert_array_equal(np.asarray(y), VALUE)


def test_a_replicated_value_goes_to_the_first_device_along_the_unreduced_axis(x):
    y = jax.device_put(jnp.ones((8, 4)), jax.P(None, None, unreduced={"X"}))
    assert partial_sums(y) == [32, 32, 0, 0, 0, 0, 0, 0]


def test_unreduced_arrays_print_their_layout(x):
    y = jax.device_put(x, jax.P("X", None, unreduced={"Y"}))
    text = ("Array(shape=(8, 4), dtype=float32, sharding=NamedSharding(mesh=Mesh('X': 4, 'Y': 2, axis_types="
            "(Explicit, Explicit)), spec=P('X', None, unreduced={'Y'}), memory_kind=device))")
    assert repr(y) == text and str(y) == text
    assert str(jax.typeof(y)) == "float32[8@X,4]{U:Y}"
    assert not y.is_fully_replicated


def test_reshard_sums_the_partials(x):
    y = jax.device_put(x, jax.P("X", None, unreduced={"Y"}))
    for spec in (jax.P(), jax.P("X", "Y")):
        reduced = jax.reshard(y, spec)
        np.testing.assert_array_equal(np.asarray(reduced), VALUE)
        inside = jax.jit(lambda u, spec=spec: jax.reshard(u, spec))(y)
        np.testing.assert_array_equal(np.asarray(inside), VALUE)
    assert repr(jax.reshard(y, jax.P()).sharding.spec) == "P(None, None)"


def test_jit_keeps_sums_pending_through_linear_ops(x):
    y = jax.device_put(x, jax.P("X", None, unreduced={"Y"}))
    for result in (jax.jit(lambda u: u)(y), y + y, jax.jit(lambda u: u + u)(y)):
        assert str(jax.typeof(result)) == "float32[8@X,4]{U:Y}"
    assert partial_sums(jax.jit(lambda u: u)(y)) == [10, 18, 42, 50, 74, 82, 106, 114]
    doubled = y + y
    assert partial_sums(doubled) == [20, 36, 84, 100, 148, 164, 212, 228]
    np.testing.assert_array_equal(np.asarray(doubled), 2 * VALUE)


def test_a_dot_can_return_its_sum_pending(x):
    a = jax.device_put(jnp.arange(32.).reshape(8, 4), jax.P(None, "X"))
    b = jax.device_put(jnp.arange(64.).reshape(4, 16), jax.P("X", None))
    out = jax.jit(lambda a, b: jnp.dot(a, b, out_sharding=jax.P(None, None, unreduced={"X"})))(a, b)
    assert str(jax.typeof(out)) == "float32[8,16]{U:X}"
    assert partial_sums(out) == [13440, 13440, 45120, 45120, 80896, 80896, 120768, 120768]
    np.testing.assert_array_equal(np.asarray(out), np.arange(32.).reshape(8, 4) @ np.arange(64.).reshape(4, 16))
