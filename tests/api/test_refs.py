"""Mutable array references (``jax.new_ref``, ``jax.Ref``, ``jax.ref``): reads and writes at the
top level, inside jit (closed over or passed as arguments, sharded values kept), grad, vmap and
scan, with JAX 0.10.2's values, shapes and errors."""

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit.sharding import PartitionSpec as P

pytestmark = pytest.mark.usefixtures("restore_runtime_state")


def test_top_level_reads_writes_and_repr():
    ref = jax.new_ref(jnp.arange(3))
    assert (ref.shape, ref.dtype, ref.ndim, len(ref)) == ((3,), np.dtype("int32"), 1, 3)
    assert int(jax.ref.swap(ref, 1, 7)) == 1
    np.testing.assert_array_equal(jax.ref.get(ref, slice(0, 2)), [0, 7])
    jax.ref.addupdate(ref, ..., jnp.ones(3, "int32"))
    assert repr(ref) == "Ref([1, 8, 3], dtype=int32)"
    np.testing.assert_array_equal(jax.freeze(ref), [1, 8, 3])
    assert repr(jax.new_ref(0.)) == "Ref(0., dtype=float32, weak_type=True)"


def test_whole_reference_write_needs_the_same_shape():
    ref = jax.new_ref(jnp.zeros(3, "int32"))
    with pytest.raises(ValueError, match=r"Invalid shape for `swap`. Ref shape: \(3,\). .* Value shape: \(\)"):
        ref[...] = 2


def test_jit_closing_over_a_reference_reads_and_writes_it_each_call():
    ref = jax.new_ref(jnp.zeros(3))

    @jax.jit
    def bump():
        ref[1] += 1.

    bump()
    bump()
    np.testing.assert_array_equal(ref[...], [0., 2., 0.])
    assert bump._closed_refs == [ref]


def test_jit_reference_arguments_keep_their_sharding():
    mesh = jax.make_mesh((4, 2), ("X", "Y"))
    with jax.set_mesh(mesh):
        value = jax.device_put(jnp.arange(32.).reshape(8, 4), P("X", "Y"))
        ref = jax.new_ref(value)

        @jax.jit
        def scale(x_ref, factor):
            x_ref[...] = x_ref[...] * factor
            return jnp.sum(x_ref[...])

        out = scale(ref, 2.)
        assert float(out) == 2 * sum(range(32))
        np.testing.assert_array_equal(ref[...], np.arange(32.).reshape(8, 4) * 2)
        assert ref[...].sharding.spec == P("X", "Y")
        assert str(jax.typeof(ref[...])) == "float32[8@X,4@Y]"


def test_jit_reference_errors_as_jax():
    x_ref = jax.new_ref(0.)

    @jax.jit
    def returns(x_ref):
        return x_ref

    @jax.jit
    def twice(x_ref, y_ref):
        return None

    @jax.jit
    def both(y_ref):
        y_ref[...] = x_ref[...]

    with pytest.raises(ValueError, match=r"returned a mutable array reference of type Ref\{float32\[\]\}, but .*"
                                         r"\n\nThe returned mutable array was passed in as the argument x_ref."):
        returns(x_ref)
    with pytest.raises(ValueError, match=r"of type Ref\{float32\[\]\} appeared at both x_ref and y_ref."):
        twice(x_ref, x_ref)
    with pytest.raises(ValueError, match=r"was both closed over and passed as the argument y_ref$"):
        both(x_ref)


def test_internal_references_under_grad_and_jit():
    def g(x):
        ref = jax.new_ref(0.)
        ref[...] = jnp.sin(x)
        return ref[...]

    @jax.jit
    def doubled(x):
        ref = jax.new_ref(x)
        ref[...] = ref[...] + ref[...]
        return ref[...]

    assert float(jax.grad(g)(1.0)) == pytest.approx(0.5403023, rel=1e-6)
    assert float(jax.grad(doubled)(3.0)) == 2.0


def test_vmap_maps_reference_arguments():
    def dist(x, y, out_ref):
        assert out_ref.ndim == 0
        out_ref[...] = jnp.sum((x - y) ** 2)

    vecs = jnp.arange(12.).reshape(3, 4)
    out_ref = jax.new_ref(jnp.zeros((3, 3)))
    jax.vmap(jax.vmap(dist, (0, None, 0)), (None, 0, 0))(vecs, vecs, out_ref)
    np.testing.assert_array_equal(out_ref[...], [[0., 64., 256.], [64., 0., 64.], [256., 64., 0.]])


def test_scan_threads_closed_over_references_as_carries():
    total = jax.new_ref(0)

    def body(carry, x):
        total[...] += x
        return carry, x * 2

    _, ys = jax.lax.scan(body, None, jnp.arange(10))
    assert int(total[...]) == 45
    np.testing.assert_array_equal(ys, np.arange(10) * 2)

    @jax.jit
    def product(xs):
        inner = jax.new_ref(jnp.float32(1))

        def step(carry, x):
            inner[...] = inner[...] * x
            total[...] += 1
            return carry + 1, x

        count, _ = jax.lax.scan(step, 0, xs)
        return count, inner[...]

    count, value = product(jnp.arange(1., 5.))
    assert (int(count), float(value), int(total[...])) == (4, 24., 49)


_UNBATCHED = (r"performing a set/swap operation with vmapped value on an unbatched array reference of type "
              r"Ref\{float32\[\]\}\. Move the array reference to be an argument to the vmapped function\?")


@pytest.mark.parametrize("write", [
    lambda ref, x: ref.__setitem__(..., x),
    lambda ref, x: ref.__setitem__(..., 2.0),  # JAX refuses a constant too
    lambda ref, x: jax.ref.addupdate(ref, ..., x),
    lambda ref, x: jax.ref.swap(ref, ..., x),
    lambda ref, x: jax.jit(lambda v: ref.__setitem__(..., v))(x),
])
def test_vmap_refuses_writes_to_closed_over_references_as_jax(write):
    ref = jax.new_ref(0.0)
    with pytest.raises(Exception, match=_UNBATCHED):
        jax.vmap(lambda x: write(ref, x))(jnp.arange(3.0))
    assert float(ref[...]) == 0.0


def test_vmap_reads_closed_over_references_and_writes_its_own():
    ref = jax.new_ref(jnp.arange(3.0))
    np.testing.assert_array_equal(jax.vmap(lambda x: ref[...] * x)(jnp.arange(2.0)), [[0, 0, 0], [0, 1, 2]])

    def own(x):
        inner = jax.new_ref(x)
        inner[...] = inner[...] * 2
        return inner[...]

    np.testing.assert_array_equal(jax.vmap(own)(jnp.arange(3.0)), [0, 2, 4])
