"""meshjit.vmap as JAX's: in_axes and out_axes (ints, None, pytrees, negative), nesting,
axis_name with the collectives over the mapped axis, axis_size, spmd_axis_name, and vmap
composed with jit, grad, shard_map and random; JAX's errors."""

from __future__ import annotations

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit import lax
from meshjit.sharding import NamedSharding
from meshjit.sharding import PartitionSpec as P

X = np.arange(12, dtype=np.float32).reshape(3, 4)


def test_in_axes_and_out_axes():
    w = np.arange(8, dtype=np.float32).reshape(4, 2)
    np.testing.assert_allclose(np.asarray(jax.vmap(lambda a, b: a @ b, in_axes=(0, None))(X, w)), X @ w)
    np.testing.assert_allclose(np.asarray(jax.vmap(jnp.sum, in_axes=1)(X)), X.sum(0))
    np.testing.assert_allclose(np.asarray(jax.vmap(jnp.sum, in_axes=-1)(X)), X.sum(0))
    np.testing.assert_allclose(np.asarray(jax.vmap(lambda a: a * 2, in_axes=1, out_axes=1)(X)), X * 2)
    np.testing.assert_allclose(np.asarray(jax.vmap(lambda a: a * 2, out_axes=-1)(X)), (X * 2).T)
    both = jax.vmap(lambda a: (a, a.sum()), out_axes=(1, None), axis_size=None)
    with pytest.raises(ValueError, match="got axis spec None but output was batched on axis 0"):
        both(X)


def test_pytree_axes_and_keyword_arguments():
    params = {"w": np.ones((4,), np.float32), "b": np.float32(1.0)}

    def predict(params, x, *, scale):
        return jnp.dot(x, params["w"]) * scale + params["b"]

    out = jax.vmap(predict, in_axes=({"w": None, "b": None}, 0))(params, X, scale=np.full(3, 2.0, np.float32))
    np.testing.assert_allclose(np.asarray(out), X.sum(1) * 2 + 1)
    pairs = jax.vmap(lambda pair: {"sum": pair[0] + pair[1]}, in_axes=((0, 1),))((X, X.T))
    np.testing.assert_allclose(np.asarray(pairs["sum"]), 2 * X)


def test_unmapped_outputs_are_broadcast_and_axis_size_maps_nothing():
    np.testing.assert_allclose(np.asarray(jax.vmap(lambda a: np.float32(5.0))(X)), np.full(3, 5.0))
    ones = jax.vmap(lambda: jnp.ones(2), axis_size=4)()
    assert ones.shape == (4, 2)


def test_nested_vmaps():
    v = np.arange(4, dtype=np.float32)
    outer = jax.vmap(jax.vmap(lambda a, b: a * b, in_axes=(0, 0)), in_axes=(0, None))(X, v)
    np.testing.assert_allclose(np.asarray(outer), X * v)
    transposed = jax.vmap(jax.vmap(lambda a: a + 1, in_axes=0, out_axes=0), in_axes=1, out_axes=0)(X)
    np.testing.assert_allclose(np.asarray(transposed), X.T + 1)


def test_collectives_over_the_mapped_axis():
    xs = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    np.testing.assert_allclose(np.asarray(jax.vmap(lambda a: a / lax.psum(a, "i"), axis_name="i")(xs)), xs / 10)
    np.testing.assert_allclose(np.asarray(jax.vmap(lambda a: lax.pmean(a, "i"), axis_name="i")(xs)), 2.5)
    np.testing.assert_allclose(np.asarray(jax.vmap(lambda a: lax.pmax(a, "i"), axis_name="i")(xs)), 4.0)
    np.testing.assert_allclose(np.asarray(jax.vmap(lambda a: lax.pmin(a, "i"), axis_name="i")(xs)), 1.0)
    gathered = jax.vmap(lambda a: lax.all_gather(a, "i"), axis_name="i")(xs)
    np.testing.assert_allclose(np.asarray(gathered), np.tile(xs, (4, 1)))
    index = jax.vmap(lambda a: lax.axis_index("i") * lax.axis_size("i"), axis_name="i")(xs)
    np.testing.assert_array_equal(np.asarray(index), [0, 4, 8, 12])
    scattered = jax.vmap(lambda a: lax.psum_scatter(a, "i"), axis_name="i")(np.arange(16.0, dtype=np.float32).reshape(4, 4))
    np.testing.assert_allclose(np.asarray(scattered), np.arange(16.0).reshape(4, 4).sum(0))
    shifted = jax.vmap(lambda a: lax.ppermute(a, "i", [(0, 1), (1, 2), (2, 3), (3, 0)]), axis_name="i")(xs)
    np.testing.assert_allclose(np.asarray(shifted), [4.0, 1.0, 2.0, 3.0])


