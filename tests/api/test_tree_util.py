"""meshjit.tree and meshjit.tree_util as JAX's: key paths and keystr, the registration functions,
custom nodes through jit, grad and shard_map, static nodes as static values, Partial; and
make_jaxpr printing the traced program."""

from __future__ import annotations

import collections
import dataclasses

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit import tree_util
from meshjit.sharding import PartitionSpec as P
from meshjit.tree_util import DictKey, FlattenedIndexKey, GetAttrKey, SequenceKey

Pair = collections.namedtuple("Pair", "a b")
TREE = {"x": [1, (2, 3)], "y": Pair(4, 5), "z": None}


def test_paths_and_keystr_are_jax_s():
    pairs, treedef = jax.tree.flatten_with_path(TREE)
    assert [path for path, _ in pairs] == [
        (DictKey("x"), SequenceKey(0)), (DictKey("x"), SequenceKey(1), SequenceKey(0)),
        (DictKey("x"), SequenceKey(1), SequenceKey(1)), (DictKey("y"), GetAttrKey("a")),
        (DictKey("y"), GetAttrKey("b"))]
    assert [jax.tree_util.keystr(path) for path, _ in pairs] == [
        "['x'][0]", "['x'][1][0]", "['x'][1][1]", "['y'].a", "['y'].b"]
    assert jax.tree_util.keystr(pairs[1][0], simple=True, separator="/") == "x/1/0"
    assert jax.tree.unflatten(treedef, [leaf for _, leaf in pairs]) == TREE


def test_tree_functions():
    assert jax.tree.leaves(TREE) == [1, 2, 3, 4, 5]
    assert jax.tree.map(lambda leaf: leaf * 10, TREE)["y"] == Pair(40, 50)
    assert jax.tree.reduce(lambda a, b: a + b, TREE) == 15
    assert jax.tree.reduce(lambda a, b: a + b, TREE, 100) == 115
    assert jax.tree.all([1, (True, 2)]) and not jax.tree.all([1, (0, 2)])
    assert jax.tree_util.tree_all({"a": True}) and jax.tree.structure(TREE).num_leaves == 5
    labelled = jax.tree.map_with_path(lambda path, leaf: f"{jax.tree_util.keystr(path)}={leaf}", TREE)
    assert labelled["y"].b == "['y'].b=5"
    assert jax.tree.leaves_with_path([7])[0] == ((SequenceKey(0),), 7)
    outer, inner = jax.tree.structure([0, 0]), jax.tree.structure((0, 0, 0))
    assert jax.tree.transpose(outer, inner, [(1, 2, 3), (4, 5, 6)]) == ([1, 4], [2, 5], [3, 6])


@jax.tree_util.register_pytree_with_keys_class
class Affine:
    def __init__(self, weight, bias, name="affine"):
        self.weight, self.bias, self.name = weight, bias, name

    def tree_flatten_with_keys(self):
        return [(GetAttrKey("weight"), self.weight), (GetAttrKey("bias"), self.bias)], self.name

    @classmethod
    def tree_unflatten(cls, name, children):
        return cls(*children, name=name)

    def __call__(self, x):
        return x @ self.weight + self.bias


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Model:
    layer: Affine
    scale: object
    activation: str = dataclasses.field(default="tanh", metadata=dict(static=True))


def _model():
    weight = np.arange(6, dtype=np.float32).reshape(3, 2) / 10
    return Model(Affine(weight, np.ones(2, np.float32)), np.float32(2.0))


def test_custom_nodes_have_key_paths():
    paths = [jax.tree_util.keystr(path) for path, _ in jax.tree.flatten_with_path(_model())[0]]
    assert paths == [".layer.weight", ".layer.bias", ".scale"]


def test_custom_nodes_through_jit_and_grad():
    model, x = _model(), np.ones((4, 3), np.float32)

    def loss(model, x):
        activation = getattr(jnp, model.activation)
        return jnp.sum(activation(model.layer(x)) * model.scale)

    gradient = jax.jit(jax.grad(loss))(model, x)
    assert isinstance(gradient, Model) and gradient.activation == "tanh"
    assert gradient.layer.name == "affine"
    hidden = x @ model.layer.weight + model.layer.bias
    expected_bias = (model.scale * (1 - np.tanh(hidden) ** 2)).sum(0)
    np.testing.assert_allclose(np.asarray(gradient.layer.bias), expected_bias, rtol=1e-5)
    np.testing.assert_allclose(float(gradient.scale), np.tanh(hidden).sum(), rtol=1e-5)


def test_custom_nodes_through_shard_map():
    mesh = jax.make_mesh((4,), ("x",), axis_types=jax.sharding.AxisType.Auto)
    layer = Affine(np.ones((3, 2), np.float32), np.zeros(2, np.float32))
    apply = jax.shard_map(lambda layer, x: layer(x), mesh=mesh,
                          in_specs=(Affine(P(), P(), "affine"), P("x")), out_specs=P("x"))
    x = np.arange(24, dtype=np.float32).reshape(8, 3)
    np.testing.assert_allclose(np.asarray(apply(layer, x)), x @ layer.weight)


@jax.tree_util.register_static
@dataclasses.dataclass(frozen=True)
class Config:
    power: int


