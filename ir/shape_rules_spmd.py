"""Shape rules of sharding_constraint, manual_computation and the per-device ops, whose operand
and result types are per-device (local) types."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from .core import SymbolRef
from .shape_rules import (
    NUMERIC,
    check_dim,
    choice_attr,
    expect_dtype,
    expect_operand_count,
    fail,
    int_attr,
    is_int,
    required_attr,
    shape_rules,
    strings_attr,
    typed_attr,
)
from .sharding import REDUCTIONS, DimSharding, MeshAttr, TensorSharding
from .types import TensorType


def manual_part(sharding: TensorSharding, manual_axes: Sequence[str]) -> TensorSharding:
    """``sharding`` with every dim keeping only the axes in ``manual_axes``.

    Inside a manual_computation only manual axes split dims; the others are the partitioner's.
    """
    dims = (
        DimSharding(tuple(axis for axis in dim.axes if axis.name in manual_axes), dim.is_closed)
        for dim in sharding.dims
    )
    return TensorSharding(sharding.mesh_name, tuple(dims))


def _find_mesh(op: str, name: str, meshes: Mapping[str, MeshAttr] | None) -> MeshAttr:
    if meshes is None:
        fail(op, f"needs the module's meshes to look up mesh @{name}")
    if name not in meshes:
        fail(op, f"mesh @{name} is not defined; the module has {sorted(meshes)}")
    return meshes[name]


def _check_sharding(
    op: str, what: str, sharding: TensorSharding, operand: TensorType, mesh: MeshAttr | None
) -> None:
    """``sharding`` fits ``operand``'s rank and, given the mesh, names only its axes."""
    if sharding.rank != operand.rank:
        fail(op, f"{what} has {sharding.rank} dims but {operand} has rank {operand.rank}")
    if mesh is None:
        return
    for axis in sharding.used_axes():
        if axis.name not in mesh.axis_names:
            fail(op, f"{what} names axis {axis.name!r}, not in mesh @{sharding.mesh_name}")


@shape_rules.register("sharding_constraint")
def _sharding_constraint(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 1)
    sharding = typed_attr(op, attrs, "sharding", TensorSharding, "a TensorSharding")
    mesh = None if meshes is None else _find_mesh(op, sharding.mesh_name, meshes)
    _check_sharding(op, "sharding", sharding, operands[0], mesh)
    return (operands[0],)


# --- manual_computation ----------------------------------------------------------------------


def _shardings_attr(op: str, attrs, name: str, count: int | None) -> tuple[TensorSharding, ...]:
    value = typed_attr(op, attrs, name, tuple, "a tuple of TensorShardings")
    if not all(isinstance(item, TensorSharding) for item in value):
        fail(op, f"attribute {name!r} must be a tuple of TensorShardings, got {value!r}")
    if count is not None and len(value) != count:
        fail(op, f"{name} has {len(value)} entries for {count} operands")
    return value


