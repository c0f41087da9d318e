"""meshjit.tree_util: pytrees (nested lists, tuples, dicts, None and registered classes) on optree,
with JAX's registration functions and key paths (``SequenceKey``, ``DictKey``, ``GetAttrKey``,
``FlattenedIndexKey``; ``keystr`` prints them). Every meshjit transformation flattens with this
registry (optree namespace ``"meshjit"``), so registered classes work through jit, grad, vmap and
shard_map; a ``register_static`` class travels in the tree structure, as a static value.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from collections import abc as _abc

import optree

from ._pytreedef import PyTreeDef
from ._pytreedef import jax_ordered as _jax_ordered
from ._pytreedef import spec_of as _spec_of
from ._pytreedef import unflatten as _unflatten

NAMESPACE = "meshjit"
_MISSING = object()



# --- key paths -----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """The position of a child in a list or tuple: prints ``[0]``."""

    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"


@dataclasses.dataclass(frozen=True)
class DictKey:
    """The key of a child in a dict: prints ``['a']``."""

    key: _abc.Hashable

    def __str__(self) -> str:
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """The attribute holding a child (namedtuples, dataclasses, keyed classes): prints ``.a``."""

    name: str

    def __str__(self) -> str:
        return f".{self.name}"


@dataclasses.dataclass(frozen=True)
class FlattenedIndexKey:
    """The position among the children of a class registered without keys."""

    key: int

    def __str__(self) -> str:
        return f"[<flat index {self.key}>]"


KeyEntry = SequenceKey | DictKey | GetAttrKey | FlattenedIndexKey
KeyPath = tuple


def _key_of(entry) -> KeyEntry:
    """JAX's key for one optree accessor entry."""
    if isinstance(entry.entry, (SequenceKey, DictKey, GetAttrKey, FlattenedIndexKey)):
        return entry.entry
    if isinstance(entry, optree.MappingEntry):
        return DictKey(entry.key)
    if isinstance(entry, (optree.NamedTupleEntry, optree.DataclassEntry)):
        return GetAttrKey(entry.field)
    if isinstance(entry, optree.SequenceEntry):
        return SequenceKey(entry.index)
    if isinstance(entry, optree.GetAttrEntry):
        return GetAttrKey(entry.name)
    return FlattenedIndexKey(entry.entry)


def keystr(keys: KeyPath, *, simple: bool = False, separator: str = "") -> str:
    """A key path as text: ``"['a'][0].b"``, or with ``simple=True`` the bare keys joined by
    ``separator`` (``"a/0/b"`` for ``separator="/"``)."""
    if not simple:
        return separator.join(str(key) for key in keys)
    return separator.join(str(_simple(key)) for key in keys)


def _simple(key) -> object:
    for attribute in ("idx", "key", "name"):
        if hasattr(key, attribute):
            return getattr(key, attribute)
    return key


# --- flattening ----------------------------------------------------------------------------------


def _flatten(tree, is_leaf=None, *, none_is_leaf: bool = False):
    """``(leaves, spec)`` with the optree spec JAX's order gives (dict keys sorted): what
    meshjit's transformations flatten their arguments and results with."""
    leaves, spec = optree.tree_flatten(tree, is_leaf=is_leaf, none_is_leaf=none_is_leaf, namespace=NAMESPACE)
    return leaves, _jax_ordered(spec)


def _structure(tree, is_leaf=None, *, none_is_leaf: bool = False):
    """The JAX-ordered optree spec of ``tree`` (``flatten``'s second half)."""
    return _jax_ordered(optree.tree_structure(tree, is_leaf=is_leaf, none_is_leaf=none_is_leaf,
                                             namespace=NAMESPACE))


def tree_flatten(tree, is_leaf=None):
    leaves, spec = _flatten(tree, is_leaf)
    return leaves, PyTreeDef(spec)


def tree_unflatten(treedef, leaves):
    return _unflatten(_spec_of(treedef), leaves)


def tree_leaves(tree, is_leaf=None):
    return _flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None):
    return PyTreeDef(_structure(tree, is_leaf))


def tree_map(f, tree, *rest, is_leaf=None):
    leaves, treedef = _flatten(tree, is_leaf)
    others = [treedef.flatten_up_to(other) for other in rest]
    return treedef.unflatten(map(f, leaves, *others))


def tree_reduce(function, tree, initializer=_MISSING, is_leaf=None):
    leaves = tree_leaves(tree, is_leaf=is_leaf)
    if initializer is _MISSING:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_all(tree, *, is_leaf=None) -> bool:
    """Whether every leaf is truthy."""
    return all(tree_leaves(tree, is_leaf=is_leaf))


