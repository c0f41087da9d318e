"""The ops with regions: manual_computation (a shard_map body whose operand and result types are
per-device along the manual axes) and the control flow ops scan, while and cond, whose region
signatures follow from their operands (loop-carried values keep one type throughout)."""

from __future__ import annotations

from collections.abc import Sequence

from ..shape_rules import (
    bool_attr,
    check_sharding,
    expect_scalar,
    fail,
    find_mesh,
    int_attr,
    shape_rules,
    strings_attr,
    typed_attr,
)
from ..sharding import DimSharding, MeshAttr, TensorSharding
from ..types import TensorType

OPS = ("manual_computation", "scan", "while", "cond")

# How the printer labels an op's regions (the parser reads any label).
_REGION_LABELS = {"while": ("cond", "body")}


def region_label(op_name: str, index: int) -> str:
    """``^cond`` and ``^body`` for a while, ``^branch0``, ``^branch1``, ... for a cond, else
    ``^body``."""
    if op_name == "cond":
        return f"branch{index}"
    labels = _REGION_LABELS.get(op_name, ())
    return labels[index] if index < len(labels) else "body"


def manual_part(sharding: TensorSharding, manual_axes: Sequence[str]) -> TensorSharding:
    """``sharding`` with every dim keeping only the axes in ``manual_axes``.

    Inside a manual_computation only manual axes split dims; the others are the partitioner's.
    Unreduced manual axes stay (each device's value is its partial sum, as shard_map's
    ``P(..., unreduced=...)`` specs say).
    """
    dims = (
        DimSharding(tuple(axis for axis in dim.axes if axis.name in manual_axes), dim.is_closed)
        for dim in sharding.dims
    )
    unreduced = tuple(axis for axis in sharding.unreduced if axis.name in manual_axes)
    return TensorSharding(sharding.mesh_name, tuple(dims), (), unreduced, sharding.reduction if unreduced else "sum")


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


# --- control flow ----------------------------------------------------------------------------


def _types(what: str, values) -> str:
    return "(" + ", ".join(str(value) for value in values) + ")" if values else f"no {what}"


def _expect_signature(op: str, what: str, found, expected) -> None:
    found, expected = tuple(found), tuple(expected)
    if found != expected:
        fail(op, f"{what} are {_types(what, found)}, expected {_types(what, expected)}")


def _count_attr(op: str, attrs, name: str, available: int) -> int:
    count = int_attr(op, attrs, name)
    if not 0 <= count <= available:
        fail(op, f"{name} = {count} does not fit {available} operands")
    return count


def scan_parts(operands, num_consts: int, num_carry: int) -> tuple[tuple, tuple, tuple]:
    """A scan's operands (or its body's arguments) split into consts, carries and xs."""
    operands = tuple(operands)
    return (operands[:num_consts], operands[num_consts:num_consts + num_carry],
            operands[num_consts + num_carry:])


@shape_rules.register("scan")
def _scan(op, operands, attrs, regions, meshes):
    """``scan(consts..., init..., xs...)``: the body maps (consts, carry, x slices) to (carry,
    y slices); results are the final carry then the ys stacked along a new leading dim."""
    length = int_attr(op, attrs, "length")
    if length < 0:
        fail(op, f"length must be >= 0, got {length}")
    num_consts = _count_attr(op, attrs, "num_consts", len(operands))
    num_carry = _count_attr(op, attrs, "num_carry", len(operands) - num_consts)
    bool_attr(op, attrs, "reverse")
    if int_attr(op, attrs, "unroll") < 1:
        fail(op, f"unroll must be >= 1, got {attrs['unroll']}")
    if len(regions) != 1:
        fail(op, f"expected one region (the body), got {len(regions)}")
    consts, carry, xs = scan_parts(operands, num_consts, num_carry)
    for index, x in enumerate(xs):
        if not x.shape or x.shape[0] != length:
            fail(op, f"scanned operand {index} {x} must have a leading dim of the length {length}")
    body = regions[0]
    slices = tuple(x.with_shape(x.shape[1:]) for x in xs)
    _expect_signature(op, "the body's argument types", (arg.type for arg in body.args),
                      consts + carry + slices)
    returned = tuple(value.type for value in body.returns)
    if len(returned) < num_carry:
        fail(op, f"the body returns {len(returned)} values, fewer than the {num_carry} carries")
    _expect_signature(op, "the body's carry result types", returned[:num_carry], carry)
    ys = tuple(y.with_shape((length,) + y.shape) for y in returned[num_carry:])
    return carry + ys


@shape_rules.register("while")
def _while(op, operands, attrs, regions, meshes):
    """``while(consts..., init...)``: ``cond`` and ``body`` take (consts, carry); cond returns a
    bool scalar, body the next carry; results are the final carry."""
    num_consts = _count_attr(op, attrs, "num_consts", len(operands))
    if len(regions) != 2:
        fail(op, f"expected two regions (cond and body), got {len(regions)}")
    cond, body = regions
    expected = tuple(operands)
    _expect_signature(op, "the cond's argument types", (arg.type for arg in cond.args), expected)
    _expect_signature(op, "the body's argument types", (arg.type for arg in body.args), expected)
    predicate = tuple(value.type for value in cond.returns)
    if len(predicate) != 1 or predicate[0].shape != () or predicate[0].dtype != "bool":
        fail(op, f"the cond must return one bool[] value, got {_types('values', predicate)}")
    carry = expected[num_consts:]
    _expect_signature(op, "the body's result types", (value.type for value in body.returns), carry)
    return carry


@shape_rules.register("cond")
def _cond(op, operands, attrs, regions, meshes):
    """``cond(index, operands...)``: runs branch ``clamp(index, 0, n - 1)`` on the operands; every
    branch takes the operands and returns values of the same types."""
    if not operands:
        fail(op, "expected an index operand")
    index, rest = operands[0], tuple(operands[1:])
    expect_scalar(op, "the index", index)
    if index.dtype != "i32":
        fail(op, f"the index has dtype {index.dtype}, expected i32")
    if not regions:
        fail(op, "expected at least one region (a branch)")
    results = tuple(value.type for value in regions[0].returns)
    for number, branch in enumerate(regions):
        _expect_signature(op, f"branch {number}'s argument types",
                          (arg.type for arg in branch.args), rest)
        _expect_signature(op, f"branch {number}'s result types",
                          (value.type for value in branch.returns), results)
    return results
