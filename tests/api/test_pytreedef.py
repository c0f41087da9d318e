"""meshjit's tree structures behave as JAX 0.10.2's PyTreeDef (expected texts and values as JAX
prints them, run side by side): repr, equality, hashing, pickling, children, compose,
node_data, and dicts in sorted key order out of every transformation."""

import collections
import dataclasses
import pickle

import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit import tree_util

Point = collections.namedtuple("Point", "x y")


class Pair:
    def __init__(self, a, b):
        self.a, self.b = a, b


tree_util.register_pytree_node(Pair, lambda pair: ((pair.a, pair.b), "aux"), lambda aux, children: Pair(*children))


@dataclasses.dataclass
class Scaled:
    x: float
    scale: float


tree_util.register_dataclass(Scaled, data_fields=["x"], meta_fields=["scale"])

# (tree, JAX's repr of its structure, num_leaves, num_nodes)
CASES = [
    (object, "PyTreeDef(*)", 1, 1),
    (None, "PyTreeDef(None)", 0, 1),
    ((1, 2), "PyTreeDef((*, *))", 2, 3),
    ((1,), "PyTreeDef((*,))", 1, 2),
    ([1, (2, 3)], "PyTreeDef([*, (*, *)])", 3, 5),
    ({"b": 1, "a": [2, None]}, "PyTreeDef({'a': [*, None], 'b': *})", 2, 5),
    (Point(1, (2, 3)), "PyTreeDef(CustomNode(namedtuple[Point], [*, (*, *)]))", 3, 5),
    (Pair(1, 2), "PyTreeDef(CustomNode(Pair[aux], [*, *]))", 2, 3),
    (Scaled(1.0, 2.0), "PyTreeDef(CustomNode(Scaled[(2.0,)], [*]))", 1, 2),
    (collections.OrderedDict(b=1, a=2), "PyTreeDef(CustomNode(OrderedDict[('b', 'a')], [*, *]))", 2, 3),
    (collections.defaultdict(list, b=1, a=2),
     "PyTreeDef(CustomNode(defaultdict[(<class 'list'>, ('a', 'b'))], [*, *]))", 2, 3),
    ((), "PyTreeDef(())", 0, 1),
    ({}, "PyTreeDef({})", 0, 1),
    (tree_util.Partial(print, 1), "PyTreeDef(CustomNode(Partial[<built-in function print>], [(*,), {}]))", 1, 4),
]


@pytest.mark.parametrize("tree, text, leaves, nodes", CASES, ids=[case[1] for case in CASES])
def test_structure_prints_and_counts_as_jax(tree, text, leaves, nodes):
    treedef = tree_util.tree_structure(tree)
    assert type(treedef).__name__ == "PyTreeDef" and isinstance(treedef, tree_util.PyTreeDef)
    assert repr(treedef) == str(treedef) == text
    assert (treedef.num_leaves, treedef.num_nodes) == (leaves, nodes)
    again = tree_util.tree_structure(tree)
    assert treedef == again and hash(treedef) == hash(again) and treedef != 3
    assert pickle.loads(pickle.dumps(treedef)) == treedef


def test_children_compose_and_node_data_as_jax():
    treedef = tree_util.tree_structure({"b": 1, "a": [2, 3]})
    assert repr(treedef.children()) == "[PyTreeDef([*, *]), PyTreeDef(*)]"
    assert repr(tree_util.treedef_children(treedef)) == "[PyTreeDef([*, *]), PyTreeDef(*)]"
    composed = tree_util.tree_structure((1, 2)).compose(tree_util.tree_structure([1, 1, 1]))
    assert repr(composed) == "PyTreeDef(([*, *, *], [*, *, *]))" and composed.num_leaves == 6
    assert treedef.node_data() == (dict, ["a", "b"])
    assert tree_util.tree_structure((1, 2)).node_data() == (tuple, None)
    assert tree_util.tree_structure(1).node_data() is None
    assert tree_util.tree_structure(collections.OrderedDict(b=1)).node_data() == (collections.OrderedDict, ("b",))
    assert repr(tree_util.treedef_tuple([tree_util.tree_structure((1, 2)), composed.children()[0]])) == \
        "PyTreeDef(((*, *), [*, *, *]))"
    assert tree_util.tree_structure((1, 2)) != tree_util.tree_structure([1, 2])
    with pytest.raises(TypeError):
        tree_util.tree_structure(1).compose(3)


