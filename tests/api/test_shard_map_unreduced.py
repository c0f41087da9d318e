"""shard_map with unreduced in_specs and out_specs (``P(..., unreduced={...})``), as JAX 0.10.2:
an unreduced in_spec hands the body each device's partial sum (typed ``{U:axes}``; psum over
the axes finishes it), an unreduced out_spec keeps the body's per-device values as the
partials of an unreduced result. Every expected value, per-device sum, type and error below
is what JAX 0.10.2 gives for the same program; jitted runs are also checked against the
reference interpreter (``check=True``)."""

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit.compiler.sharding.sharding_types import ShardingTypeError

pytestmark = pytest.mark.usefixtures("restore_runtime_state")

P = jax.P
PARTIAL_Y = P(None, None, unreduced={"Y"})


@pytest.fixture
def x():
    with jax.set_mesh(jax.make_mesh((4, 2), ("X", "Y"))):
        yield jax.device_put(jnp.arange(32.).reshape(8, 4), P("X", "Y"))


def partial_sums(array) -> list[float]:
    return [float(np.asarray(shard.data).sum()) for shard in array.addressable_shards]


@pytest.mark.parametrize("jitted", [True, False])
def test_psum_of_unreduced_input_is_the_value(x, jitted):
    # meshjit had summed the partials on the way in (992); JAX's psum gives the value (496)
    body = jax.shard_map(lambda b: jax.lax.psum(b, "Y"), in_specs=P(None, unreduced={"Y"}), out_specs=P())
    run = jax.jit(body, check=True) if jitted else body
    out = run(jax.device_put(x, PARTIAL_Y))
    assert str(jax.typeof(out)) == "float32[8,4]"
    assert float(np.asarray(out).sum()) == 496.0 and partial_sums(out) == [496.0] * 8


@pytest.mark.parametrize("jitted", [True, False])
def test_linear_body_keeps_partials_pending(x, jitted):
    spec = P("X", None, unreduced={"Y"})
    body = jax.shard_map(lambda b: b + b, in_specs=spec, out_specs=spec)
    out = (jax.jit(body, check=True) if jitted else body)(jax.device_put(x, spec))
    assert str(jax.typeof(out)) == "float32[8@X,4]{U:Y}"
    assert partial_sums(out) == [20.0, 36.0, 84.0, 100.0, 148.0, 164.0, 212.0, 228.0]
    assert float(np.asarray(jax.reshard(out, P("X", None))).sum()) == 992.0


def test_local_matmul_leaves_its_contraction_unreduced(x):
    seen = []

    def local_dot(a, b):
        seen.append((str(jax.typeof(a)), str(jax.typeof(b))))
        return a @ b

    a = jax.device_put(jnp.arange(32.).reshape(8, 4), P(None, "Y"))
    b = jax.device_put(jnp.arange(16.).reshape(4, 4), P("Y", None))
    mapped = jax.shard_map(local_dot, in_specs=(P(None, "Y"), P("Y", None)), out_specs=PARTIAL_Y)
    out = jax.jit(mapped, check=True)(a, b)
    assert seen[0] == ("float32[8,2]{V:Y}", "float32[2,4]{V:Y}")
    assert str(jax.typeof(out)) == "float32[8,4]{U:Y}"
    assert partial_sums(out) == [3312.0, 12208.0] * 4
    finished = jax.jit(lambda a, b: jax.reshard(mapped(a, b), P("X", None)))(a, b)
    assert str(jax.typeof(finished)) == "float32[8@X,4]"
    np.testing.assert_array_equal(np.asarray(finished), np.arange(32.).reshape(8, 4) @ np.arange(16.).reshape(4, 4))


def test_body_sees_unreduced_types_and_reduces_partials(x):
    seen = []

    def body(u):
        seen.append(str(jax.typeof(u)))
        return jax.lax.psum(u.sum(0), "Y")

    out = jax.jit(jax.shard_map(body, in_specs=PARTIAL_Y, out_specs=P()), check=True)(jax.device_put(x, PARTIAL_Y))
    assert seen == ["float32[8,4]{U:Y}"]
    assert np.asarray(out).tolist() == [112.0, 120.0, 128.0, 136.0]


def test_unreduced_errors_as_jax(x):
    unreduced = jax.device_put(x, PARTIAL_Y)
    with pytest.raises(ShardingTypeError, match="lhs and rhs to `mul` cannot be unreduced since mul is bilinear"):
        jax.jit(jax.shard_map(lambda u: u * u, in_specs=PARTIAL_Y, out_specs=PARTIAL_Y))(unreduced)
    with pytest.raises(NotImplementedError, match="unreduced rule for neg is not implemented"):
        jax.jit(jax.shard_map(lambda u: -u, in_specs=PARTIAL_Y, out_specs=PARTIAL_Y))(unreduced)
    with pytest.raises(ValueError, match=r"vary_unreduced_cast only accepts inputs that are varying. Got f32\[4\]"):
        jax.jit(jax.shard_map(lambda u: u, in_specs=P(), out_specs=P(None, unreduced={"Y"})))(jnp.ones(4))
    with pytest.raises(ValueError, match=r"in_specs passed to shard_map: P\(None, None, unreduced=\{'Y'\}\) does "
                                         r"not match the specs of the input: P\('X', 'Y'\)"):
        jax.shard_map(lambda u: u, in_specs=PARTIAL_Y, out_specs=PARTIAL_Y)(x)
    with pytest.raises(ValueError, match="refers to 'Z', which is not an axis of the mesh"):
        jax.shard_map(lambda u: u, in_specs=P("X", "Y"), out_specs=P(None, unreduced={"Z"}))(x)


def test_out_specs_none_with_no_outputs_still_runs():
    seen = []

    @jax.shard_map(in_specs=P(), out_specs=None)
    def body(x):
        seen.append(str(jax.typeof(jax.lax.pcast(x, "i", to="varying"))))

    with jax.set_mesh(jax.make_mesh((2,), ("i",))):
        body(jnp.arange(6.0))
    assert seen == ["float32[6]{V:i}"]


def test_results_keep_their_out_spec_length_as_jax(x):
    """JAX 0.10.2: P(None, None, unreduced={'Y'}) stays two entries long, P('X', None) too."""
    a = jax.device_put(jnp.arange(32.).reshape(8, 4), P(None, "Y"))
    b = jax.device_put(jnp.arange(16.).reshape(4, 4), P("Y", None))
    out = jax.shard_map(lambda a, b: a @ b, in_specs=(P(None, "Y"), P("Y", None)), out_specs=PARTIAL_Y)(a, b)
    assert out.sharding.spec == P(None, None, unreduced={"Y"}) and len(out.sharding.spec) == 2
    kept = jax.shard_map(lambda v: v, in_specs=P("X", "Y"), out_specs=P("X", "Y"))(x)
    assert repr(jax.shard_map(lambda v: v, in_specs=P(), out_specs=P(None, None))(jnp.ones((4, 4))).sharding.spec) \
        == "P(None, None)"
    assert repr(kept.sharding.spec) == "P('X', 'Y')"
