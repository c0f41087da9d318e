"""with_sharding_constraint: pin a value's sharding inside jit (a sharding_constraint op) or reshard
an eager Array; in explicit mode the value's type must already agree."""

from __future__ import annotations


import numpy as np
import optree

from meshjit.compiler.sharding.sharding_types import spec_repr
from meshjit.compiler.sharding.sharding_types import context_abstract_mesh
from meshjit.compiler.frontend.trace import Tracer, operand_sharding_type
from meshjit.runtime.mesh import get_mesh
from meshjit.runtime.partition_spec import PartitionSpec
from meshjit.runtime.sharding import NamedSharding

from ._shardings import (
    as_named_sharding,
    mesh_attr,
    resolve_spec,
    settle_unconstrained,
    sharding_type_of,
    to_ir_sharding,
)
from ._arguments import is_sharding_leaf
from .tree_util import NAMESPACE
from .tree_util import _flatten as flatten_tree


def _check_constraint_axes(leaf, sharding, ndim: int) -> bool:
    """JAX 0.10's rule for a NamedSharding constraint: under an all-Explicit context mesh
    (``set_mesh``) it is an assertion on the value's type (AssertionError when they differ) and
    the value passes through unchanged (returns True); otherwise its spec may name only Auto axes
    (ValueError: an Explicit axis is changed with ``reshard``)."""
    if not isinstance(sharding, NamedSharding):
        return False
    context = context_abstract_mesh()
    if context is not None and not context.empty and context.are_all_axes_explicit:
        _assert_same_type(leaf, sharding, ndim)
        return True
    mesh = sharding.mesh.abstract_mesh
    names = [name for entry in sharding.spec.partitions
             if entry is not None and entry is not PartitionSpec.UNCONSTRAINED
             for name in (entry if isinstance(entry, tuple) else (entry,))]
    if set(names) - set(mesh.auto_axes):
        raise ValueError(
            f"The spec of NamedSharding passed to with_sharding_constraint can only refer to Auto axes of the mesh. "
            f"Got spec={sharding.spec} and mesh={mesh}. You probably meant to use `reshard` API?")
    return False


def _assert_same_type(leaf, sharding, ndim: int) -> None:
    wanted = sharding_type_of(sharding, ndim)
    have = operand_sharding_type(leaf)
    entries = sharding.spec.partitions
    free = {dim for dim, entry in enumerate(entries) if entry is PartitionSpec.UNCONSTRAINED}
    if all(have.dims[dim] == wanted.dims[dim] for dim in range(ndim) if dim not in free):
        return
    padded = PartitionSpec(*entries, *(None,) * (ndim - len(entries)))
    raise AssertionError(
        f"`with_sharding_constraint` acts as an assert when all axes of mesh are of type `Explicit`. The array "
        f"sharding: {spec_repr(have)} did not match the sharding provided: {padded!r}. Please use "
        f"`jax.sharding.reshard` to shard your input to the sharding you want.")


def _keep_explicit_axes(named: NamedSharding, leaf) -> NamedSharding:
    """Inside jit a constraint moves only Auto axes (its spec names no others): dims the value's
    type splits over Explicit axes keep them, before the constraint's axes (as JAX 0.10)."""
    have = operand_sharding_type(leaf)
    if not any(have.dims):
        return named
    entries = tuple(named.spec.partitions) + (None,) * (leaf.ndim - len(named.spec.partitions))
    merged = []
    for typed, entry in zip(have.dims, entries):
        if not typed:
            merged.append(entry)
            continue
        extra = () if entry is None or entry is PartitionSpec.UNCONSTRAINED else (
            entry if isinstance(entry, tuple) else (entry,))
        axes = tuple(typed) + extra
        merged.append(axes[0] if len(axes) == 1 else axes)
    return NamedSharding(named.mesh, PartitionSpec(*merged))


def with_sharding_constraint(x, shardings):
    """Ask for ``x`` (a pytree) to be laid out as ``shardings`` (a pytree prefix of Shardings or
    PartitionSpecs; ``P.UNCONSTRAINED`` dims are left to propagation). Outside jit it reshards."""
    from meshjit.compiler.frontend.lax_ops import with_sharding_constraint_ir
    from meshjit.runtime.transfer import device_put

    leaves, treedef = flatten_tree(x)
    try:
        expanded = optree.tree_broadcast_prefix(shardings, x, is_leaf=is_sharding_leaf, none_is_leaf=True,
                                                namespace=NAMESPACE)
    except ValueError as error:
        raise ValueError(f"with_sharding_constraint shardings must be a pytree prefix of x: {error}") from None
    targets = optree.tree_leaves(expanded, is_leaf=is_sharding_leaf, none_is_leaf=True, namespace=NAMESPACE)
    results = []
    for index, (leaf, target) in enumerate(zip(leaves, targets)):
        argument = f"with_sharding_constraint shardings[{index}]"
        if target is None:
            results.append(leaf)
            continue
        if isinstance(target, PartitionSpec) and get_mesh().empty:
            raise RuntimeError(
                "with_sharding_constraint requires a non-empty mesh in context if you are passing `PartitionSpec`s "
                "to shardings. You can define a context mesh via `jax.set_mesh(mesh)`. Alternatively, provide "
                "`Sharding`s to shardings and then the mesh context manager is not required.")
        sharding = resolve_spec(target, argument)
        if not is_sharding_leaf(sharding):
            raise TypeError(f"{argument} must be a Sharding, a PartitionSpec or None, got "
                            f"{type(sharding).__name__}: {sharding!r}")
        ndim = leaf.ndim if hasattr(leaf, "ndim") else np.ndim(leaf)
        if _check_constraint_axes(leaf, sharding, ndim):
            results.append(leaf)
            continue
        if not isinstance(leaf, Tracer):
            results.append(device_put(leaf, settle_unconstrained(sharding, getattr(leaf, "sharding", None), ndim)))
            continue
        named = _keep_explicit_axes(as_named_sharding(sharding, leaf.ndim, argument), leaf)
        mesh_name = leaf.trace.add_mesh(mesh_attr(named.mesh))
        results.append(with_sharding_constraint_ir(leaf, to_ir_sharding(named, leaf.ndim, mesh_name)))
    return optree.tree_unflatten(treedef, results)
