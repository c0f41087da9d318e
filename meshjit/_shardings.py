"""Converting the runtime's Sharding objects to the IR's sharding attributes and back."""

from __future__ import annotations

import weakref

import numpy as np

from meshjit.compiler.frontend.mesh_translation import translated
from meshjit.compiler.frontend.op_types import ir_sharding
from meshjit.compiler.sharding.sharding_types import ShardingType, type_from_spec
from meshjit.ir import AxisRef, DimSharding, MeshAttr, TensorSharding
from meshjit.runtime.mesh import Mesh, get_mesh
from meshjit.runtime.partition_spec import UNCONSTRAINED, PartitionSpec
from meshjit.runtime.sharding import AUTO, NamedSharding, Sharding, spec_on_context_mesh


def as_named_sharding(sharding: Sharding, ndim: int, argument: str) -> NamedSharding:
    """Any array sharding as a NamedSharding: a positional layout becomes a mesh whose axes are
    the tile dims (``_t0, _t1, ...``) plus a replication axis ``_r``."""
    if isinstance(sharding, NamedSharding):
        return sharding
    if not isinstance(sharding, Sharding):
        raise TypeError(f"{argument} must be a Sharding or PartitionSpec, got {type(sharding).__name__}: {sharding!r}")
    tiles = sharding._tile_assignment(ndim).normalised()
    devices = sharding._device_assignment
    if tiles.kind != "tiled":
        grid = np.empty(len(devices), dtype=object)
        grid[:] = devices
        return NamedSharding(Mesh(grid, ("_r",)), PartitionSpec(), memory_kind=sharding.memory_kind)
    by_position = np.empty(len(devices), dtype=object)
    by_position[:] = devices
    grid = by_position[tiles.id_array]
    names = tuple(f"_t{dim}" for dim in range(ndim)) + ("_r",)
    return NamedSharding(Mesh(grid, names), PartitionSpec(*names[:ndim]), memory_kind=sharding.memory_kind)


def resolve_spec(sharding, argument: str):
    """A PartitionSpec becomes a NamedSharding over the mesh from ``set_mesh``; anything else but
    a Sharding is a TypeError naming ``argument`` (as JAX's). ``AUTO`` passes through: jit's
    automatic search replaces it."""
    if isinstance(sharding, AUTO):
        return sharding
    if not isinstance(sharding, (PartitionSpec, Sharding)):
        raise TypeError(f"{argument} must be a Sharding or a PartitionSpec (or None), got "
                        f"{type(sharding).__name__}: {sharding!r}")
    if isinstance(sharding, PartitionSpec):
        return spec_on_context_mesh(sharding, argument)
    return sharding


def settle_unconstrained(sharding: Sharding, current: Sharding | None, ndim: int) -> Sharding:
    """The layout an eager ``with_sharding_constraint`` gives: as JAX, each ``P.UNCONSTRAINED``
    dim keeps the axes the value already has there on the same mesh (the major ones not named by
    the constrained dims), and is replicated otherwise."""
    if not isinstance(sharding, NamedSharding) or not sharding.has_unconstrained_dims:
        return sharding
    spec = sharding.spec
    same_mesh = isinstance(current, NamedSharding) and current.mesh == sharding.mesh
    taken = set(spec.used_axes())
    entries = []
    for dim in range(ndim):
        entry = spec[dim] if dim < len(spec) else None
        if entry is UNCONSTRAINED:
            kept = []
            for name in current.spec.axis_names_of(dim) if same_mesh else ():
                if name in taken:
                    break
                kept.append(name)
            taken.update(kept)
            entry = tuple(kept) if len(kept) > 1 else (kept[0] if kept else None)
        entries.append(entry)
    while entries and entries[-1] is None:
        entries.pop()  # NOTE: JAX's result spec has no trailing None
    return NamedSharding(sharding.mesh, PartitionSpec(*entries), memory_kind=sharding.memory_kind)


# NOTE: the user's Mesh behind each IR mesh, so outputs carry the user's mesh (axis types
# included) rather than a rebuilt one.
_USER_MESHES: weakref.WeakValueDictionary[MeshAttr, Mesh] = weakref.WeakValueDictionary()


def mesh_attr(mesh: Mesh) -> MeshAttr:
    attr = mesh.__dict__.get("_mesh_attr")
    if attr is None:
        ids = mesh._device_id_array.reshape(-1)
        # NOTE: the iota order is the IR's None, told here on the array rather than by the IR
        # mesh comparing a tuple of every id
        iota = bool((ids == np.arange(ids.size)).all())
        attr = mesh.__dict__["_mesh_attr"] = MeshAttr(tuple(mesh.shape.items()), None if iota else mesh._key[0])
    _USER_MESHES[attr] = mesh
    return attr


