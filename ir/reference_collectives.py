"""The per-device ops' reference (collectives, axis_index, partition_id): every device's value
sits along a leading device axis, and each op combines values across it within its groups."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .registry import Registry
from .sharding import MeshAttr

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
def _pvary(attrs, grid: DeviceGrid, stack):
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
