"""Regression tests for the crashes and differences a randomized campaign against numpy and JAX
0.10.2 found (issue 16): each test is one repro, with the value or exception JAX gives."""

from __future__ import annotations

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit import lax
from meshjit.sharding import Mesh, NamedSharding
from meshjit.sharding import PartitionSpec as P


def _mesh(shape, names) -> Mesh:
    return Mesh(np.array(jax.devices()).reshape(shape), names)


MESH_8 = _mesh((8,), ("x",))
MESH_2x4 = _mesh((2, 4), ("x", "y"))
MESH_1x8 = _mesh((1, 8), ("x", "y"))


# --- 1. size-0 arrays over several devices ------------------------------------------------------


def test_jit_of_an_empty_array_with_replicated_output():
    result = jax.jit(lambda a: a * 2, out_shardings=NamedSharding(MESH_8, P()))(np.zeros((0, 4), np.float32))
    assert result.shape == (0, 4) and result.dtype == np.float32
    assert result.sharding.is_equivalent_to(NamedSharding(MESH_8, P()), 2)
    assert np.asarray(result).shape == (0, 4)


def test_eager_empty_slice_of_a_sharded_array():
    placed = jax.device_put(np.ones((8, 4), np.float32), NamedSharding(MESH_8, P("x")))
    empty = placed[3:3]
    assert empty.shape == (0, 4)
    assert all(shard.data.shape[0] == 0 for shard in empty.addressable_shards)


def test_empty_array_inside_a_larger_program():
    placed = jax.device_put(np.zeros((1, 2, 0), np.float32), NamedSharding(MESH_8, P()))
    result = jax.jit(lambda a: jnp.minimum(jnp.stack([a], 3), -0.5))(placed)
    assert result.shape == (1, 2, 0, 1)
    sharded = jax.device_put(np.zeros((1, 2, 0), np.float32), NamedSharding(MESH_8, P(None, None, "x")))
    assert jnp.minimum(jnp.stack([sharded], 3), -0.5).shape == (1, 2, 0, 1)
    # the layout that reached the partitioner as a ShapeError (stack's expand_dims of an empty array)
    out_shardings = NamedSharding(MESH_2x4, P(None, "x"))
    function = jax.jit(lambda a: jnp.minimum(jnp.stack([a], 3), -0.5), out_shardings=out_shardings)
    result = function(np.zeros((1, 2, 0), np.float32))
    assert result.shape == (1, 2, 0, 1) and result.sharding.is_equivalent_to(out_shardings, 4)


def test_empty_arrays_under_grad_and_donation():
    placed = jax.device_put(np.zeros((0, 4), np.float32), NamedSharding(MESH_8, P("x")))
    gradient = jax.grad(lambda a: jnp.sum(jnp.tanh(a) * 2))(placed)
    assert gradient.shape == (0, 4)
    donated = jax.jit(lambda a: a + 1, donate_argnums=0)(placed)
    assert donated.shape == (0, 4) and placed.is_deleted()


# --- 2. propagation never lays out an argument so that a valid call fails -----------------------


def test_uncommitted_arguments_that_do_not_divide_are_replicated():
    values = np.arange(4.0, dtype=np.float32)
    function = jax.jit(lambda a, b: jnp.concatenate([a, b]), out_shardings=NamedSharding(MESH_8, P("x")))
    result = function(values, values)
    np.testing.assert_array_equal(np.asarray(result), [0, 1, 2, 3, 0, 1, 2, 3])
    assert result.sharding.is_equivalent_to(NamedSharding(MESH_8, P("x")), 1)
    for sharding in function.lower(values, values).compile().input_shardings[0]:
        assert sharding.is_fully_replicated


def test_arguments_that_divide_may_still_be_laid_out_by_propagation():
    function = jax.jit(lambda a: a * 2, out_shardings=NamedSharding(MESH_8, P("x")))
    (sharding,), _ = function.lower(np.arange(16.0)).compile().input_shardings
    assert sharding.is_equivalent_to(NamedSharding(MESH_8, P("x")), 1)


def test_in_shardings_that_do_not_divide_still_raise():
    function = jax.jit(lambda a: a * 2, in_shardings=NamedSharding(MESH_8, P("x")))
    with pytest.raises(jax.sharding.IndivisibleError):
        function(np.arange(4.0))


# --- 3. a size-1 mesh axis on two contracting dims ----------------------------------------------


