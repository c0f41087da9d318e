"""The numpy interpreter: runs ``module.main`` op by op on the reference implementations, once
(global semantics) or on every device in lockstep (``spmd_mesh``, values stacked per device)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from .core import Block, Func, Module, Op
from .dtypes import to_numpy
from .reference import reference_impls
from .ops import elementwise
from .ops.collectives import DeviceGrid, collective_impls
from .ops.regions import manual_part
from .registry import Registry
from .sharding import MeshAttr, TensorSharding

# Ops whose meaning needs the interpreter itself because they run regions.
region_impls = Registry("region implementation")

# Ops that act element by element: in SPMD mode they run on the whole device stack at once when
# all their operands have one shape (a 0-d select predicate or clamp bound does not line up).
_ELEMENTWISE_OPS = frozenset(
    elementwise.OPS
    + ("sharding_constraint",)
)


@dataclass(frozen=True, slots=True)
class _Context:
    meshes: Mapping[str, MeshAttr]
    grid: DeviceGrid | None  # None runs global semantics


def interpret(module: Module, *arrays) -> tuple[np.ndarray, ...]:
    """Run ``module.main`` on numpy ``arrays``; always returns a tuple, one array per result.

    In a function with ``spmd_mesh = @mesh`` every argument and result has a leading device axis
    of ``mesh.size``: position ``p`` is the device at ``mesh.coordinates(p)``.
    """
    func = module.main
    grid = None
    if func.spmd_mesh is not None:
        grid = DeviceGrid.over(func.spmd_mesh, module.mesh(func.spmd_mesh))
    arguments = _check_arguments(func, arrays, grid)
    results = _run_block(func.body, arguments, _Context(module.mesh_table, grid))
    # Copies, so that no result aliases an argument or another result.
    return tuple(np.array(result) for result in results)


def _check_arguments(func: Func, arrays, grid: DeviceGrid | None) -> list[np.ndarray]:
    if len(arrays) != len(func.args):
        raise TypeError(f"@{func.name} takes {len(func.args)} arguments, got {len(arrays)}")
    checked = []
    for index, (array, expected) in enumerate(zip(arrays, func.arg_types)):
        array = np.asarray(array)
        if array.dtype != to_numpy(expected.dtype):
            raise TypeError(
                f"argument {index} of @{func.name} must have dtype {to_numpy(expected.dtype)} "
                f"(IR {expected.dtype}), got {array.dtype}"
            )
        shape = expected.shape if grid is None else (grid.size, *expected.shape)
        if array.shape != shape:
            layout = (
                ""
                if grid is None
                else (
                    f" (a leading device axis of {grid.size} for mesh @{grid.mesh_name}, then the "
                    f"per-device shape {expected.shape})"
                )
            )
            raise ValueError(
                f"argument {index} of @{func.name} must have shape {shape}{layout}, got {array.shape}"
            )
        checked.append(array)
    return checked


def _run_block(
    block: Block, arguments: Sequence[np.ndarray], context: _Context
) -> list[np.ndarray]:
    values = {arg.id: array for arg, array in zip(block.args, arguments)}

    def lookup(value, user: str) -> np.ndarray:
        if value.id not in values:
            raise ValueError(f"{user} uses a value (id {value.id}) that is not defined before it")
        return values[value.id]

    for op in block.ops:
        operands = [lookup(operand, op.name) for operand in op.operands]
        results = _run_op(op, operands, context)
        _check_results(op, results, context.grid)
        values.update((value.id, array) for value, array in zip(op.results, results))
    return [lookup(value, "return") for value in block.returns]


def _run_op(op: Op, operands: list[np.ndarray], context: _Context) -> tuple[np.ndarray, ...]:
    if op.name in region_impls:
        return region_impls[op.name](op, operands, context)
    if op.name in collective_impls:
        if context.grid is None:
            raise ValueError(
                f"{op.name} is a per-device op: it runs only in a function with spmd_mesh or "
                f"in a manual_computation body"
            )
        return collective_impls[op.name](op.attrs, context.grid, *operands)
    implementation = reference_impls[op.name]
    if context.grid is None:
        return implementation(op.attrs, *operands)
    if op.name in _ELEMENTWISE_OPS and len({stack.shape for stack in operands}) == 1:
        return implementation(op.attrs, *operands)
    # Every device runs the op on its own slice; ``stack[p, ...]`` keeps 0-d slices arrays.
    per_device = [
        implementation(op.attrs, *(stack[position, ...] for stack in operands))
        for position in range(context.grid.size)
    ]
    return tuple(np.stack(results) for results in zip(*per_device))


def _check_results(op: Op, results, grid: DeviceGrid | None) -> None:
    if len(results) != len(op.results):
        raise ValueError(f"{op.name} computed {len(results)} results, the IR has {len(op.results)}")
    for index, (array, value) in enumerate(zip(results, op.results)):
        shape = value.type.shape if grid is None else (grid.size, *value.type.shape)
        if array.shape != shape or array.dtype != to_numpy(value.type.dtype):
            raise ValueError(
                f"{op.name} result {index}: the IR declares {value.type}"
                f"{'' if grid is None else ' per device'}, the op computed {array.dtype} "
                f"{array.shape}"
            )


# --- manual_computation ----------------------------------------------------------------------


def _block_of(index: tuple[int, ...], local_shape) -> tuple[slice, ...]:
    return tuple(slice(i * size, (i + 1) * size) for i, size in zip(index, local_shape))


def _split(array: np.ndarray, sharding: TensorSharding, grid: DeviceGrid) -> np.ndarray:
    """Every grid position's shard of ``array``, stacked; dims not sharded are copied whole.
    Over unreduced axes the value is split into partials whose sum is ``array``: the position
    at coordinate 0 along them holds it, the others zeros (a body may only sum partials)."""
    local_shape = sharding.local_shape(array.shape, grid.mesh)
    shards = []
    for position in range(grid.size):
        coordinates = grid.coordinates(position)
        shard = array[_block_of(sharding.shard_index(grid.mesh, coordinates), local_shape)]
        if any(coordinates[axis.name] for axis in sharding.unreduced):
            shard = np.zeros_like(shard)
        shards.append(shard)
    return np.stack(shards)


def _assemble(stack: np.ndarray, sharding: TensorSharding, grid: DeviceGrid) -> np.ndarray:
    """The global array whose shards under ``sharding`` the grid positions hold."""
    local_shape = stack.shape[1:]
    shards = sharding.dim_shards(grid.mesh)
    result = np.zeros([size * count for size, count in zip(local_shape, shards)], stack.dtype)
    placed = set()
    # NOTE: of the positions holding one shard, the lowest has coordinate 0 on every manual axis
    # the output is not sharded over; that copy is the one kept. Over unreduced axes the
    # positions hold partials: they are summed.
    unreduced = [axis.name for axis in sharding.unreduced]
    copies = [name for name in grid.grid.axis_names
              if name not in unreduced and name not in {axis.name for dim in sharding.dims for axis in dim.axes}]
    for position in range(grid.size):
        coordinates = grid.coordinates(position)
        index = sharding.shard_index(grid.mesh, coordinates)
        if unreduced and any(coordinates[name] for name in copies):
            continue
        if unreduced:
            result[_block_of(index, local_shape)] += stack[position]
        elif index not in placed:
            placed.add(index)
            result[_block_of(index, local_shape)] = stack[position]
    return result


def run_manual_body(block: Block, arguments: Sequence[np.ndarray], meshes: Mapping[str, MeshAttr],
                    mesh_name: str, manual_axes) -> list[np.ndarray]:
    """A manual_computation body (or a prefix of one) on per-device ``arguments``: each holds
    every position's value stacked on a leading axis, in the order of the grid over
    ``manual_axes`` of mesh ``mesh_name``; the results are stacked the same way."""
    grid = DeviceGrid.over(mesh_name, meshes[mesh_name], manual_axes)
    return _run_block(block, list(arguments), _Context(meshes, grid))


def split_for_manual_body(array: np.ndarray, sharding: TensorSharding, mesh: MeshAttr, manual_axes) -> np.ndarray:
    """``array``'s shards under ``sharding`` for every position of the grid over
    ``manual_axes``, stacked on a leading axis (a manual_computation body's argument)."""
    grid = DeviceGrid.over(sharding.mesh_name, mesh, manual_axes)
    return _split(array, manual_part(sharding, manual_axes), grid)


@region_impls.register("manual_computation")
def _manual_computation(op: Op, operands, context: _Context) -> tuple[np.ndarray, ...]:
    if context.grid is not None:
        raise ValueError(
            "manual_computation runs only in a global function; the interpreter does not nest "
            "it in a per-device function or body"
        )
    in_shardings, out_shardings = op.attrs["in_shardings"], op.attrs["out_shardings"]
    manual_axes = op.attrs["manual_axes"]
    mesh_name = (in_shardings + out_shardings)[0].mesh_name
    grid = DeviceGrid.over(mesh_name, context.meshes[mesh_name], manual_axes)
    local_operands = [
        _split(operand, manual_part(sharding, manual_axes), grid)
        for operand, sharding in zip(operands, in_shardings)
    ]
    results = _run_block(op.regions[0], local_operands, replace(context, grid=grid))
    return tuple(
        _assemble(result, manual_part(sharding, manual_axes), grid)
        for result, sharding in zip(results, out_shardings)
    )


# NOTE: imported last: the control flow ops register into ``region_impls`` above.
from . import interpret_control_flow as _control_flow  # noqa: E402, F401
