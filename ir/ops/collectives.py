"""The per-device ops: collectives over mesh axes, axis_index and partition_id. Their types are
local (per-device) types; the reference runs every device's value stacked on a device grid."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..core import SymbolRef
from ..registry import Registry
from ..shape_rules import (
    NUMERIC_OR_COMPLEX,
    check_dim,
    choice_attr,
    expect_dtype,
    expect_operand_count,
    fail,
    find_mesh,
    int_attr,
    is_int,
    required_attr,
    shape_rules,
    strings_attr,
    typed_attr,
)
from ..sharding import REDUCTIONS, MeshAttr
from ..types import TensorType

# fmt: off
OPS = (
    "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "collective_permute",
    "axis_index", "partition_id", "pvary",
)
# fmt: on

# --- collectives -----------------------------------------------------------------------------


def _collective_mesh(op: str, attrs, meshes) -> MeshAttr:
    reference = typed_attr(op, attrs, "mesh", SymbolRef, "a mesh symbol such as @mesh")
    return find_mesh(op, reference.name, meshes)


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
    expect_dtype(op, "operand 0", operands[0], NUMERIC_OR_COMPLEX)
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
    expect_dtype(op, "operand 0", operands[0], NUMERIC_OR_COMPLEX)
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


# --- reference implementations ------------------------------------------------------------

# NOTE: an implementation takes ``(attrs, grid, *stacked_operands)`` and returns a tuple of stacked
# results. A group over ``axes`` is the devices that agree on every other grid coordinate, ordered
# by their mixed-radix index over ``axes`` (the first listed is major).
collective_impls = Registry("collective implementation")


@dataclass(frozen=True, slots=True)
class DeviceGrid:
    """The devices an SPMD run steps in lockstep: the ``grid`` axes of module mesh ``mesh_name``.

    A per-device function runs over the whole mesh; a manual_computation body over its manual
    axes only. Position ``p`` along the device axis has coordinates ``grid.coordinates(p)``.
    """

    mesh_name: str
    mesh: MeshAttr
    grid: MeshAttr

    @staticmethod
    def over(mesh_name: str, mesh: MeshAttr, axis_names=None) -> DeviceGrid:
        """The grid over ``axis_names`` (all of the mesh's axes when ``None``), in mesh order."""
        if axis_names is None:
            axis_names = mesh.axis_names
        axes = tuple((name, size) for name, size in mesh.axes if name in axis_names)
        return DeviceGrid(mesh_name, mesh, MeshAttr(axes))

    @property
    def size(self) -> int:
        return self.grid.size

    def coordinates(self, position: int) -> dict[str, int]:
        return self.grid.coordinates(position)

    def groups(self, op: str, attrs) -> list[tuple[tuple[int, ...], int]]:
        """For every position: the positions of its group in group order, and its own index."""
        self.check_mesh(op, attrs)
        axes = tuple(attrs["axes"])
        for name in axes:
            self.check_axis(op, name)
        members: dict[tuple[int, ...], dict[int, int]] = {}
        keys = []
        for position in range(self.size):
            coordinates = self.coordinates(position)
            key = tuple(coordinates[name] for name in self.grid.axis_names if name not in axes)
            index = 0
            for name in axes:
                index = index * self.mesh.axis_size(name) + coordinates[name]
            members.setdefault(key, {})[index] = position
            keys.append((key, index))
        ordered = {key: tuple(group[i] for i in sorted(group)) for key, group in members.items()}
        return [(ordered[key], index) for key, index in keys]

    def check_mesh(self, op: str, attrs) -> None:
        if attrs["mesh"].name != self.mesh_name:
            raise ValueError(
                f"{op} names mesh @{attrs['mesh'].name}, but it runs on @{self.mesh_name}"
            )

    def check_axis(self, op: str, name: str) -> None:
        if name not in self.grid.axis_names:
            raise ValueError(
                f"{op} names axis {name!r}, but this run steps only over the axes "
                f"{list(self.grid.axis_names)} of mesh @{self.mesh_name}"
            )


def _reducer(reduction: str):
    def reduce(stack: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            if reduction == "sum":
                return np.sum(stack, axis=0, dtype=stack.dtype)
            return np.max(stack, axis=0) if reduction == "max" else np.min(stack, axis=0)

    return reduce


@collective_impls.register("all_reduce")
def _all_reduce(attrs, grid: DeviceGrid, stack):
    reduce = _reducer(attrs["reduction"])
    return (
        np.stack([reduce(stack[list(members)]) for members, _ in grid.groups("all_reduce", attrs)]),
    )


@collective_impls.register("all_gather")
def _all_gather(attrs, grid: DeviceGrid, stack):
    dim = attrs["dim"]
    gathered = [
        np.concatenate([stack[member] for member in members], axis=dim)
        for members, _ in grid.groups("all_gather", attrs)
    ]
    return (np.stack(gathered),)


@collective_impls.register("reduce_scatter")
def _reduce_scatter(attrs, grid: DeviceGrid, stack):
    reduce = _reducer(attrs["reduction"])
    scattered = [
        np.split(reduce(stack[list(members)]), len(members), axis=attrs["dim"])[index]
        for members, index in grid.groups("reduce_scatter", attrs)
    ]
    return (np.stack(scattered),)


@collective_impls.register("all_to_all")
def _all_to_all(attrs, grid: DeviceGrid, stack):
    split_dim, concat_dim = attrs["split_dim"], attrs["concat_dim"]
    # Device ``index`` receives chunk ``index`` of every member, concatenated in sender order.
    received = [
        np.concatenate(
            [np.split(stack[member], len(members), axis=split_dim)[index] for member in members],
            axis=concat_dim,
        )
        for members, index in grid.groups("all_to_all", attrs)
    ]
    return (np.stack(received),)


@collective_impls.register("collective_permute")
def _collective_permute(attrs, grid: DeviceGrid, stack):
    sources = {target: source for source, target in attrs["pairs"]}
    received = []
    for members, index in grid.groups("collective_permute", attrs):
        # A device that no pair targets receives zeros.
        source = sources.get(index)
        received.append(np.zeros_like(stack[0]) if source is None else stack[members[source]])
    return (np.stack(received),)


@collective_impls.register("pvary")
def _pvary_impl(attrs, grid: DeviceGrid, stack):
    # NOTE: the identity on values; it only tells the varying-axes analysis that the result may
    # differ along ``axes`` (JAX's pvary). The groups are built to check the mesh and axes.
    grid.groups("pvary", attrs)
    return (stack,)


@collective_impls.register("axis_index")
def _axis_index(attrs, grid: DeviceGrid):
    grid.check_mesh("axis_index", attrs)
    grid.check_axis("axis_index", attrs["axis"])
    indices = [grid.coordinates(position)[attrs["axis"]] for position in range(grid.size)]
    return (np.asarray(indices, dtype=np.int32),)


@collective_impls.register("partition_id")
def _partition_id(attrs, grid: DeviceGrid):
    grid.check_mesh("partition_id", attrs)
    if grid.grid.axis_names != grid.mesh.axis_names:
        raise ValueError(
            f"partition_id needs every axis of mesh @{grid.mesh_name} to be manual, but this "
            f"run steps only over {list(grid.grid.axis_names)}"
        )
    # NOTE: the grid is the whole mesh in mesh order, so a position is the flat mesh position.
    return (np.arange(grid.size, dtype=np.int32),)