def test_size_one_mesh_axis_on_two_contracting_dims():
    ones = np.ones((4, 2), np.float32)
    in_shardings = (NamedSharding(MESH_1x8, P("x", None)), NamedSharding(MESH_1x8, P(None, "x")))
    result = jax.jit(lambda a, b: jnp.tensordot(a, b, axes=2), in_shardings=in_shardings)(ones, ones)
    assert float(result) == 8.0


# --- 4, 5. autodiff ------------------------------------------------------------------------------


def test_grad_through_sort_of_a_sharded_operand():
    values = np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32)
    placed = jax.device_put(values, NamedSharding(MESH_8, P(None, "x")))
    gradient = jax.grad(lambda a: jnp.sum(jnp.tanh(jnp.sort(a, 0))))(placed)
    order = np.argsort(values, axis=0)
    expected = np.empty_like(values)
    np.put_along_axis(expected, order, 1 - np.tanh(np.sort(values, 0)) ** 2, axis=0)
    np.testing.assert_allclose(np.asarray(gradient), expected, rtol=1e-5, atol=1e-6)


def test_vjp_of_a_sharding_constraint_followed_by_flip():
    def function(a):
        return jnp.sum(jnp.flip(lax.with_sharding_constraint(a, NamedSharding(MESH_8, P("x")))))

    _, pullback = jax.vjp(function, jnp.arange(8.0))
    (cotangent,) = pullback(jnp.ones(()))
    np.testing.assert_array_equal(np.asarray(cotangent), np.ones(8))
    _, tangent_map = jax.linearize(function, jnp.arange(8.0))
    assert float(tangent_map(jnp.ones(8))) == 8.0


# --- 6, 7, 8. shard_map collectives -------------------------------------------------------------


def _mapped(body, in_specs, out_specs, **options):
    return jax.shard_map(body, mesh=MESH_2x4, in_specs=in_specs, out_specs=out_specs, **options)


