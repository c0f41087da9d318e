"""Explicit sharding's functions: ``reshard``, ``auto_axes``, ``explicit_axes`` and
``use_abstract_mesh`` (as ``jax.sharding``); argument checking and pytrees here, the typing in
``compiler/frontend/sharding_types.py``."""

from __future__ import annotations

import optree

from meshjit.compiler.frontend.lax_ops import reshard_to
from meshjit.compiler.frontend.sharding_types import resolve_sharding
from meshjit.compiler.frontend.sharding_types import use_abstract_mesh as _use_abstract_mesh
from meshjit.compiler.frontend.trace import Tracer, current_trace
from meshjit.ir.abstract_mesh import AbstractMesh
from meshjit.runtime.mesh import get_mesh
from meshjit.runtime.partition_spec import PartitionSpec
from meshjit.runtime.sharding import NamedSharding
from meshjit.runtime.transfer import device_put

from ._arguments import is_sharding_leaf
from .tree_util import NAMESPACE


def _spec_leaves(shardings, tree, function: str) -> list:
    """One sharding (or None) per leaf of ``tree``, from a pytree prefix ``shardings``."""
    try:
        expanded = optree.tree_broadcast_prefix(shardings, tree, is_leaf=is_sharding_leaf, none_is_leaf=True,
                                                namespace=NAMESPACE)
    except ValueError as error:
        raise ValueError(f"{function}: the shardings must be a pytree prefix of the values: {error}") from None
    return optree.tree_leaves(expanded, is_leaf=is_sharding_leaf, none_is_leaf=True, namespace=NAMESPACE)


def _concrete_target(sharding, function: str) -> NamedSharding:
    """Where ``device_put`` moves a concrete array: a NamedSharding, or a PartitionSpec over the
    mesh in context (``set_mesh``)."""
    if isinstance(sharding, NamedSharding):
        return sharding
    mesh = get_mesh()
    if mesh.empty:
        raise ValueError(f"{function}: the PartitionSpec {sharding!r} needs a mesh; use `meshjit.set_mesh(mesh)` or "
                         f"pass NamedSharding(mesh, spec)")
    return NamedSharding(mesh, sharding)


def _reshard_leaf(leaf, sharding, function: str):
    if sharding is None:
        return leaf
    if not isinstance(sharding, (NamedSharding, PartitionSpec)):
        raise TypeError(f"{function} expects NamedShardings or PartitionSpecs, got {type(sharding).__name__}: "
                        f"{sharding!r}")
    if isinstance(leaf, Tracer) or current_trace() is not None:
        rank = len(leaf.shape) if hasattr(leaf, "shape") else 0
        return reshard_to(leaf, resolve_sharding(sharding, rank, function))
    target = _concrete_target(sharding, function)
    resolve_sharding(target, len(getattr(leaf, "shape", ())), function)
    return device_put(leaf, target)


def reshard(xs, out_shardings):
    """``xs`` (a pytree) laid out as ``out_shardings`` (a pytree prefix of NamedShardings or
    PartitionSpecs over the mesh in context, naming Explicit axes only): inside jit their types
    change to those shardings, outside it the arrays move (as ``device_put``)."""
    leaves, treedef = optree.tree_flatten(xs, namespace=NAMESPACE)
    targets = _spec_leaves(out_shardings, xs, "reshard")
    return optree.tree_unflatten(treedef, [_reshard_leaf(leaf, target, "reshard")
                                           for leaf, target in zip(leaves, targets)])


def use_abstract_mesh(mesh: AbstractMesh):
    """Make ``mesh`` the abstract mesh in context inside a ``with`` block (``get_abstract_mesh``
    returns it, and new values' types live on it)."""
    if not isinstance(mesh, AbstractMesh):
        raise TypeError(f"use_abstract_mesh expects an AbstractMesh, got {type(mesh).__name__}: {mesh!r}")
    return _use_abstract_mesh(mesh)

