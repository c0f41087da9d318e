"""The op table's per-device ops and custom calls: collectives inside shard_map bodies (their
replica groups of device ids become mesh axes), partition_id, and GSPMD's custom calls
(``@Sharding`` is a sharding constraint; ``@SPMDFullToShardShape``, a call of the body and
``@SPMDShardToFullShape`` together are a shard_map, which becomes a manual_computation)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ..core import SymbolRef, Value
from ..sharding import MeshAttr, TensorSharding
from .ops_linalg import LAPACK_CALLS
from .ops_table import Context
from .statements import read_op
from .syntax import Region, is_token
from .values import dense_array, single_int


@dataclass(frozen=True)
class Local:
    """A shard_map operand or result in GSPMD's form: the global value and its sharding, seen
    per device between @SPMDFullToShardShape and @SPMDShardToFullShape."""

    global_value: Value
    sharding: TensorSharding | None
    type: object


def _manual(c: Context) -> tuple[str, MeshAttr, tuple[str, ...]]:
    if not c.importer.manual:
        c.op.fail("is a per-device op outside a shard_map body")
    mesh_name, axes = c.importer.manual[-1]
    return mesh_name, c.b.meshes[mesh_name], axes


def _coordinates(mesh: MeshAttr) -> dict[int, tuple[int, ...]]:
    """Each device id's mesh coordinates."""
    sizes = [size for _, size in mesh.axes]
    ids = mesh.device_ids or tuple(range(mesh.size))
    return {device: tuple(np.unravel_index(position, sizes)) for position, device in enumerate(ids)}


def _groups(mesh: MeshAttr, axes: tuple[str, ...]) -> set[tuple[int, ...]]:
    """The device groups a collective over ``axes`` uses, each in group-index order."""
    names = mesh.axis_names
    chosen = [names.index(axis) for axis in axes]
    sizes = dict(mesh.axes)
    groups: dict[tuple, dict[int, int]] = {}
    for device, coords in _coordinates(mesh).items():
        key = tuple(coord for index, coord in enumerate(coords) if index not in chosen)
        rank = 0
        for index in chosen:
            rank = rank * sizes[names[index]] + coords[index]
        groups.setdefault(key, {})[rank] = device
    return {tuple(members[rank] for rank in sorted(members)) for members in groups.values()}


def axes_of_groups(c: Context, groups: np.ndarray) -> tuple[str, ...]:
    """The manual axes whose collective groups are ``groups`` (rows of device ids)."""
    _, mesh, manual = _manual(c)
    wanted = {tuple(int(x) for x in row) for row in groups}
    for count in range(0, len(manual) + 1):
        for axes in itertools.permutations(manual, count):
            if _groups(mesh, axes) == wanted:
                return axes
    c.op.fail(f"its replica groups {sorted(wanted)} are no group of the manual axes {list(manual)}")


def _reduction(c: Context) -> str:
    from .ops_regions import region_kind

    kind = region_kind(c.op.regions[0], c.op)
    if kind not in ("sum", "max", "min"):
        c.op.fail(f"reduces with {kind}; meshjit's collectives reduce with sum, max or min")
    return kind


def _group_axes(c: Context) -> tuple[str, ...]:
    return axes_of_groups(c, dense_array(c.op.require("replica_groups"), c.op))


def _mesh_attr(c: Context) -> SymbolRef:
    return SymbolRef(_manual(c)[0])


def _all_reduce(c: Context):
    axes = _group_axes(c)
    return c.b.emit("all_reduce", c.operands(), {"axes": axes, "mesh": _mesh_attr(c), "reduction": _reduction(c)})


def _all_gather(c: Context):
    axes = _group_axes(c)
    return c.b.emit("all_gather", c.operands(), {"axes": axes, "mesh": _mesh_attr(c),
                                                 "dim": single_int(c.op.require("all_gather_dim"), c.op)})


def _reduce_scatter(c: Context):
    axes = _group_axes(c)
    return c.b.emit("reduce_scatter", c.operands(), {
        "axes": axes, "mesh": _mesh_attr(c), "reduction": _reduction(c),
        "dim": single_int(c.op.require("scatter_dimension"), c.op)})


def _all_to_all(c: Context):
    axes = _group_axes(c)
    return c.b.emit("all_to_all", c.operands(), {
        "axes": axes, "mesh": _mesh_attr(c), "split_dim": single_int(c.op.require("split_dimension"), c.op),
        "concat_dim": single_int(c.op.require("concat_dimension"), c.op)})


def _collective_permute(c: Context):
    _, mesh, manual = _manual(c)
    pairs = [tuple(int(x) for x in row) for row in dense_array(c.op.require("source_target_pairs"), c.op)]
    coords = _coordinates(mesh)
    names = mesh.axis_names
    moving = tuple(name for index, name in enumerate(names)
                   if any(coords[a][index] != coords[b][index] for a, b in pairs))
    if not set(moving) <= set(manual):
        c.op.fail(f"permutes along {list(moving)}, not all of them manual axes {list(manual)}")
    sizes = dict(mesh.axes)

    def rank(device):
        value = 0
        for name in moving:
            value = value * sizes[name] + coords[device][names.index(name)]
        return value

    local = sorted({(rank(a), rank(b)) for a, b in pairs})
    for group in _groups(mesh, moving):
        for source, target in local:
            if (group[source], group[target]) not in set(pairs):
                c.op.fail("its source_target_pairs differ between groups; meshjit's permute uses one "
                          "set of pairs in every group")
    return c.b.emit("collective_permute", c.operands(),
                    {"axes": moving, "mesh": _mesh_attr(c), "pairs": tuple(local)})


