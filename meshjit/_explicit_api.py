"""Explicit sharding's functions: ``reshard``, ``auto_axes``, ``explicit_axes`` and
``use_abstract_mesh`` (as ``jax.sharding``); argument checking and pytrees here, the typing in
``compiler/frontend/sharding_types.py``."""

from __future__ import annotations

import functools

import optree

from meshjit.compiler.frontend.sharding_ops import reshard_to
from meshjit.compiler.sharding.sharding_types import cast_type, context_abstract_mesh, resolve_sharding
from meshjit.compiler.sharding.sharding_types import use_abstract_mesh as _use_abstract_mesh
from meshjit.compiler.frontend.trace import Tracer, current_trace
from meshjit.ir.abstract_mesh import AbstractMesh, AxisType
from meshjit.runtime.array import Array
from meshjit.runtime.mesh import Mesh, get_mesh
from meshjit.runtime.partition_spec import PartitionSpec
from meshjit.runtime.sharding import NamedSharding
from meshjit.runtime.transfer import device_put

from ._arguments import is_sharding_leaf
from .constraint_api import with_sharding_constraint
from .tree_util import NAMESPACE
from .tree_util import _flatten as flatten_tree


def _spec_leaves(shardings, tree, function: str) -> list:
    """One sharding (or None) per leaf of ``tree``, from a pytree prefix ``shardings``."""
    try:
        expanded = optree.tree_broadcast_prefix(shardings, tree, is_leaf=is_sharding_leaf, none_is_leaf=True,
                                                namespace=NAMESPACE)
    except ValueError as error:
        raise ValueError(f"{function}: the shardings must be a pytree prefix of the values: {error}") from None
    return optree.tree_leaves(expanded, is_leaf=is_sharding_leaf, none_is_leaf=True, namespace=NAMESPACE)


def retyped_mesh(mesh: Mesh, abstract: AbstractMesh | None) -> Mesh:
    """``mesh`` with the axis types of ``abstract`` when that is the same mesh under other types
    (inside ``auto_axes`` or ``explicit_axes``), else ``mesh``."""
    if abstract is None or abstract.shape_tuple != mesh.shape_tuple or abstract.axis_types == mesh.axis_types:
        return mesh
    return Mesh(mesh.devices, mesh.axis_names, axis_types=abstract.axis_types)


def _concrete_target(sharding, function: str) -> NamedSharding:
    """Where ``device_put`` moves a concrete array: a NamedSharding, or a PartitionSpec over the
    mesh in context (``set_mesh``'s, with the axis types of the abstract mesh in context)."""
    if isinstance(sharding, NamedSharding):
        return sharding
    mesh = get_mesh()
    if mesh.empty:
        raise ValueError(f"{function}: the PartitionSpec {sharding!r} needs a mesh; use `meshjit.set_mesh(mesh)` or "
                         f"pass NamedSharding(mesh, spec)")
    return NamedSharding(retyped_mesh(mesh, context_abstract_mesh()), sharding)


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
    rank = len(getattr(leaf, "shape", ()))
    resolve_sharding(target, rank, function)
    # NOTE: as JAX, a resharded array's type names every dim: P('X') of a matrix is P('X', None)
    spec = target.spec
    if len(spec) < rank:
        padded = PartitionSpec(*spec.partitions, *([None] * (rank - len(spec))), unreduced=spec.unreduced,
                               reduced=spec.reduced)
        target = NamedSharding(target.mesh, padded, memory_kind=target.memory_kind)
    return device_put(leaf, target)


def reshard(xs, out_shardings):
    """``xs`` (a pytree) laid out as ``out_shardings`` (a pytree prefix of NamedShardings or
    PartitionSpecs over the mesh in context, naming Explicit axes only): inside jit their types
    change to those shardings, outside it the arrays move (as ``device_put``)."""
    leaves, treedef = flatten_tree(xs)
    targets = _spec_leaves(out_shardings, xs, "reshard")
    return optree.tree_unflatten(treedef, [_reshard_leaf(leaf, target, "reshard")
                                           for leaf, target in zip(leaves, targets)])


def use_abstract_mesh(mesh: AbstractMesh):
    """Make ``mesh`` the abstract mesh in context inside a ``with`` block (``get_abstract_mesh``
    returns it, and new values' types live on it)."""
    if not isinstance(mesh, AbstractMesh):
        raise TypeError(f"use_abstract_mesh expects an AbstractMesh, got {type(mesh).__name__}: {mesh!r}")
    return _use_abstract_mesh(mesh)



def _axes_argument(axes, mesh: AbstractMesh, function: str) -> tuple[str, ...]:
    if axes is None:
        return mesh.axis_names
    names = (axes,) if isinstance(axes, str) else tuple(axes)
    for name in names:
        if name not in mesh.axis_names:
            raise ValueError(f"{function}: axes {names} name {name!r}, which is not an axis of the mesh in context "
                             f"{mesh}")
    return names