def test_unflatten_and_flatten_up_to_as_jax():
    treedef = tree_util.tree_structure({"b": 1, "a": 2})
    assert list(treedef.unflatten(iter([1, 2]))) == ["a", "b"]
    assert list(tree_util.tree_structure(collections.defaultdict(list, b=1, a=2)).unflatten([0, 1])) == ["a", "b"]
    assert tree_util.tree_structure((1, 2)).flatten_up_to(([1, 2], {"a": 3})) == [[1, 2], {"a": 3}]
    with pytest.raises(ValueError):
        tree_util.tree_structure((1, 2)).flatten_up_to([1, 2])
    with pytest.raises(ValueError):
        treedef.unflatten([1])
    leaves, flat_def = jax.tree.flatten([1, {"x": 2}])
    assert leaves == [1, 2] and repr(flat_def) == "PyTreeDef([*, {'x': *}])"
    assert tree_util.tree_unflatten(tree_util.tree_structure((0, 0)), [5, 6]) == (5, 6)
    outer, inner = tree_util.tree_structure([0, 0]), tree_util.tree_structure((0, 0))
    assert tree_util.tree_transpose(outer, inner, [(1, 2), (3, 4)]) == ([1, 3], [2, 4])


def _loss(params):
    return params["z"] * 2.0 + params["a"] * 3.0 + params["m"]


PARAMS = {"z": 1.0, "a": 2.0, "m": 3.0}


def test_transformations_return_dicts_in_sorted_key_order_as_jax():
    """JAX 0.10.2 prints ['a', 'm', 'z'] (and ['b', 'z'], ['c', 'y'], ['b', 'q']) for each."""
    assert list(jax.grad(_loss)(PARAMS)) == ["a", "m", "z"]
    assert list(jax.value_and_grad(_loss)(PARAMS)[1]) == ["a", "m", "z"]
    assert list(jax.jit(lambda p: p)(PARAMS)) == ["a", "m", "z"]
    assert list(jax.jit(lambda p: {"z": p["z"], "b": p["a"]})(PARAMS)) == ["b", "z"]
    out, vjp_fun = jax.vjp(lambda p: {"y": p["z"], "c": p["a"]}, PARAMS)
    assert list(out) == ["c", "y"] and list(vjp_fun(out)[0]) == ["a", "m", "z"]
    batched = {"z": jnp.ones(2), "a": jnp.ones(2)}
    assert list(jax.vmap(lambda p: {"q": p["z"], "b": p["a"]})(batched)) == ["b", "q"]
    assert list(jax.jvp(lambda p: {"q": p["z"], "b": p["a"]}, (PARAMS,), (PARAMS,))[1]) == ["b", "q"]
    seen = []
    jax.jit(lambda p: seen.append(list(p)))(PARAMS)
    assert seen == [["a", "m", "z"]]  # JAX's jit unflattens its arguments in sorted order too


def test_lowered_trees_are_pytreedefs():
    lowered = jax.jit(lambda p: p["b"]).lower({"b": jnp.ones(2), "a": jnp.ones(2)})
    assert repr(lowered.in_tree) == "PyTreeDef((({'a': *, 'b': *},), {}))"
    assert repr(lowered.out_tree) == "PyTreeDef(*)"
    assert repr(lowered.compile().in_tree) == repr(lowered.in_tree)


@pytest.mark.parametrize("call, message", [
    (lambda: tree_util.tree_structure((1, 2)).unflatten([1]), "Too few leaves for PyTreeDef; expected 2, got 1"),
    (lambda: tree_util.tree_structure((1, 2)).unflatten([1, 2, 3]), "Too many leaves for PyTreeDef; expected 2."),
    (lambda: tree_util.tree_unflatten(tree_util.tree_structure([1, 2]), [1]),
     "Too few leaves for PyTreeDef; expected 2, got 1"),
    (lambda: tree_util.tree_structure((1, 2)).flatten_up_to([1, 2]), "Expected tuple, got [1, 2]."),
    (lambda: tree_util.tree_structure((1, 2)).flatten_up_to((1, 2, 3)),
     "Tuple arity mismatch: 3 != 2; tuple: (1, 2, 3)."),
    (lambda: tree_util.tree_structure([1, 2]).flatten_up_to([1]), "List arity mismatch: 1 != 2; list: [1]."),
    (lambda: tree_util.tree_structure({"a": 1}).flatten_up_to({"b": 1}),
     "Dict key mismatch; expected keys: ['a']; present keys: ['b']."),
    (lambda: tree_util.tree_structure({"a": 1}).flatten_up_to([1]), "Expected dict, got [1]."),
])
def test_structure_errors_in_jax_words(call, message):
    """JAX 0.10.2's messages, word for word."""
    with pytest.raises(ValueError) as raised:
        call()
    assert str(raised.value) == message