def test_psum_of_an_already_invariant_value():
    result = _mapped(lambda b: lax.psum(lax.psum(b, "x"), "x"), P("x"), P())(np.arange(8.0, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(result), [8, 12, 16, 20])


def test_all_gather_of_an_already_gathered_value():
    values = np.arange(16.0, dtype=np.float32)
    body = lambda b: lax.all_gather(lax.all_gather(b, "y", tiled=True), "y", tiled=True)
    result = np.asarray(_mapped(body, P("y"), P("y"))(values))
    np.testing.assert_array_equal(result, np.tile(values, 16))
    unchecked = np.asarray(_mapped(body, P("y"), P(), check_vma=False)(values))
    np.testing.assert_array_equal(unchecked, np.tile(values, 4))


def test_ppermute_numbers_devices_in_mesh_order_whatever_the_listed_order():
    shift = [(index, (index + 1) % 8) for index in range(8)]
    values = np.arange(8.0, dtype=np.float32)
    for axes in (("x", "y"), ("y", "x")):
        result = _mapped(lambda b, axes=axes: lax.ppermute(b, axes, shift), P(("x", "y")), P(("x", "y")))(values)
        np.testing.assert_array_equal(np.asarray(result), [7, 0, 1, 2, 3, 4, 5, 6])


# --- 9. eager with_sharding_constraint with P.UNCONSTRAINED ---------------------------------------


@pytest.mark.parametrize(("current", "spec", "expected"), [
    # (the layout the value has, the constraint, JAX 0.10.2's resulting spec)
    (None, P(P.UNCONSTRAINED), P()),
    (None, P(P.UNCONSTRAINED, "x"), P(None, "x")),
    (P("x"), P(P.UNCONSTRAINED), P("x")),
    (P("x"), P(P.UNCONSTRAINED, "x"), P(None, "x")),
    (P("x"), P("y", P.UNCONSTRAINED), P("y")),
    (P("y", "x"), P(P.UNCONSTRAINED, P.UNCONSTRAINED), P("y", "x")),
    (P("y", "x"), P(P.UNCONSTRAINED, None), P("y")),
    (P(None, "y"), P(P.UNCONSTRAINED), P()),
])
def test_eager_sharding_constraint_accepts_unconstrained_dims(current, spec, expected):
    values = np.arange(64.0, dtype=np.float32).reshape(8, 8)
    value = values if current is None else jax.device_put(values, NamedSharding(MESH_2x4, current))
    result = lax.with_sharding_constraint(value, NamedSharding(MESH_2x4, spec))
    np.testing.assert_array_equal(np.asarray(result), values)
    assert result.sharding == NamedSharding(MESH_2x4, expected)


# --- 11. exception types are JAX's --------------------------------------------------------------

_A = np.ones((2, 3), np.float32)
_MISUSE = {
    # name: (function of one (2, 3) array, JAX 0.10.2's exception type)
    "reshape": (lambda a: jnp.reshape(a, (4,)), TypeError),
    "reshape two unknowns": (lambda a: a.reshape(-1, -1), TypeError),
    "matmul": (lambda a: jnp.matmul(a, a), TypeError),
    "matmul operator": (lambda a: a @ a, TypeError),
    "dot": (lambda a: jnp.dot(a, a), TypeError),
    "tensordot": (lambda a: jnp.tensordot(a, a, axes=1), TypeError),
    "matmul batch dims": (lambda a: jnp.matmul(jnp.ones((2, 2, 3)), jnp.ones((3, 3, 4))), ValueError),
    "concatenate": (lambda a: jnp.concatenate([a, a.T]), TypeError),
    "concatenate ranks": (lambda a: jnp.concatenate([a, a[0]]), TypeError),
    "stack": (lambda a: jnp.stack([a, a.T]), ValueError),
    "transpose": (lambda a: jnp.transpose(a, (0, 0)), TypeError),
    "add same rank": (lambda a: a + a.T, TypeError),
    "maximum same rank": (lambda a: jnp.maximum(a, a.T), TypeError),
    "add other rank": (lambda a: a + jnp.ones(2), ValueError),
    "power other rank": (lambda a: a ** jnp.ones((4, 1, 2)), ValueError),
    "where": (lambda a: jnp.where(a > 0, a, a.T), ValueError),
    "zeros negative": (lambda a: jnp.zeros((-1, 2)), TypeError),
    "dynamic_slice": (lambda a: lax.dynamic_slice(a, (0,), (1, 1)), ValueError),
    "dynamic_update_slice": (lambda a: lax.dynamic_update_slice(a, jnp.ones((1, 1)), (0,)), ValueError),
    "sum axis": (lambda a: jnp.sum(a, axis=2), ValueError),
    "sharding constraint of a non-sharding": (lambda a: lax.with_sharding_constraint(a, 3), TypeError),
}


@pytest.mark.parametrize("mode", ["eager", "jit"])
@pytest.mark.parametrize("name", sorted(_MISUSE))
def test_misuse_raises_the_exception_type_of_jax(name, mode):
    function, error = _MISUSE[name]
    call = (lambda: function(jnp.asarray(_A))) if mode == "eager" else (lambda: jax.jit(function)(_A))
    with pytest.raises(error):
        call()


@pytest.mark.parametrize(("perm", "error"), [([(0, 5)], IndexError), ([(5, 0)], IndexError),
                                             ([(0, 1, 2)], ValueError), ([0], TypeError)])
def test_ppermute_misuse_raises_the_exception_type_of_jax(perm, error):
    with pytest.raises(error):
        _mapped(lambda b: lax.ppermute(b, "x", perm), P("x"), P("x"))(np.arange(8.0, dtype=np.float32))


_ARGUMENT_MISUSE = {
    # name: (call, fragment naming the argument); JAX raises TypeError for each
    "out_shardings of a bool": (lambda: jax.jit(lambda v: v, out_shardings=True)(np.ones(8)), "out_shardings"),
    "in_shardings of an int": (lambda: jax.jit(lambda v: v, in_shardings=7)(np.ones(8)), "in_shardings"),
    "static_argnums of a float": (lambda: jax.jit(lambda v: v, static_argnums=3.5), "static_argnums"),
    "donate_argnums of an object": (lambda: jax.jit(lambda v: v, donate_argnums=object()), "donate_argnums"),
    "arange of None": (lambda: jnp.arange(None), "arange"),
    "arrays that are not a sequence": (
        lambda: jax.make_array_from_single_device_arrays((8,), NamedSharding(MESH_8, P("x")), None), "arrays"),
    "axis_names of a bool": (lambda: Mesh(np.array(jax.devices()), True), "axis_names"),
}


@pytest.mark.parametrize("name", sorted(_ARGUMENT_MISUSE))
def test_argument_misuse_is_a_type_error_naming_the_argument(name):
    call, fragment = _ARGUMENT_MISUSE[name]
    with pytest.raises(TypeError, match=fragment):
        call()


def test_iterating_a_0d_array_is_a_type_error():
    with pytest.raises(TypeError, match="iteration over a 0-d array"):
        list(jnp.asarray(3.0))
    assert [row.shape for row in jnp.ones((2, 3))] == [(3,), (3,)]