def to_ir_sharding(sharding: NamedSharding, ndim: int, mesh_name: str) -> TensorSharding:
    """The IR form of a NamedSharding for a rank-``ndim`` value: listed dims closed unless
    ``P.UNCONSTRAINED``; unlisted trailing dims closed and unsharded."""
    sharding._check_rank(ndim)
    dims = []
    for dim in range(ndim):
        entry = sharding.spec[dim] if dim < len(sharding.spec) else None
        axes = tuple(AxisRef(name) for name in sharding.spec.axis_names_of(dim))
        dims.append(DimSharding(axes, is_closed=entry is not UNCONSTRAINED))
    # NOTE: an unreduced Array's partials enter a program pending their sum (runtime/unreduced.py)
    unreduced = tuple(AxisRef(name) for name in sharding.mesh.axis_names if name in sharding.spec.unreduced)
    return TensorSharding(mesh_name, tuple(dims), (), unreduced)


def runtime_mesh(mesh: MeshAttr) -> Mesh:
    """The runtime Mesh of an IR mesh attribute (its device ids in mesh order)."""
    from meshjit.runtime.devices import devices

    user_mesh = _USER_MESHES.get(mesh)
    if user_mesh is not None:
        return user_mesh
    table = {device.id: device for device in devices()}
    grid = np.empty(mesh.size, dtype=object)
    grid[:] = [table[device_id] for device_id in mesh.devices]
    return Mesh(grid.reshape(tuple(size for _, size in mesh.axes)), mesh.axis_names)


def from_ir_sharding(sharding: TensorSharding | None, mesh: MeshAttr, rank: int) -> NamedSharding:
    """The NamedSharding of an IR sharding made only of whole mesh axes."""
    if sharding is None:
        return NamedSharding(runtime_mesh(mesh), PartitionSpec())
    entries = []
    for dim in sharding.dims:
        names = tuple(axis.name for axis in dim.axes)
        entries.append(None if not names else names[0] if len(names) == 1 else names)
    while entries and entries[-1] is None:
        entries.pop()
    unreduced = frozenset(axis.name for axis in sharding.unreduced)
    return NamedSharding(runtime_mesh(mesh), PartitionSpec(*entries, unreduced=unreduced))


def sharding_type_of(sharding, rank: int) -> ShardingType | None:
    """The sharding type an argument laid out as ``sharding`` has inside jit: a NamedSharding's
    spec over the Explicit axes of its mesh; None (no mesh) for any other layout."""
    if not isinstance(sharding, NamedSharding) or sharding.mesh.empty:
        return None
    return type_from_spec(sharding.mesh.abstract_mesh, sharding.spec, rank)


def known_mesh_attrs(shardings) -> list[MeshAttr]:
    """The IR meshes of the NamedShardings among ``shardings`` and of the mesh in context: what
    the abstract meshes of sharding types can be resolved to."""
    meshes = [sharding.mesh for sharding in shardings if isinstance(sharding, NamedSharding)]
    context = get_mesh()
    if not context.empty:
        meshes.append(context)
    return [mesh_attr(mesh) for mesh in dict.fromkeys(meshes)]


def result_sharding(sharding: TensorSharding | None, mesh: MeshAttr, rank: int, out_type) -> NamedSharding:
    """A program result's NamedSharding: as JAX, a result whose type lives on a mesh with
    Explicit axes names every dim (``P('X', None)``); others drop trailing unsplit dims."""
    if out_type is not None and out_type.mesh.explicit_axes and out_type.mesh.axis_names != mesh.axis_names:
        on_type_mesh = _on_type_mesh(out_type, sharding, mesh)
        if on_type_mesh is not None:
            return on_type_mesh
    named = from_ir_sharding(sharding, mesh, rank)
    if out_type is None or not out_type.mesh.explicit_axes:
        return named
    length = rank if out_type.spec_length is None else max(out_type.spec_length, len(named.spec))
    entries = list(named.spec.partitions) + [None] * (length - len(named.spec))
    return NamedSharding(named.mesh, PartitionSpec(*entries, unreduced=named.spec.unreduced))


def _on_type_mesh(out_type: ShardingType, sharding: TensorSharding | None, mesh: MeshAttr) -> NamedSharding | None:
    """A result whose type lives on another mesh of the program's devices (partitioned over the
    program's mesh, compiler/frontend/mesh_translation.py) laid out on its type's mesh: the same
    devices in the same order, so the same shards. None unless the program's result layout is
    the type's."""
    type_attr = MeshAttr(tuple(zip(out_type.mesh.axis_names, out_type.mesh.axis_sizes)), mesh.device_ids)
    if sharding is None or type_attr.size != mesh.size:
        return None
    expected = translated(ir_sharding(out_type, "type"), type_attr, mesh, sharding.mesh_name)
    if expected is None or [dim.axes for dim in expected.dims] != [dim.axes for dim in sharding.dims]:
        return None
    devices = np.asarray(runtime_mesh(mesh).devices).reshape(out_type.mesh.axis_sizes)
    type_mesh = Mesh(devices, out_type.mesh.axis_names, axis_types=out_type.mesh.axis_types)
    return NamedSharding(type_mesh, PartitionSpec(*out_type.entries()))