def tree_reduce_associative(operation, tree, *, identity=_MISSING, is_leaf=None):
    """The leaves of ``tree`` combined pairwise as a balanced tree (``operation`` must be
    associative): ``((a b)(c (d e)))`` for five leaves; ``identity`` for a tree without leaves."""
    leaves = tree_leaves(tree, is_leaf)
    if not leaves:
        if identity is _MISSING:
            raise TypeError("Must specify identity for parallel reduction of empty sequence.")
        return identity

    def combine(start: int, stop: int):
        if stop - start == 1:
            return leaves[start]
        middle = start + (stop - start) // 2
        return operation(combine(start, middle), combine(middle, stop))

    return combine(0, len(leaves))


def tree_broadcast(prefix_tree, full_tree, is_leaf=None):
    """``prefix_tree`` grown to ``full_tree``'s structure: each of its leaves repeated over the
    subtree of ``full_tree`` in its place."""
    return optree.tree_broadcast_prefix(prefix_tree, full_tree, is_leaf=is_leaf, namespace=NAMESPACE)


def flatten_one_level(tree):
    """``(children, metadata)`` of the outermost node of ``tree`` (a ValueError for a leaf)."""
    children, metadata, _ = _one_level(tree)
    return children, metadata


def flatten_one_level_with_keys(tree):
    """``(((key, child), ...), metadata)`` of the outermost node of ``tree``."""
    children, metadata, keys = _one_level(tree)
    return tuple(zip(keys, children)), metadata


def _one_level(tree):
    """The children, metadata and keys of ``tree``'s outermost node."""
    if tree is not None and optree.tree_structure(tree, namespace=NAMESPACE).is_leaf():
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    children, metadata, _, _ = optree.tree_flatten_one_level(tree, namespace=NAMESPACE)
    accessors, _, _ = optree.tree_flatten_with_accessor(
        tree, is_leaf=lambda node: node is not tree, none_is_leaf=True, namespace=NAMESPACE)
    keys = [_key_of(accessor[0]) for accessor in accessors] if children else []
    return tuple(children), tuple(metadata) if isinstance(metadata, list) else metadata, keys


def treedef_tuple(treedefs):
    """The structure of a tuple whose elements have the structures ``treedefs``."""
    return PyTreeDef(optree.treespec_tuple([_spec_of(treedef) for treedef in treedefs], namespace=NAMESPACE))


def tree_flatten_with_path(tree, is_leaf=None):
    """``([(key_path, leaf), ...], treedef)``."""
    accessors, leaves, treedef = optree.tree_flatten_with_accessor(
        tree, is_leaf=is_leaf, namespace=NAMESPACE)
    paths = [tuple(_key_of(entry) for entry in accessor) for accessor in accessors]
    return list(zip(paths, leaves)), PyTreeDef(_jax_ordered(treedef))


def tree_leaves_with_path(tree, is_leaf=None):
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(f, tree, *rest, is_leaf=None):
    """``f(key_path, leaf, *other_leaves)`` at every leaf of ``tree`` (``rest`` share its structure)."""
    pairs, treedef = tree_flatten_with_path(tree, is_leaf)
    treedef = _spec_of(treedef)
    others = [treedef.flatten_up_to(other) for other in rest]
    results = [f(path, leaf, *(other[index] for other in others))
               for index, (path, leaf) in enumerate(pairs)]
    return treedef.unflatten(results)


def tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose):
    """A tree of outer structure holding inner trees, turned into inner holding outer; with
    ``inner_treedef`` None, the first inner tree's structure (as JAX)."""
    if inner_treedef is None:
        subtrees = outer_treedef.flatten_up_to(pytree_to_transpose)
        inner_treedef = tree_structure(subtrees[0]) if subtrees else tree_structure(())
    return optree.tree_transpose(_spec_of(outer_treedef), _spec_of(inner_treedef), pytree_to_transpose)


def treedef_children(treedef):
    return [PyTreeDef(child) for child in _spec_of(treedef).children()]


def treedef_is_leaf(treedef) -> bool:
    return _spec_of(treedef).is_leaf()


def all_leaves(iterable, is_leaf=None) -> bool:
    """Whether every element of ``iterable`` is a leaf."""
    return all(_structure(item, is_leaf).is_leaf() for item in iterable)


# --- registering classes -------------------------------------------------------------------------


