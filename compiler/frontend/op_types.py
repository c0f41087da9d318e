"""The sharding types of an op's results, decided when the op is bound (explicit mode).

The results belong to the operands' mesh (or the one in context). Over a mesh without Explicit
axes every result is unsplit; otherwise the op's family rule decides (``sharding_type_rules``)
and may raise ShardingTypeError, unless the caller gave the result's sharding (``out_sharding``).
A type on a mesh with Explicit axes becomes the IR sharding its value is seeded with: those axes
closed (open to Auto axes on a mixed mesh), the Explicit axes it does not use replicated, so
propagation never changes what the type says.
"""

from __future__ import annotations

from collections.abc import Sequence

from meshjit.ir import AxisRef, DimSharding, MeshAttr, Op, TensorSharding
from meshjit.ir.abstract_mesh import EMPTY_ABSTRACT_MESH, AbstractMesh
from meshjit.ir.dtypes import to_numpy

from ..tables import sharding_type_rules, varying_over_axes
from ..sharding.factor_types import DuplicateAxisError, illegal_result_message, short_type
from ..sharding.sharding_types import (
    ShardingType,
    ShardingTypeError,
    check_divisible,
    format_type,
    is_lenient,
)

def result_varying(op: Op, operands: Sequence[frozenset[str]], invariant: bool = False) -> frozenset[str]:
    """The manual axes along which an op's results vary (JAX's vma), from its operands':
    ``axis_index`` varies along its axis; ``all_reduce`` is invariant along the axes it reduces
    over (as is an ``all_gather`` marked ``invariant``); the other collectives and ``pvary`` vary
    along theirs; every other op along the union of its operands' axes (and, for an op with
    regions, of every axis a per-device op inside may vary along)."""
    union = frozenset().union(*operands)
    axes = frozenset(op.attrs.get("axes", ()))
    if op.name == "axis_index":
        return frozenset({op.attrs["axis"]})
    if op.name == "all_reduce" or (op.name == "all_gather" and invariant):
        return union - axes
    if op.name in varying_over_axes:
        return union | axes
    return union | axes_varied_inside(op)


def axes_varied_inside(op: Op) -> frozenset[str]:
    """Conservatively, for an op with regions: every axis a per-device op inside them may
    introduce variation along."""
    axes = set()
    for region in op.regions:
        for inner in region.walk():
            if inner.name == "axis_index":
                axes.add(inner.attrs["axis"])
            elif inner.name in varying_over_axes:
                axes.update(inner.attrs["axes"])
    return frozenset(axes)


def result_mesh(name: str, operands: Sequence[ShardingType], shapes, dtypes,
                context: AbstractMesh | None) -> AbstractMesh:
    """The mesh an op's results belong to: its operands' (which must agree), else the one in
    context, else none."""
    mesh = None
    for operand in operands:
        if operand.mesh.empty:
            continue
        if mesh is not None and operand.mesh != mesh:
            raise ShardingTypeError(f"Mesh for all inputs should be equal. Got one mesh: {mesh} and another "
                                    f"mesh: {operand.mesh}")
        mesh = operand.mesh
    if mesh is None:
        return context if context is not None else EMPTY_ABSTRACT_MESH
    if context is not None and not context.empty and context != mesh:
        position = next(index for index, operand in enumerate(operands) if operand.mesh == mesh)
        raise ValueError(
            f"For primitive {name}, context mesh {context} should match the aval mesh {mesh} for shape "
            f"{format_type(shapes[position], dtypes[position], operands[position])}. Set the mesh the "
            f"arguments live on with meshjit.set_mesh, or reshard them onto the context mesh first")
    return mesh


