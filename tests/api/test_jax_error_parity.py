"""Errors and edge values as JAX 0.10.2 gives them (the "Common Gotchas" and pytrees pages):
dicts come back with sorted keys,
static out-of-bounds indices clamp, lists are not jnp arguments, dict keys of mixed types
cannot be sorted, jax.errors' classes have JAX's bases."""

import pytest

import meshjit as jax
import meshjit.numpy as jnp


def test_static_out_of_bounds_indices_clamp_eagerly_and_under_jit():
    x = jnp.arange(10)
    assert int(x[11]) == 9 and int(x[-11]) == 0 and int(x[100]) == 9
    assert int(jax.jit(lambda a: a[11])(x)) == 9
    assert float(jnp.arange(10.0).at[11].get()) == 9.0
    assert jnp.ones((3, 4))[:, 7].tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(IndexError, match="out of bounds for axis 0 with size 0"):
        x[:0][0]


@pytest.mark.parametrize("call", [
    lambda: jnp.sum([1, 2, 3]), lambda: jnp.sin([1.0, 2.0]), lambda: jnp.add((1, 2), 1),
    lambda: jnp.dot([1, 2], [1, 2]), lambda: jnp.where(jnp.ones(2) > 0, [1, 2], 0),
])
def test_lists_and_tuples_are_not_array_arguments(call):
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        call()


def test_array_and_asarray_still_convert_lists():
    assert jnp.asarray([1, 2]).tolist() == [1, 2] and jnp.array((1.0, 2.0)).tolist() == [1.0, 2.0]


@pytest.mark.parametrize("call", [jax.tree.leaves, jax.tree.structure, jax.tree_util.tree_flatten,
                                  lambda tree: jax.tree.map(lambda leaf: leaf, tree)])
def test_dict_keys_of_mixed_types_raise(call):
    with pytest.raises(ValueError, match="Comparator raised exception while sorting pytree dictionary keys"):
        call({1: 7, "y": 42})


def test_non_concrete_boolean_index_error_is_an_index_error():
    with pytest.raises(IndexError):
        jax.jit(lambda x: x[x > 0])(jnp.arange(3.0))


def test_dicts_come_back_with_sorted_keys_as_in_jax():
    assert list(jax.tree.map(lambda leaf: leaf, {"weights": 1, "biases": 2})) == ["biases", "weights"]
    steps = [dict(t=1, obs=3), dict(t=2, obs=4)]
    assert list(jax.tree.map(lambda *xs: list(xs), *steps)) == ["obs", "t"]
    assert list(jax.jit(lambda: {"b": 1.0, "a": 2.0})()) == ["a", "b"]
    leaves, treedef = jax.tree.flatten({"b": 1, "a": 2})
    assert leaves == [2, 1] and list(jax.tree.unflatten(treedef, leaves)) == ["a", "b"]


# JAX 0.10.2's bases of each class in jax.errors, nearest first, up to the builtin exception
# (JAX's private mixin left out).
JAX_BASES = {
    "NonConcreteBooleanIndexError": ["JAXIndexError", "IndexError"],
    "ConcretizationTypeError": ["JAXTypeError", "TypeError"],
    "TracerBoolConversionError": ["ConcretizationTypeError", "JAXTypeError", "TypeError"],
    "TracerIntegerConversionError": ["JAXTypeError", "TypeError"],
    "TracerArrayConversionError": ["JAXTypeError", "TypeError"],
    "UnexpectedTracerError": ["JAXTypeError", "TypeError"],
    "KeyReuseError": ["JAXTypeError", "TypeError"],
    "JAXTypeError": ["TypeError"],
    "JAXIndexError": ["IndexError"],
}


@pytest.mark.parametrize("name", sorted(JAX_BASES))
def test_error_classes_have_jax_bases(name):
    bases = [cls.__name__ for cls in getattr(jax.errors, name).__mro__[1:]]
    expected = JAX_BASES[name]
    assert bases[:len(expected)] == expected


def test_traced_boolean_mask_raises_an_index_error():
    with pytest.raises(IndexError, match="boolean mask"):
        jax.jit(lambda x: x[x > 0])(jnp.arange(3))


@pytest.mark.parametrize("call, error", [
    (lambda x: int(x), "ConcretizationTypeError"), (lambda x: float(x), "ConcretizationTypeError"),
    (lambda x: bool(x), "TracerBoolConversionError"), (lambda x: range(x), "TracerIntegerConversionError"),
    (lambda x: [1, 2][x], "TracerIntegerConversionError"), (lambda x: x.item(), "ConcretizationTypeError"),
    (lambda x: __import__("numpy").asarray(x), "TracerArrayConversionError"),
])
def test_concretizing_a_traced_value_raises_jax_class(call, error):
    with pytest.raises(jax.errors.JAXTypeError) as raised:
        jax.jit(call)(1)
    assert type(raised.value).__name__ == error


def test_where_with_one_argument_is_nonzero():
    assert jnp.where(jnp.arange(4) > 1)[0].tolist() == [2, 3]
    assert jnp.where(jnp.arange(4) > 1, size=3, fill_value=-1)[0].tolist() == [2, 3, -1]
    assert jax.jit(lambda x: jnp.where(x > 1, size=3))(jnp.arange(4))[0].tolist() == [2, 3, 0]
    with pytest.raises(jax.errors.ConcretizationTypeError):
        jax.jit(lambda x: jnp.where(x > 1))(jnp.arange(4))
    with pytest.raises(ValueError, match="size and fill_value arguments cannot be used in three-term"):
        jnp.where(jnp.arange(3) > 0, 1, 2, size=3)
    with pytest.raises(TypeError, match="where requires ndarray or scalar arguments"):
        jnp.where(jnp.arange(3) > 0, 1)
