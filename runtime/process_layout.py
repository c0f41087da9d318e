"""Which block of a mesh this process holds in a multi-process job, and which processes meet in
each collective. Bookkeeping over the devices' process indices only; MPI lives elsewhere.

NOTE: the processes must tile the mesh as a grid of equal blocks: every mesh axis is cut into
equal parts and each process holds one part of every axis (any meshes built from process-major
device ids, such as ``np.array(devices()).reshape(...)``, do). Then a plan buffer on one process
is the single-process buffer restricted to the process's block, and the processes that meet in a
collective over some axes are those holding the same parts of the other axes.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from .devices import process_index
from .mesh import Mesh

Block = tuple[tuple[int, ...], ...]  # per mesh axis: the indices along it, ascending


@dataclass(frozen=True)
class ProcessGroup:
    """The processes meeting in a collective over ``axes``, in member order.

    A member is a device position along the collective's axes, numbered with the first listed
    axis major (as in the partitioned program). ``processes[rank]`` is the job process at group
    rank ``rank``, ``blocks[rank]`` its block, ``members[rank]`` the members it holds ascending;
    ``rank`` is this process's group rank.
    """

    axes: tuple[int, ...]
    processes: tuple[int, ...]
    blocks: tuple[Block, ...]
    members: tuple[tuple[int, ...], ...]
    rank: int

    @property
    def size(self) -> int:
        return len(self.processes)

    @functools.cached_property
    def owners(self) -> np.ndarray:
        """The group rank of the process holding each member, indexed by member."""
        owners = np.empty(sum(len(held) for held in self.members), np.intp)
        for rank, held in enumerate(self.members):
            owners[np.asarray(held, np.intp)] = rank
        return owners

    def owner_of(self, member: int) -> int:
        """The group rank of the process holding ``member``."""
        return int(self.owners[member])


class ProcessLayout:
    """This process's block of a mesh whose devices span several processes."""

    def __init__(self, mesh: Mesh, process_grid: np.ndarray, this_process: int):
        self.mesh_shape = tuple(mesh.axis_sizes)
        self.axis_names = tuple(mesh.axis_names)
        self._blocks = {int(process): _block_of(process_grid, process) for process in np.unique(process_grid)}
        _check_grid(mesh, process_grid, self._blocks)
        if this_process not in self._blocks:
            raise ValueError(
                f"process {this_process} holds none of the devices of mesh {mesh}; every process "
                f"that runs a program on a multi-process mesh must own some of its devices"
            )
        self.process = this_process
        self.block = self._blocks[this_process]
        self.local_shape = tuple(len(indices) for indices in self.block)
        self._groups: dict[tuple[int, ...], ProcessGroup] = {}

    def axis_label(self, axes) -> str:
        return repr(tuple(self.axis_names[axis] for axis in axes))

    def crosses(self, axes) -> bool:
        """Whether a collective over ``axes`` involves devices of other processes."""
        return any(len(self.block[axis]) < self.mesh_shape[axis] for axis in axes)

    def group(self, axes: tuple[int, ...]) -> ProcessGroup:
        """The processes that hold the same parts of the axes outside ``axes`` as this one."""
        cached = self._groups.get(axes)
        if cached is None:
            cached = self._groups[axes] = self._build_group(axes)
        return cached

    def _build_group(self, axes) -> ProcessGroup:
        others = [axis for axis in range(len(self.mesh_shape)) if axis not in axes]
        key = tuple(self.block[axis] for axis in others)
        sizes = [self.mesh_shape[axis] for axis in axes]
        held = {process: block for process, block in self._blocks.items()
                if tuple(block[axis] for axis in others) == key}
        members = {process: _members(block, axes, sizes) for process, block in held.items()}
        order = sorted(held, key=lambda process: members[process][0])
        return ProcessGroup(axes, tuple(order), tuple(held[process] for process in order),
                            tuple(members[process] for process in order), order.index(self.process))

    def lead_index(self, block: Block, axes, shape) -> tuple:
        """An open-mesh index of the leading dims of a buffer of ``shape`` selecting ``block``
        along ``axes`` (and every position of the other leading dims)."""
        arrays = [np.asarray(block[axis]) if axis in axes else np.arange(size)
                  for axis, size in enumerate(shape[:len(self.mesh_shape)])]
        return np.ix_(*arrays)

    def take_local(self, buffer: np.ndarray, axes) -> np.ndarray:
        """This process's positions of a buffer whose ``axes`` dims span the whole mesh."""
        return np.ascontiguousarray(buffer[self.lead_index(self.block, axes, buffer.shape)])

    def member_position(self, member: int, axes) -> dict[int, int]:
        """The mesh coordinate along each of ``axes`` of group member ``member``."""
        coordinates = np.unravel_index(member, [self.mesh_shape[axis] for axis in axes])
        return {axis: int(coordinate) for axis, coordinate in zip(axes, coordinates)}

    def axis_index(self, axis: int) -> np.ndarray:
        shape = [1] * len(self.mesh_shape)
        shape[axis] = len(self.block[axis])
        return np.asarray(self.block[axis], dtype=np.int32).reshape(shape)

    def partition_id(self) -> np.ndarray:
        ids = np.arange(math.prod(self.mesh_shape), dtype=np.int32).reshape(self.mesh_shape)
        return np.ascontiguousarray(ids[np.ix_(*self.block)])


