"""manual_computation, the op with a region: a shard_map body whose operand and result types
are per-device along the manual axes."""

from __future__ import annotations

from collections.abc import Sequence

from ..shape_rules import check_sharding, fail, find_mesh, shape_rules, strings_attr, typed_attr
from ..sharding import DimSharding, MeshAttr, TensorSharding
from ..types import TensorType

OPS = ("manual_computation",)


def manual_part(sharding: TensorSharding, manual_axes: Sequence[str]) -> TensorSharding:
    """``sharding`` with every dim keeping only the axes in ``manual_axes``.

    Inside a manual_computation only manual axes split dims; the others are the partitioner's.
    """
    dims = (
        DimSharding(tuple(axis for axis in dim.axes if axis.name in manual_axes), dim.is_closed)
        for dim in sharding.dims
    )
    return TensorSharding(sharding.mesh_name, tuple(dims))


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
    return find_mesh(op, mesh_name, meshes)


def _check_body_arguments(op: str, operands, in_shardings, body, mesh, manual_axes) -> None:
    if len(body.args) != len(operands):
        fail(op, f"the body takes {len(body.args)} arguments for {len(operands)} operands")
    for index, (operand, sharding, arg) in enumerate(zip(operands, in_shardings, body.args)):
        check_sharding(op, f"in_shardings[{index}]", sharding, operand, mesh)
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
        check_sharding(op, f"out_shardings[{index}]", sharding, value.type, mesh)
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
