"""JAX's ``PyTreeDef``: the tree structures meshjit shows its users (``tree_structure``,
``tree_flatten``, ``Lowered.in_tree``, ...) print, compare, hash, pickle and unflatten as JAX
0.10.2's do. A thin class over optree's ``PyTreeSpec`` (meshjit's transformations keep using the
spec itself); ``jax_ordered`` gives the spec JAX builds, with every dict's keys sorted, so
unflattened dicts come back in sorted key order as JAX's do.
"""

from __future__ import annotations

import functools
import re

import optree

_KIND = optree.PyTreeKind


def _root_state(spec: optree.PyTreeSpec) -> tuple:
    """The root node's record in optree's pickled state: (kind, arity, node data, entries,
    custom type, leaves, nodes, original keys)."""
    return spec.__reduce__()[2][0][-1]


def _node_data(spec: optree.PyTreeSpec):
    return _root_state(spec)[2]


def _sorted_keys(keys) -> list:
    try:
        return sorted(keys)
    except TypeError:
        raise ValueError("Comparator raised exception while sorting pytree dictionary keys.") from None


def _sorted_node(node: optree.PyTreeSpec) -> optree.PyTreeSpec:
    """A dict (or defaultdict) node with its keys in sorted order: JAX sorts them, optree keeps
    the insertion order for unflattening. Keys of mixed types are JAX's ValueError."""
    if node.kind not in (_KIND.DICT, _KIND.DEFAULTDICT):
        return node
    keys = _sorted_keys(node.entries())
    options = {"none_is_leaf": node.none_is_leaf, "namespace": node.namespace}
    leaf = optree.treespec_leaf(**options)
    children = {key: leaf for key in keys}
    if node.kind == _KIND.DICT:
        return optree.treespec_dict(children, **options)
    return optree.treespec_defaultdict(_node_data(node)[0], children, **options)


@functools.lru_cache(maxsize=4096)
def _cached_order(spec: optree.PyTreeSpec) -> optree.PyTreeSpec:
    return spec.transform(_sorted_node, None)


def jax_ordered(spec: optree.PyTreeSpec) -> optree.PyTreeSpec:
    """``spec`` as JAX builds it: every dict's keys sorted (cached: it runs at every dispatch)."""
    if spec.num_nodes == spec.num_leaves:  # a bare leaf: nothing to order
        return spec
    try:
        return _cached_order(spec)
    except TypeError:  # a custom node's unhashable aux data
        return spec.transform(_sorted_node, None)


def spec_of(treedef) -> optree.PyTreeSpec:
    """The optree spec of a PyTreeDef (or of a spec), a TypeError naming anything else."""
    if isinstance(treedef, PyTreeDef):
        return treedef._spec
    if isinstance(treedef, optree.PyTreeSpec):
        return treedef
    raise TypeError(f"Expected a PyTreeDef, got {type(treedef).__name__}: {treedef!r}")


def unflatten(spec: optree.PyTreeSpec, leaves):
    """``spec.unflatten(leaves)`` with JAX's message for a wrong number of leaves."""
    try:
        return spec.unflatten(leaves)
    except ValueError as error:
        raise ValueError(jax_message(str(error))) from None


_NONE_PREFIX = ("\n\nIn previous releases of JAX, flatten-up-to used to consider None to be a tree-prefix of "
                "non-None values. To obtain the previous behavior, you can usually write:\n  jax.tree.map(lambda "
                "x, y: None if x is None else f(x, y), a, b, is_leaf=lambda x: x is None)")
_MESSAGES = [
    (re.compile(r"Too few leaves for PyTreeSpec; expected: (\d+), got: (\d+)\."),
     lambda m: f"Too few leaves for PyTreeDef; expected {m[1]}, got {m[2]}"),
    (re.compile(r"Too many leaves for PyTreeSpec; expected: (\d+)\."),
     lambda m: f"Too many leaves for PyTreeDef; expected {m[1]}."),
    (re.compile(r"Expected an instance of (\w+)(?:, [^;]*?)?, got (.*)\.", re.S),
     lambda m: f"Expected {m[1]}, got {m[2]}."),
    (re.compile(r"(tuple|list) arity mismatch; expected: (\d+), got: (\d+); \w+: (.*)\.", re.S),
     lambda m: f"{m[1].capitalize()} arity mismatch: {m[3]} != {m[2]}; {m[1]}: {m[4]}."),
    (re.compile(r"dictionary key mismatch; expected key\(s\): (\[.*?\]), got key\(s\): (\[.*?\]),.*", re.S),
     lambda m: f"Dict key mismatch; expected keys: {m[1]}; present keys: {m[2]}."),
    (re.compile(r"Expected None, got (.*)\.", re.S), lambda m: f"Expected None, got {m[1]}.{_NONE_PREFIX}"),
]