def _block_of(process_grid: np.ndarray, process) -> Block:
    positions = np.nonzero(process_grid == process)
    return tuple(tuple(int(index) for index in np.unique(along)) for along in positions)


def _members(block: Block, axes, sizes) -> tuple[int, ...]:
    """The member numbers of ``block``'s positions along ``axes`` (first listed axis major)."""
    grids = np.meshgrid(*[np.asarray(block[axis]) for axis in axes], indexing="ij")
    return tuple(sorted(int(member) for member in np.ravel_multi_index(grids, sizes).ravel()))


def _check_grid(mesh: Mesh, process_grid: np.ndarray, blocks: dict[int, Block]) -> None:
    """Raise ValueError unless the processes tile the mesh as a grid of equal blocks."""
    problem = None
    for axis, size in enumerate(process_grid.shape):
        parts = {block[axis] for block in blocks.values()}
        covered = sorted(index for part in parts for index in part)
        if covered != list(range(size)) or len({len(part) for part in parts}) != 1:
            problem = f"the processes' parts of axis {mesh.axis_names[axis]!r} overlap or differ in size"
    for process, block in blocks.items():
        if not (process_grid[np.ix_(*block)] == process).all():
            problem = f"process {process}'s devices do not form a block of the mesh"
    if problem is None and math.prod(len({block[axis] for block in blocks.values()})
                                     for axis in range(process_grid.ndim)) != len(blocks):
        problem = "the processes' blocks do not form a grid"
    if problem is not None:
        raise ValueError(
            f"meshjit runs a mesh across processes only when the processes tile it as a grid of equal "
            f"blocks, but in mesh {dict(mesh.shape)} with device processes\n{process_grid}\n{problem}. "
            f"Build the mesh from process-major devices, e.g. np.array(meshjit.devices()).reshape(...)"
        )


_LAYOUTS: dict = {}


def process_layout(mesh: Mesh) -> ProcessLayout | None:
    """This process's block of ``mesh``, or None when every device of the mesh is its own (the
    single-process path then runs unchanged)."""
    # NOTE: Mesh equality looks at device ids only; the devices themselves carry their process
    process_grid = mesh._process_index_array
    key = (mesh, process_grid.tobytes(), process_index())
    if key not in _LAYOUTS:
        local = bool((process_grid == process_index()).all())
        _LAYOUTS[key] = None if local else ProcessLayout(mesh, np.array(process_grid), process_index())
    return _LAYOUTS[key]