def test_collectives_over_two_nested_axes():
    grid = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    inner = jax.vmap(jax.vmap(lambda a: lax.psum(a, "i"), axis_name="j"), axis_name="i")(grid)
    np.testing.assert_allclose(np.asarray(inner), np.tile(grid.sum(0), (2, 1)))
    both = jax.vmap(jax.vmap(lambda a: lax.psum(a, ("i", "j")), axis_name="j"), axis_name="i")(grid)
    np.testing.assert_allclose(np.asarray(both), np.full((2, 3), 15.0))


def test_gradients_through_collectives_over_the_mapped_axis():
    xs = np.arange(3.0, dtype=np.float32)
    # as in JAX, psum transposes to psum: each example's gradient of psum(x) is the axis size
    np.testing.assert_allclose(np.asarray(jax.vmap(jax.grad(lambda a: lax.psum(a, "i")), axis_name="i")(xs)), 3.0)
    total = jax.grad(lambda v: jax.vmap(lambda a: lax.psum(a * a, "i"), axis_name="i")(v).sum())(xs)
    np.testing.assert_allclose(np.asarray(total), 6 * xs)


def test_per_example_gradients_under_a_batch_sharding_equal_numpy():
    mesh = jax.make_mesh((4,), ("x",), axis_types=jax.sharding.AxisType.Auto)
    rng = np.random.default_rng(0)
    w = rng.standard_normal((5,)).astype(np.float32)
    xs = rng.standard_normal((8, 5)).astype(np.float32)
    ys = rng.standard_normal((8,)).astype(np.float32)

    def loss(w, x, y):
        return (jnp.dot(x, w) - y) ** 2

    per_example = jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)),
                          in_shardings=(NamedSharding(mesh, P()), NamedSharding(mesh, P("x")),
                                        NamedSharding(mesh, P("x"))))
    got = per_example(w, xs, ys)
    expected = 2 * (xs @ w - ys)[:, None] * xs
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-5, atol=1e-6)
    assert got.sharding.is_equivalent_to(NamedSharding(mesh, P("x")), 2)


def test_spmd_axis_name_shards_the_mapped_dim():
    mesh = jax.make_mesh((4, 2), ("x", "y"), axis_types=jax.sharding.AxisType.Auto)
    with jax.set_mesh(mesh):
        f = jax.jit(jax.vmap(lambda row: jnp.sin(row) * 2, spmd_axis_name="x"))
        out = f(np.ones((8, 6), np.float32))
        text = f.lower(np.ones((8, 6), np.float32)).as_text()
    assert out.sharding.spec[0] == "x"
    assert 'sharding_constraint' in text
    np.testing.assert_allclose(np.asarray(out), np.sin(1.0) * 2 * np.ones((8, 6)), rtol=1e-6)


def test_spmd_axis_name_reaches_sharding_constraints_inside():
    mesh = jax.make_mesh((4, 2), ("x", "y"), axis_types=jax.sharding.AxisType.Auto)

    def row(v):
        return lax.with_sharding_constraint(v * 2, NamedSharding(mesh, P("y")))

    out = jax.jit(jax.vmap(row, spmd_axis_name="x"))(np.ones((4, 6), np.float32))
    assert out.sharding.is_equivalent_to(NamedSharding(mesh, P("x", "y")), 2)


def test_vmap_of_jit_and_jit_of_vmap():
    f = jax.jit(lambda a: jnp.tanh(a).sum())
    np.testing.assert_allclose(np.asarray(jax.vmap(f)(X)), np.tanh(X).sum(1), rtol=1e-6)
    g = jax.jit(jax.vmap(lambda a: jnp.cumsum(a)))
    np.testing.assert_allclose(np.asarray(g(X)), np.cumsum(X, 1))


def test_vmap_inside_and_around_shard_map():
    mesh = jax.make_mesh((4,), ("x",), axis_types=jax.sharding.AxisType.Auto)
    inside = jax.shard_map(lambda block: jax.vmap(lambda r: lax.psum(r.sum(), "x"))(block), mesh=mesh,
                           in_specs=P("x"), out_specs=P("x"))
    data = np.arange(32.0, dtype=np.float32).reshape(8, 4)
    sums = data.sum(1).reshape(4, 2)
    np.testing.assert_allclose(np.asarray(inside(data)), np.tile(sums.sum(0), 4))
    around = jax.vmap(jax.shard_map(lambda block: block * lax.axis_index("x"), mesh=mesh,
                                    in_specs=P("x"), out_specs=P("x")))
    batch = np.ones((3, 8), np.float32)
    np.testing.assert_allclose(np.asarray(around(batch)), np.tile(np.repeat(np.arange(4.0), 2), (3, 1)))


def test_vmap_over_keys_equals_each_key():
    keys = jax.random.split(jax.random.key(0), 4)
    batched = jax.vmap(lambda key: jax.random.normal(key, (3,)))(keys)
    for index in range(4):
        np.testing.assert_array_equal(np.asarray(batched[index]),
                                      np.asarray(jax.random.normal(keys[index], (3,))))


