"""meshjit.tree: JAX's short names for the pytree functions of ``meshjit.tree_util``."""

from __future__ import annotations

import dataclasses

from .tree_util import _MISSING
from .tree_util import tree_all as all  # noqa: A004 - JAX's name
from .tree_util import tree_broadcast as broadcast
from .tree_util import tree_flatten as flatten
from .tree_util import tree_flatten_with_path as flatten_with_path
from .tree_util import tree_leaves as leaves
from .tree_util import tree_leaves_with_path as leaves_with_path
from .tree_util import tree_map as map  # noqa: A004 - JAX's name
from .tree_util import tree_map_with_path as map_with_path
from .tree_util import tree_reduce as _tree_reduce
from .tree_util import tree_reduce_associative as reduce_associative
from .tree_util import tree_structure as structure
from .tree_util import tree_transpose as transpose
from .tree_util import tree_unflatten as unflatten

__all__ = ["all", "broadcast", "flatten", "flatten_with_path", "leaves", "leaves_with_path", "map",
           "map_with_path", "reduce", "reduce_associative", "static", "structure", "transpose", "unflatten"]


def static(**kwargs):
    """A dataclass field that ``register_dataclass`` makes static (part of the tree structure,
    not a leaf): ``dataclasses.field`` with ``metadata={"static": True}`` merged in."""
    metadata = {**(kwargs.pop("metadata", None) or {}), "static": True}
    return dataclasses.field(metadata=metadata, **kwargs)


def reduce(function, tree, initializer=_MISSING, is_leaf=None):
    """``functools.reduce`` of ``function`` over the leaves of ``tree``."""
    return _tree_reduce(function, tree, initializer, is_leaf)