def _partition_id(c: Context):
    mesh_name = _manual(c)[0]
    index = c.b.emit1("partition_id", [], {"mesh": SymbolRef(mesh_name)})
    return c.b.emit("convert", [index], {"new_dtype": "u32"})


# --- custom calls ----------------------------------------------------------------------------


def _custom_call(c: Context):
    target = next((item for item in c.op.body if is_token(item, "SYMBOL")), None)
    name = str(target)[1:] if target is not None else "?"
    rule = _CUSTOM_CALLS.get(name)
    if rule is None:
        c.op.fail(f"custom call @{name} has no meshjit counterpart (only @Sharding, @SPMDFullToShardShape, "
                  f"@SPMDShardToFullShape and LAPACK's potrf, syevd, gesdd, getrf and trsm are mapped)")
    return rule(c)


def _gspmd(c: Context, value: Value) -> TensorSharding | None:
    return c.importer.gspmd_sharding(c.op.require("mhlo.sharding"), value.type, c.op)


def _sharding(c: Context):
    (operand,) = c.operands()
    if isinstance(operand, Local):
        return (operand,)
    sharding = _gspmd(c, operand)
    if sharding is None:
        return (operand,)
    value = c.b.emit1("sharding_constraint", [operand], {"sharding": sharding})
    c.importer.gspmd_constraints[value.id] = sharding
    return (value,)


def _full_to_shard(c: Context):
    (operand,) = c.operands()
    (type_,) = c.result_types()
    sharding = c.importer.gspmd_constraints.get(operand.id)
    return (Local(operand, sharding, type_),)


def _shard_to_full(c: Context):
    (operand,) = c.operands()
    if not isinstance(operand, Local):
        c.op.fail("expects a shard_map body's result")
    return (operand.global_value,)


def shard_map_call(c: Context, operands) -> tuple:
    """``call @body(locals...)`` of a GSPMD shard_map: a manual_computation over every mesh axis,
    its out_shardings read from the @SPMDShardToFullShape calls that take its results."""
    mesh = c.importer.gspmd_mesh
    if mesh is None or any(not isinstance(value, Local) or value.sharding is None for value in operands):
        c.op.fail("calls a shard_map body whose operands are not all sharded @SPMDFullToShardShape values")
    symbol = next(item for item in c.op.body if is_token(item, "SYMBOL"))
    callee = c.importer.funcs[str(symbol)[1:]]
    out_shardings = _out_shardings(c)
    args = [(name, type_) for name, type_, _ in callee.args]
    c.importer.manual.append(("mesh", mesh.axis_names))
    try:
        values, builder, returns, _ = c.importer.region(Region(callee.body.stmts, callee.line, callee.column),
                                                        c.scope, c.b, args, isolated=True)
    finally:
        c.importer.manual.pop()
    new = {"in_shardings": tuple(value.sharding for value in operands), "out_shardings": out_shardings,
           "manual_axes": mesh.axis_names}
    results = c.b.emit("manual_computation", [value.global_value for value in operands], new,
                       [builder.block(values, returns)])
    return tuple(Local(result, sharding, None) for result, sharding in zip(results, out_shardings))


def _out_shardings(c: Context) -> tuple[TensorSharding, ...]:
    """Follow each result through @Sharding {manual} to @SPMDShardToFullShape's sharding."""
    following = [read_op(stmt) for stmt in c.importer.following if not is_token(stmt.items[0], "BLOCK_LABEL")]
    names = c.op.result_names
    shardings = []
    for name in names:
        current, sharding = name, None
        for stmt in following:
            tokens = [str(token) for token in stmt.operand_tokens()]
            target = next((str(item)[1:] for item in stmt.body if is_token(item, "SYMBOL")), None)
            if stmt.name == "stablehlo.custom_call" and tokens == [current]:
                if target == "SPMDShardToFullShape":
                    (type_,) = stmt.types()[1]
                    sharding = c.importer.gspmd_sharding(stmt.require("mhlo.sharding"), type_, stmt)
                    break
                current = stmt.result_names[0]
        if sharding is None:
            c.op.fail(f"result {name} of the shard_map body reaches no @SPMDShardToFullShape")
        shardings.append(sharding)
    return tuple(shardings)


_CUSTOM_CALLS = {"Sharding": _sharding, "SPMDFullToShardShape": _full_to_shard,
                 "SPMDShardToFullShape": _shard_to_full, **LAPACK_CALLS}

COLLECTIVE_TABLE = {
    "stablehlo.all_reduce": _all_reduce, "stablehlo.all_gather": _all_gather,
    "stablehlo.reduce_scatter": _reduce_scatter, "stablehlo.all_to_all": _all_to_all,
    "stablehlo.collective_permute": _collective_permute, "stablehlo.partition_id": _partition_id,
    "stablehlo.custom_call": _custom_call,
}