def test_per_example_indexing():
    labels = np.array([2, 0, 3], np.int32)
    picked = jax.vmap(lambda row, label: row[label])(X, labels)
    np.testing.assert_array_equal(np.asarray(picked), X[np.arange(3), labels])
    windows = jax.vmap(lambda row, start: lax.dynamic_slice(row, (start,), (2,)))(X, np.array([0, 1, 3], np.int32))
    np.testing.assert_array_equal(np.asarray(windows), [X[0, 0:2], X[1, 1:3], X[2, 2:4]])


ERRORS = [
    ("inconsistent sizes", lambda: jax.vmap(lambda a, b: a + b)(np.ones(3), np.ones(4)), ValueError,
     "vmap got inconsistent sizes for array axes to be mapped"),
    ("axis out of range", lambda: jax.vmap(lambda a: a, in_axes=2)(X), ValueError,
     "which implies that its rank should be at least 3, but is only 2"),
    ("nothing mapped", lambda: jax.vmap(lambda a: a, in_axes=None)(X), ValueError,
     "vmap must have at least one non-None value in in_axes"),
    ("in_axes not an int", lambda: jax.vmap(lambda a: a, in_axes="a")(X), TypeError,
     "vmap in_axes must be an int, None, or a tuple"),
    ("in_axes of the wrong length", lambda: jax.vmap(lambda a, b: a, in_axes=(0,))(X, X), ValueError,
     "len(in_axes)=1, len(args)=2"),
    ("in_axes not a prefix", lambda: jax.vmap(lambda a: a, in_axes=({"a": 0},))(X), ValueError,
     "vmap in_axes specification must be a tree prefix"),
    ("collective over an unbound name", lambda: jax.vmap(lambda a: lax.psum(a, "k"), axis_name="i")(X),
     NameError, "unbound axis name: 'k'"),
]


@pytest.mark.parametrize("name, call, error, fragment", ERRORS, ids=[row[0] for row in ERRORS])
def test_errors_are_jax_s(name, call, error, fragment):
    with pytest.raises(error) as caught:
        call()
    assert fragment in str(caught.value)


def test_custom_derivatives_and_stop_gradient_survive_vmap_under_grad():
    @jax.custom_jvp
    def doubled_slope(x):
        return jnp.sin(x)

    @doubled_slope.defjvp
    def _(primals, tangents):
        return doubled_slope(primals[0]), 2.0 * tangents[0]

    @jax.custom_vjp
    def tripled(x):
        return jnp.sin(x)

    tripled.defvjp(lambda x: (tripled(x), x), lambda x, cotangent: (3.0 * cotangent * x,))
    xs = np.arange(3.0, dtype=np.float32)
    for function, expected in ((doubled_slope, np.full(3, 2.0)), (tripled, 3 * xs)):
        np.testing.assert_allclose(np.asarray(jax.vmap(jax.grad(function))(xs)), expected)
        np.testing.assert_allclose(np.asarray(jax.grad(lambda v, f=function: jax.vmap(f)(v).sum())(xs)), expected)
    frozen = jax.grad(lambda v: jax.vmap(lambda x: lax.stop_gradient(x) * x)(v).sum())(xs)
    np.testing.assert_allclose(np.asarray(frozen), xs)


def test_outputs_the_function_did_not_compute_follow_jax():
    """Python values a vmapped function returns: unmapped (out_axes None) they come back as they
    are; mapped they are broadcast weakly typed in the default dtypes (they had become float64
    and int64 arrays with x64 off)."""
    ones = jnp.ones(2)
    assert jax.vmap(lambda a: (a, 1.0), out_axes=(0, None))(ones)[1] == 1.0
    assert type(jax.vmap(lambda a: (a, 1.0), out_axes=(0, None))(ones)[1]) is float
    mapped = jax.vmap(lambda a: (a, 1.0))(ones)[1]
    assert mapped.dtype == np.float32 and mapped.weak_type and mapped.tolist() == [1.0, 1.0]
    integers = jax.vmap(lambda a: 2)(ones)
    assert integers.dtype == np.int32 and integers.weak_type
    assert jax.vmap(lambda a: (a, np.ones(2)))(ones)[1].dtype == np.float32


def test_inconsistent_sizes_name_the_arguments_as_jax():
    def add(first, second):
        return first + second

    expected = ("vmap got inconsistent sizes for array axes to be mapped:\n"
                "  * one axis had size 2: axis 0 of argument first of type float32[2];\n"
                "  * one axis had size 3: axis 0 of kwargs['second'] of type float32[3]")
    with pytest.raises(ValueError) as raised:
        jax.vmap(add)(jnp.ones(2), second=jnp.ones(3))
    assert str(raised.value) == expected
    with pytest.raises(ValueError, match=r"the `axis_size` argument was 3;\n  \* one axis had size 2: axis 0 of argument a"):
        jax.vmap(lambda a: a, axis_size=3)(jnp.ones(2))