def test_static_nodes_are_static_values_under_jit():
    traces = []

    @jax.jit
    def apply(x, config):
        traces.append(config)
        assert isinstance(config.power, int)  # a Python value, not a traced one
        return x ** config.power

    x = np.full(3, 2.0, np.float32)
    np.testing.assert_array_equal(np.asarray(apply(x, Config(3))), 8.0)
    np.testing.assert_array_equal(np.asarray(apply(x, Config(3))), 8.0)
    np.testing.assert_array_equal(np.asarray(apply(x, Config(2))), 4.0)
    assert traces == [Config(3), Config(2)]
    assert jax.tree.leaves(Config(1)) == []


def test_partial_is_a_pytree_of_its_arguments():
    scale = jax.tree_util.Partial(jnp.multiply, np.float32(3.0))
    assert len(jax.tree.leaves(scale)) == 1
    result = jax.jit(lambda function, x: function(x))(scale, np.float32(2.0))
    assert float(result) == 6.0
    nested = jax.tree_util.Partial(scale, np.float32(4.0))
    assert nested.func is jnp.multiply and float(nested()) == 12.0


def test_register_pytree_node_without_keys_gives_flat_indices():
    class Box:
        def __init__(self, items):
            self.items = items

    jax.tree_util.register_pytree_node(Box, lambda box: (box.items, None), lambda _, items: Box(list(items)))
    paths = [path for path, _ in jax.tree.flatten_with_path(Box([1, 2]))[0]]
    assert paths == [(FlattenedIndexKey(0),), (FlattenedIndexKey(1),)]
    assert jax.tree_util.keystr(paths[1]) == "[<flat index 1>]"


def test_register_dataclass_needs_both_field_lists_or_neither():
    @dataclasses.dataclass
    class Thing:
        a: int

    with pytest.raises(TypeError, match="give both data_fields and meta_fields"):
        jax.tree_util.register_dataclass(Thing, data_fields=["a"])


def test_make_jaxpr_prints_the_traced_program():
    program = jax.make_jaxpr(lambda x, y: jnp.sin(x) * y)(np.ones(3, np.float32), 2.0)
    text = program.as_text()
    assert text.startswith("func @main(%x: f32[3], %y: f32[]) -> (f32[3])")
    assert "sin(%x)" in text and "mul(" in text
    assert str(program).startswith("{ lambda ; a:f32[3] b:f32[]. let")
    assert [(aval.shape, aval.dtype, aval.weak_type) for aval in program.in_avals] == [
        ((3,), np.float32, False), ((), np.float32, True)]
    program, shapes = jax.make_jaxpr(lambda x: {"double": 2 * x}, return_shape=True)(np.ones(2, np.int32))
    assert shapes == {"double": jax.ShapeDtypeStruct((2,), np.int32)}


def test_make_jaxpr_static_argnums():
    text = str(jax.make_jaxpr(lambda x, n: x * n, static_argnums=1)(np.ones(2, np.float32), 3))
    assert text == "{ lambda ; a:f32[2]. let b:f32[2] = mul a 3.0:f32[] in (b,) }"


def test_custom_nodes_through_vmap():
    model = _model()
    xs = np.ones((5, 3), np.float32)
    out = jax.vmap(lambda model, x: model.layer(x) * model.scale, in_axes=(None, 0))(model, xs)
    np.testing.assert_allclose(np.asarray(out), (xs @ model.layer.weight + model.layer.bias) * 2.0, rtol=1e-6)
    stacked = Affine(np.ones((4, 3, 2), np.float32), np.zeros((4, 2), np.float32))
    per_layer = jax.vmap(lambda layer: layer(np.ones(3, np.float32)))(stacked)
    np.testing.assert_allclose(np.asarray(per_layer), np.full((4, 2), 3.0))


def test_one_level_broadcast_associative_reduce_and_tuple_as_jax():
    # the values JAX 0.10.2 prints for these calls
    assert tree_util.flatten_one_level({"b": [2, 3], "a": 1}) == ((1, [2, 3]), ("a", "b"))
    keyed, metadata = tree_util.flatten_one_level_with_keys((1, None))
    assert [str(key) for key, _ in keyed] == ["[0]", "[1]"] and metadata is None
    assert tree_util.flatten_one_level(None) == ((), None)
    with pytest.raises(ValueError, match="can't tree-flatten type"):
        tree_util.flatten_one_level(3)
    assert jax.tree.broadcast([1, {"a": 2}], [[3, 4], {"a": (5, 6)}]) == [[1, 1], {"a": (2, 2)}]
    assert jax.tree.reduce_associative(lambda a, b: f"({a}{b})", list("abcde")) == "((ab)(c(de)))"
    assert tree_util.tree_reduce_associative(lambda a, b: a + b, [], identity=0) == 0
    with pytest.raises(TypeError, match="Must specify identity"):
        tree_util.tree_reduce_associative(lambda a, b: a + b, [])
    pair = tree_util.treedef_tuple([tree_util.tree_structure([1, 2]), tree_util.tree_structure({"a": 1})])
    assert tree_util.tree_unflatten(pair, [1, 2, 3]) == ([1, 2], {"a": 3})