def jax_message(text: str) -> str:
    """optree's message for a structure mismatch in JAX's words (as is when it has none)."""
    for pattern, build in _MESSAGES:
        match = pattern.fullmatch(text)
        if match:
            return build(match)
    return text


class PyTreeDef:
    """The structure of a pytree (JAX's ``jax.tree_util.PyTreeDef``): ``unflatten`` builds a
    tree of this structure from leaves, ``flatten_up_to`` takes a tree's subtrees at its leaves."""

    __slots__ = ("_spec",)

    def __init__(self, spec: optree.PyTreeSpec):
        self._spec = spec

    @property
    def num_leaves(self) -> int:
        return self._spec.num_leaves

    @property
    def num_nodes(self) -> int:
        return self._spec.num_nodes

    def unflatten(self, leaves):
        return unflatten(self._spec, leaves)

    def flatten_up_to(self, tree) -> list:
        try:
            return self._spec.flatten_up_to(tree)
        except ValueError as error:
            raise ValueError(jax_message(str(error))) from None

    def children(self) -> list:
        return [PyTreeDef(child) for child in self._spec.children()]

    def compose(self, inner: PyTreeDef) -> PyTreeDef:
        """This structure with every leaf replaced by ``inner``."""
        if not isinstance(inner, PyTreeDef):
            raise TypeError(f"compose() takes a PyTreeDef, got {type(inner).__name__}")
        return PyTreeDef(self._spec.compose(inner._spec))

    def node_data(self):
        """``(type, data)`` of the outermost node (None for a leaf): dict keys (sorted),
        OrderedDict keys, (default factory, keys) of a defaultdict, a class's aux data."""
        kind = self._spec.kind
        if kind == _KIND.LEAF:
            return None
        data = _node_data(self._spec)
        if kind == _KIND.DICT:
            return dict, list(data)
        if kind == _KIND.ORDEREDDICT:
            return self._spec.type, tuple(data)
        if kind == _KIND.DEFAULTDICT:
            return self._spec.type, (data[0], tuple(data[1]))
        if kind == _KIND.CUSTOM:
            return self._spec.type, data
        return self._spec.type, None

    def __eq__(self, other) -> bool:
        return isinstance(other, PyTreeDef) and self._spec == other._spec

    def __ne__(self, other) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(self._spec)

    def __reduce__(self):
        return PyTreeDef, (self._spec,)

    def __repr__(self) -> str:
        return f"PyTreeDef({_text(self._spec)})"


def _text(spec: optree.PyTreeSpec) -> str:
    """One node as JAX prints it (``*``, ``None``, ``(*, *)``, ``{'a': *}``,
    ``CustomNode(Name[data], [...])``)."""
    kind = spec.kind
    if kind == _KIND.LEAF:
        return "*"
    if kind == _KIND.NONE:
        return "None"
    children = [_text(child) for child in spec.children()]
    if kind == _KIND.TUPLE:
        return "(" + ", ".join(children) + ("," if len(children) == 1 else "") + ")"
    if kind == _KIND.LIST:
        return "[" + ", ".join(children) + "]"
    if kind == _KIND.DICT:
        return "{" + ", ".join(f"{key!r}: {child}" for key, child in zip(spec.entries(), children)) + "}"
    return f"CustomNode({_custom_head(spec)}, [{', '.join(children)}])"


def _custom_head(spec: optree.PyTreeSpec) -> str:
    """``Name[data]`` of a node JAX registers as a custom node (namedtuples, OrderedDict,
    defaultdict and registered classes)."""
    kind, data = spec.kind, _node_data(spec)
    if kind == _KIND.NAMEDTUPLE:
        return f"namedtuple[{spec.type.__name__}]"
    if kind == _KIND.ORDEREDDICT:
        return f"OrderedDict[{tuple(data)}]"
    if kind == _KIND.DEFAULTDICT:
        return f"defaultdict[{(data[0], tuple(data[1]))}]"
    if kind == _KIND.CUSTOM:
        return f"{spec.type.__name__}[{data}]"
    return f"{spec.type.__name__}[None]"