def _local_type(op: str, what: str, operand: TensorType, sharding, mesh, manual_axes) -> TensorType:
    shards = manual_part(sharding, manual_axes).dim_shards(mesh)
    for dim, (size, count) in enumerate(zip(operand.shape, shards)):
        if size % count:
            fail(
                op,
                f"{what} {operand}: dim {dim} of size {size} does not divide into {count} "
                f"shards over the manual axes",
            )
    return operand.with_shape(size // count for size, count in zip(operand.shape, shards))


def _manual_axes(op: str, attrs, mesh: MeshAttr) -> tuple[str, ...]:
    manual_axes = strings_attr(op, attrs, "manual_axes")
    if len(set(manual_axes)) != len(manual_axes):
        fail(op, f"manual_axes {manual_axes} has duplicates")
    for name in manual_axes:
        if name not in mesh.axis_names:
            fail(op, f"manual axis {name!r} is not an axis of the mesh {list(mesh.axis_names)}")
    return manual_axes


def _manual_mesh(op: str, shardings, meshes) -> MeshAttr:
    if not shardings:
        fail(op, "needs at least one operand or result sharding to name its mesh")
    mesh_name = shardings[0].mesh_name
    if any(sharding.mesh_name != mesh_name for sharding in shardings):
        fail(op, f"all in_shardings and out_shardings must use mesh @{mesh_name}")
    return _find_mesh(op, mesh_name, meshes)


def _check_body_arguments(op: str, operands, in_shardings, body, mesh, manual_axes) -> None:
    if len(body.args) != len(operands):
        fail(op, f"the body takes {len(body.args)} arguments for {len(operands)} operands")
    for index, (operand, sharding, arg) in enumerate(zip(operands, in_shardings, body.args)):
        _check_sharding(op, f"in_shardings[{index}]", sharding, operand, mesh)
        local = _local_type(op, f"operand {index}", operand, sharding, mesh, manual_axes)
        if arg.type != local:
            fail(
                op,
                f"body argument {index} is {arg.type}, expected {local}: the local type of "
                f"operand {index} {operand}",
            )


def _global_result_types(op: str, body, out_shardings, mesh, manual_axes) -> tuple[TensorType, ...]:
    if len(body.returns) != len(out_shardings):
        fail(
            op,
            f"the body returns {len(body.returns)} values for {len(out_shardings)} out_shardings",
        )
    results = []
    for index, (value, sharding) in enumerate(zip(body.returns, out_shardings)):
        _check_sharding(op, f"out_shardings[{index}]", sharding, value.type, mesh)
        shards = manual_part(sharding, manual_axes).dim_shards(mesh)
        results.append(value.type.with_shape(s * n for s, n in zip(value.type.shape, shards)))
    return tuple(results)


@shape_rules.register("manual_computation")
def _manual_computation(op, operands, attrs, regions, meshes):
    in_shardings = _shardings_attr(op, attrs, "in_shardings", len(operands))
    out_shardings = _shardings_attr(op, attrs, "out_shardings", None)
    if len(regions) != 1:
        fail(op, f"expected one region (the body), got {len(regions)}")
    mesh = _manual_mesh(op, in_shardings + out_shardings, meshes)
    manual_axes = _manual_axes(op, attrs, mesh)
    _check_body_arguments(op, operands, in_shardings, regions[0], mesh, manual_axes)
    return _global_result_types(op, regions[0], out_shardings, mesh, manual_axes)


# --- collectives -----------------------------------------------------------------------------


def _collective_mesh(op: str, attrs, meshes) -> MeshAttr:
    reference = typed_attr(op, attrs, "mesh", SymbolRef, "a mesh symbol such as @mesh")
    return _find_mesh(op, reference.name, meshes)


def _group_size(op: str, attrs, meshes) -> int:
    """The number of devices in a group over the ``axes`` attribute."""
    mesh = _collective_mesh(op, attrs, meshes)
    axes = strings_attr(op, attrs, "axes")
    if len(set(axes)) != len(axes):
        fail(op, f"axes {axes} has duplicates")
    for name in axes:
        if name not in mesh.axis_names:
            fail(op, f"axis {name!r} is not an axis of the mesh {list(mesh.axis_names)}")
    return math.prod(mesh.axis_size(name) for name in axes)


def _split_dim(op: str, what: str, operand: TensorType, dim: int, parts: int) -> TensorType:
    check_dim(op, what, dim, operand.rank)
    if operand.shape[dim] % parts:
        fail(
            op,
            f"{what} {dim} of {operand} has size {operand.shape[dim]}, which does not "
            f"divide into the group size {parts}",
        )
    return _scale_dim(operand, dim, 1, parts)


def _scale_dim(operand: TensorType, dim: int, multiply: int, divide: int = 1) -> TensorType:
    shape = list(operand.shape)
    shape[dim] = shape[dim] * multiply // divide
    return operand.with_shape(shape)


@shape_rules.register("all_reduce")
def _all_reduce(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 1)
    _group_size(op, attrs, meshes)
    choice_attr(op, attrs, "reduction", REDUCTIONS)
    expect_dtype(op, "operand 0", operands[0], NUMERIC)
    return (operands[0],)


@shape_rules.register("all_gather")
def _all_gather(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 1)
    size = _group_size(op, attrs, meshes)
    dim = int_attr(op, attrs, "dim")
    check_dim(op, "dim", dim, operands[0].rank)
    return (_scale_dim(operands[0], dim, size),)


@shape_rules.register("reduce_scatter")
def _reduce_scatter(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 1)
    size = _group_size(op, attrs, meshes)
    choice_attr(op, attrs, "reduction", REDUCTIONS)
    expect_dtype(op, "operand 0", operands[0], NUMERIC)
    return (_split_dim(op, "dim", operands[0], int_attr(op, attrs, "dim"), size),)


@shape_rules.register("all_to_all")
def _all_to_all(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 1)
    size = _group_size(op, attrs, meshes)
    split_dim = int_attr(op, attrs, "split_dim")
    concat_dim = int_attr(op, attrs, "concat_dim")
    check_dim(op, "concat_dim", concat_dim, operands[0].rank)
    split = _split_dim(op, "split_dim", operands[0], split_dim, size)
    return (_scale_dim(split, concat_dim, size),)


@shape_rules.register("collective_permute")
def _collective_permute(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 1)
    size = _group_size(op, attrs, meshes)
    pairs = required_attr(op, attrs, "pairs")
    if not isinstance(pairs, tuple) or not all(
        isinstance(pair, tuple) and len(pair) == 2 and all(is_int(i) for i in pair)
        for pair in pairs
    ):
        fail(op, f"attribute 'pairs' must be a tuple of (source, target) int pairs, got {pairs!r}")
    for pair in pairs:
        if not all(0 <= index < size for index in pair):
            fail(op, f"pair {pair} is out of range for a group of {size} devices")
    for position, what in ((0, "source"), (1, "target")):
        indices = [pair[position] for pair in pairs]
        if len(set(indices)) != len(indices):
            fail(op, f"pairs {pairs} repeat a {what}")
    return (operands[0],)


@shape_rules.register("pvary")
def _pvary(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 1)
    _group_size(op, attrs, meshes)
    return (operands[0],)


@shape_rules.register("axis_index")
def _axis_index(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 0)
    mesh = _collective_mesh(op, attrs, meshes)
    axis = typed_attr(op, attrs, "axis", str, "an axis name")
    if axis not in mesh.axis_names:
        fail(op, f"axis {axis!r} is not an axis of the mesh {list(mesh.axis_names)}")
    return (TensorType((), "i32"),)


@shape_rules.register("partition_id")
def _partition_id(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 0)
    _collective_mesh(op, attrs, meshes)
    return (TensorType((), "i32"),)