def register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys_func=None) -> None:
    """Register a class: ``flatten_func(x) -> (children, aux)``, ``unflatten_func(aux, children)``;
    ``flatten_with_keys_func(x) -> ([(key, child), ...], aux)`` gives its children key paths.
    Returns None, as JAX's (so a notebook cell ending with it shows nothing)."""
    if flatten_with_keys_func is None:
        flatten = flatten_func
    else:
        def flatten(node):
            keyed, aux = flatten_with_keys_func(node)
            return [child for _, child in keyed], aux, [key for key, _ in keyed]
    with warnings.catch_warnings():
        # JAX registers a namedtuple subclass silently; optree warns that it overrides its own.
        warnings.filterwarnings("ignore", message=".*subclass of `collections.namedtuple`")
        optree.register_pytree_node(nodetype, flatten, unflatten_func, namespace=NAMESPACE)


def register_pytree_with_keys(nodetype, flatten_with_keys, unflatten_func, flatten_func=None) -> None:
    """Register a class by ``flatten_with_keys(x) -> ([(key, child), ...], aux)``."""
    register_pytree_node(nodetype, flatten_func or _keyless(flatten_with_keys), unflatten_func,
                                flatten_with_keys)


def _keyless(flatten_with_keys):
    def flatten(node):
        keyed, aux = flatten_with_keys(node)
        return [child for _, child in keyed], aux
    return flatten


def register_pytree_node_class(cls):
    """Class decorator using ``cls.tree_flatten()`` and ``cls.tree_unflatten(aux, children)``."""
    register_pytree_node(cls, lambda node: node.tree_flatten(), cls.tree_unflatten)
    return cls


def register_pytree_with_keys_class(cls):
    """Class decorator using ``cls.tree_flatten_with_keys()`` and ``cls.tree_unflatten``."""
    flatten = (lambda node: node.tree_flatten()) if hasattr(cls, "tree_flatten") else None
    register_pytree_with_keys(cls, lambda node: node.tree_flatten_with_keys(), cls.tree_unflatten,
                              flatten)
    return cls


def register_dataclass(nodetype=None, data_fields=None, meta_fields=None, drop_fields=()):
    """Register a dataclass: ``data_fields`` are children (arrays), ``meta_fields`` are static
    (hashable, part of the structure); without them, fields marked
    ``field(metadata=dict(static=True))`` are static and the others data. Usable as a decorator."""
    if nodetype is None:
        return functools.partial(register_dataclass, data_fields=data_fields,
                                 meta_fields=meta_fields, drop_fields=drop_fields)
    data_fields, meta_fields = _dataclass_fields(nodetype, data_fields, meta_fields, drop_fields)

    def flatten_with_keys(node):
        children = [(GetAttrKey(name), getattr(node, name)) for name in data_fields]
        return children, tuple(getattr(node, name) for name in meta_fields)

    def unflatten(meta, children):
        return nodetype(**dict(zip(data_fields, children)), **dict(zip(meta_fields, meta)))

    register_pytree_with_keys(nodetype, flatten_with_keys, unflatten)
    return nodetype


def _dataclass_fields(nodetype, data_fields, meta_fields, drop_fields):
    if data_fields is not None and meta_fields is not None:
        return tuple(data_fields), tuple(meta_fields)
    if not dataclasses.is_dataclass(nodetype):
        raise TypeError(
            f"register_dataclass: data_fields and meta_fields are required when {nodetype.__name__} "
            f"is not a dataclass")
    if data_fields is not None or meta_fields is not None:
        raise TypeError("register_dataclass: give both data_fields and meta_fields, or neither")
    fields = [field for field in dataclasses.fields(nodetype)
              if field.init and field.name not in drop_fields]
    meta = tuple(field.name for field in fields if field.metadata.get("static", False))
    data = tuple(field.name for field in fields if not field.metadata.get("static", False))
    return data, meta


def register_static(cls):
    """Register a class whose instances are static values: no children, the instance itself is
    the structure's metadata (so it must be hashable); jit treats it like a static argument."""
    optree.register_pytree_node(cls, lambda node: ((), node), lambda node, _: node,
                                namespace=NAMESPACE)
    return cls


class Partial(functools.partial):
    """``functools.partial`` as a pytree: the bound arguments are children, the function is
    static, so a Partial can be passed to and returned from transformed functions."""

    def __new__(cls, func, *args, **kwargs):
        if isinstance(func, functools.partial):
            # flatten nested partials so the function stays the static part
            args, kwargs = func.args + args, {**func.keywords, **kwargs}
            func = func.func
        return super().__new__(cls, func, *args, **kwargs)


def _flatten_partial(partial: Partial):
    return (partial.args, partial.keywords), partial.func


def _unflatten_partial(func: _abc.Callable, children) -> Partial:
    args, keywords = children
    return Partial(func, *args, **keywords)


optree.register_pytree_node(Partial, _flatten_partial, _unflatten_partial, namespace=NAMESPACE)
