"""meshjit.tree_util: pytrees (nested lists, tuples, dicts, None and registered classes), on optree."""

from __future__ import annotations

import functools

import optree

NAMESPACE = "meshjit"


def tree_flatten(tree, is_leaf=None):
    return optree.tree_flatten(tree, is_leaf=is_leaf, namespace=NAMESPACE)


def tree_unflatten(treedef, leaves):
    return optree.tree_unflatten(treedef, leaves)


def tree_leaves(tree, is_leaf=None):
    return optree.tree_leaves(tree, is_leaf=is_leaf, namespace=NAMESPACE)


def tree_structure(tree, is_leaf=None):
    return optree.tree_structure(tree, is_leaf=is_leaf, namespace=NAMESPACE)


def tree_map(f, tree, *rest, is_leaf=None):
    return optree.tree_map(f, tree, *rest, is_leaf=is_leaf, namespace=NAMESPACE)


def tree_reduce(function, tree, initializer=optree.MISSING if hasattr(optree, "MISSING") else None, is_leaf=None):
    leaves = tree_leaves(tree, is_leaf=is_leaf)
    if initializer is None or initializer is getattr(optree, "MISSING", None):
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def register_pytree_node(node_type, flatten_func, unflatten_func):
    """Register a class: ``flatten_func(x) -> (children, aux)``, ``unflatten_func(aux, children)``."""
    optree.register_pytree_node(node_type, flatten_func, unflatten_func, namespace=NAMESPACE)
    return node_type


def register_pytree_node_class(cls):
    """Class decorator using ``cls.tree_flatten()`` and ``cls.tree_unflatten(aux, children)``."""
    optree.register_pytree_node(cls, lambda node: node.tree_flatten(), cls.tree_unflatten, namespace=NAMESPACE)
    return cls