def type_results(op: Op, operands: Sequence[ShardingType], context: AbstractMesh | None,
                 out_sharding: Sequence[ShardingType] | None = None) -> list[ShardingType]:
    """Each result's sharding type; raises ShardingTypeError where JAX does."""
    shapes = [value.type.shape for value in op.operands]
    dtypes = [to_numpy(value.type.dtype) for value in op.operands]
    if out_sharding is not None:
        if op.name != "sharding_constraint":
            # NOTE: a reshard may move a value between abstract meshes of the same devices
            result_mesh(op.name, operands, shapes, dtypes, context)
        for given, result in zip(out_sharding, op.results):
            check_divisible(given, result.type.shape)
        return list(out_sharding)
    mesh = result_mesh(op.name, operands, shapes, dtypes, context)
    varying = result_varying(op, [operand.varying for operand in operands]) if mesh.manual_axes else frozenset()
    if not mesh.explicit_axes:
        unreduced = _manual_unreduced(op, operands, mesh)
        return [ShardingType(mesh, ((),) * result.type.rank, unreduced=unreduced, varying=varying)
                for result in op.results]
    try:
        types = sharding_type_rules[op.name](op, list(operands), mesh)
    except ShardingTypeError as error:
        if is_lenient():
            # NOTE: an op autodiff emits for a derivative: unsplit here, resharded to the primal's type
            types = [ShardingType(mesh, ((),) * result.type.rank) for result in op.results]
        elif isinstance(error, DuplicateAxisError):
            inputs = [short_type(shape, dtype, operand) for shape, dtype, operand in zip(shapes, dtypes, operands)]
            result = op.results[0]
            text = short_type(result.type.shape, to_numpy(result.type.dtype), ShardingType(mesh, error.dims))
            raise ShardingTypeError(illegal_result_message(op.name, inputs, text)) from None
        else:
            raise
    return [_with_varying(sharding, varying) for sharding in types]


def _manual_unreduced(op: Op, operands: Sequence[ShardingType], mesh: AbstractMesh) -> frozenset[str]:
    """The unreduced manual axes of an op's results in a shard_map body (JAX's ``{U:axes}``): a
    psum over them finishes the sum; other ops follow their unreduced rules (add keeps them,
    mul by a reduced value and ops without a rule raise JAX's errors)."""
    if not any(operand.unreduced for operand in operands):
        return frozenset()
    if op.name == "all_reduce":
        return frozenset().union(*(operand.unreduced for operand in operands)) - set(op.attrs.get("axes", ()))
    types = sharding_type_rules[op.name](op, list(operands), mesh)
    return frozenset().union(*(sharding.unreduced for sharding in types))


def _with_varying(sharding: ShardingType, varying: frozenset[str]) -> ShardingType:
    if not varying or sharding.varying == varying:
        return sharding
    return ShardingType(sharding.mesh, sharding.dims, sharding.unreduced, sharding.reduced, varying)


def seeds_propagation(sharding: ShardingType) -> bool:
    """Whether the type pins an IR sharding: it lives on a mesh with Explicit axes."""
    return bool(sharding.mesh.explicit_axes)


def ir_sharding(sharding: ShardingType, mesh_name: str) -> TensorSharding:
    """The IR sharding a value of this type is seeded with (see the module docstring)."""
    mesh = sharding.mesh
    open_dims = bool(mesh.auto_axes)
    dims = tuple(DimSharding(tuple(AxisRef(axis) for axis in axes), is_closed=not open_dims)
                 for axes in sharding.dims)
    taken = set(sharding.used_axes) | sharding.unreduced
    replicated = tuple(AxisRef(axis) for axis in mesh.explicit_axes if axis not in taken)
    unreduced = tuple(AxisRef(axis) for axis in mesh.axis_names if axis in sharding.unreduced)
    return TensorSharding(mesh_name, dims, replicated, unreduced)


def mesh_attr_for(mesh: AbstractMesh, known: Sequence[MeshAttr]) -> MeshAttr:
    """The concrete IR mesh of an abstract one: a known mesh with its axes, else the devices of
    a known mesh of the same size in their order, else devices 0..size-1."""
    axes = tuple(zip(mesh.axis_names, mesh.axis_sizes))
    for attr in known:
        if attr.axes == axes:
            return attr
    for attr in known:
        if attr.size == mesh.size:
            return MeshAttr(axes, attr.devices)
    return MeshAttr(axes)