def _context_mesh(function: str) -> AbstractMesh:
    mesh = context_abstract_mesh()
    if mesh is None:
        raise ValueError(f"{function} needs a mesh in context: call it under `meshjit.set_mesh(mesh)`")
    return mesh


def _cast_leaves(tree, mesh: AbstractMesh):
    """Every array leaf of ``tree`` moved onto abstract mesh ``mesh`` (the same devices, other
    axis types): a traced value's type keeps only the axes Explicit there (the others are left
    to propagation); a concrete array keeps its data and layout on the retyped mesh."""
    def cast(leaf):
        if isinstance(leaf, Tracer):
            return reshard_to(leaf, cast_type(leaf.sharding_type, mesh))
        sharding = getattr(leaf, "sharding", None)
        if isinstance(leaf, Array) and isinstance(sharding, NamedSharding):
            return device_put(leaf, NamedSharding(retyped_mesh(sharding.mesh, mesh), sharding.spec))
        return leaf

    return optree.tree_map(cast, tree, namespace=NAMESPACE)


def _retyped_call(fun, args, kwargs, inner: AbstractMesh, outer: AbstractMesh, before, after):
    """Run ``fun`` with ``inner`` as the mesh in context: its arguments go through ``before``
    (inside), its outputs through ``after`` (back under ``outer``)."""
    with _use_abstract_mesh(inner):
        args, kwargs = before((args, kwargs))
        outputs = fun(*args, **kwargs)
    with _use_abstract_mesh(outer):
        return after(outputs)


def _retyping(fun, name: str, axes, keyword: str, default, axis_type: AxisType, steps):
    """The decorator auto_axes and explicit_axes share: ``fun`` runs with ``axes`` (default:
    every axis) of the mesh in context made ``axis_type``; the sharding ``keyword`` comes from
    the call or else the decorator; ``steps(sharding, inner, outer)`` gives what happens to the
    arguments inside and to the outputs back outside (``_retyped_call``)."""

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        sharding = kwargs.pop(keyword, default)
        if sharding is None:
            raise TypeError(f"Missing required keyword argument: '{keyword}'")
        outer = _context_mesh(name)
        names = _axes_argument(axes, outer, name)
        if any(outer.axis_type(axis) is AxisType.Manual for axis in names):
            raise ValueError(f"{name} cannot make Manual axes {axis_type.name}; got axes {names} of {outer}")
        inner = outer.update_axis_types({names: axis_type})
        before, after = steps(sharding, inner, outer)
        return _retyped_call(fun, args, kwargs, inner, outer, before, after)

    return wrapped


def auto_axes(fun=None, /, *, axes=None, out_sharding=None):
    """Decorator: run ``fun`` with ``axes`` (default: every axis) of the mesh in context made
    Auto, so propagation shards its values there (called outside jit, its ops run eagerly on
    the retyped mesh); its outputs are resharded to ``out_sharding`` (a keyword of the call when
    not given here) on the Explicit mesh."""
    if fun is None:
        return functools.partial(auto_axes, axes=axes, out_sharding=out_sharding)

    def steps(sharding, inner, outer):
        return (lambda tree: _cast_leaves(tree, inner)), (lambda outputs: _place_outputs(outputs, sharding, outer))

    return _retyping(fun, "auto_axes", axes, "out_sharding", out_sharding, AxisType.Auto, steps)


def _place_outputs(outputs, sharding, outer: AbstractMesh):
    """auto_axes' outputs laid out as ``sharding`` says: resharded (their type changes) where it
    names Explicit axes of the mesh in context, else constrained (the mesh's axes are Auto)."""
    specs = optree.tree_leaves(sharding, is_leaf=lambda leaf: isinstance(leaf, (PartitionSpec, NamedSharding)),
                               none_is_leaf=True, namespace=NAMESPACE)
    named = {axis for spec in specs if isinstance(spec, (PartitionSpec, NamedSharding))
             for entry in (spec.spec if isinstance(spec, NamedSharding) else spec)
             for axis in ((entry,) if isinstance(entry, str) else (entry or ()))}
    if any(outer.axis_type(axis) is AxisType.Explicit for axis in named if axis in outer.axis_names):
        return reshard(outputs, sharding)
    return with_sharding_constraint(outputs, sharding)


def explicit_axes(fun=None, /, *, axes=None, in_sharding=None):
    """Decorator: run ``fun`` with ``axes`` (default: every axis) of the mesh in context made
    Explicit, its arguments resharded to ``in_sharding`` (a keyword of the call when not given
    here); its outputs go back to the mesh in context, where those axes are left to propagation."""
    if fun is None:
        return functools.partial(explicit_axes, axes=axes, in_sharding=in_sharding)

    def steps(sharding, inner, outer):
        def reshard_arguments(tree):
            call_args, call_kwargs = tree
            return reshard(call_args, sharding), call_kwargs

        return reshard_arguments, (lambda outputs: _cast_leaves(outputs, outer))

    return _retyping(fun, "explicit_axes", axes, "in_sharding", in_sharding, AxisType.Explicit, steps)
