"""Plan collectives in a multi-process job. Each process's buffers cover its block of the mesh
(process_layout.py); a collective whose device groups stay inside the block runs as the
in-process array operation, and one that crosses processes goes through MPI on the
communicator of its process group, after the arrival check (mpi_deadline.py).

Cross-process steps reuse the in-process operations for all index bookkeeping:
- all_reduce: reduce the local block, then MPI Allreduce the partial results;
- reduce_scatter: the same all_reduce, then keep this process's chunks;
- all_gather: MPI Allgather the blocks into the group's whole buffer, then the in-process op;
- all_to_all: MPI Alltoall of exactly the chunks each process's devices receive, placed into
  the group's buffer (zeros elsewhere), then the in-process op, keeping this block;
- collective_permute: point-to-point messages for the pairs that cross processes, then the same.
Results are bit-identical to one process except sums, whose order of addition differs.
MPI has no 16-bit floats: f16 and bf16 values travel as their uint16 bits (see
``_narrow_collective`` for their reductions), bit-identical to one process.
"""

from __future__ import annotations

import numpy as np

from meshjit.ir.dtypes import NARROW_FLOATS, to_numpy

from . import inprocess_collectives, mpi_backend, mpi_deadline
from .plan import CollectiveStep
from .process_layout import ProcessGroup, ProcessLayout

_MPI_REDUCTIONS = {"sum": "SUM", "max": "MAX", "min": "MIN"}
_MPI_BOOL_REDUCTIONS = {"sum": "LOR", "max": "LOR", "min": "LAND"}
_NARROW = frozenset(to_numpy(name) for name in NARROW_FLOATS)


def run_collective(step: CollectiveStep, buffers, layout: ProcessLayout) -> np.ndarray:
    """The result buffer of ``step`` on this process's block of the mesh."""
    if step.kind == "axis_index":
        return layout.axis_index(step.axes[0])
    if step.kind == "partition_id":
        return layout.partition_id()
    value = buffers[step.input]
    if not layout.crosses(step.axes):
        return _run_in_process(step, value, layout.local_shape)
    group = layout.group(step.axes)
    label = _label(step, layout)
    mpi_deadline.check_arrival(mpi_backend.world(), group.processes, label)
    if value.dtype in _NARROW:
        return _narrow_collective(step, value, layout, group, label)
    return _CROSS_PROCESS[step.kind](step, value, layout, group, label)


def _narrow_collective(step, value, layout, group, label) -> np.ndarray:
    """A collective of f16 or bf16 values, which MPI has no type for: moves carry their uint16
    bits; reductions run in f32 (rounded once, as one process sums bf16 and takes f16 extrema),
    except f16 sums, which gather the group and add its members in order in f16 (as one process
    does)."""
    if step.kind not in ("all_reduce", "reduce_scatter"):
        return _CROSS_PROCESS[step.kind](step, value.view(np.uint16), layout, group, label).view(value.dtype)
    if value.dtype == np.float16 and step.params.get("reduction", "sum") == "sum":
        whole = _gather_group(value.view(np.uint16), step.axes, layout, group, label).view(value.dtype)
        reduced = inprocess_collectives.all_reduce(whole, step.axes, layout.mesh_shape, reduction="sum")
        if step.kind == "all_reduce":
            return reduced
        scattered = inprocess_collectives.reduce_scatter(reduced, step.axes, layout.mesh_shape, dim=step.params["dim"],
                                                         lead=len(layout.mesh_shape), reduction="max")
        return layout.take_local(scattered, step.axes)
    return _CROSS_PROCESS[step.kind](step, value.astype(np.float32), layout, group, label).astype(value.dtype)


def _label(step: CollectiveStep, layout: ProcessLayout) -> str:
    reduction = f"({step.params['reduction']})" if "reduction" in step.params else ""
    return f"{step.kind}{reduction} over mesh axes {layout.axis_label(step.axes)} of {layout.mesh_shape}"


def _run_in_process(step: CollectiveStep, value: np.ndarray, local_shape) -> np.ndarray:
    options = dict(step.params)
    if step.kind != "all_reduce":
        options["lead"] = len(local_shape)
    return getattr(inprocess_collectives, step.kind)(value, step.axes, local_shape, **options)


def _expanded(value: np.ndarray, axes, local_shape) -> np.ndarray:
    """``value`` with its ``axes`` leading dims at their block size, as one contiguous array."""
    shape = list(value.shape)
    for axis in axes:
        shape[axis] = local_shape[axis]
    return np.ascontiguousarray(np.broadcast_to(value, tuple(shape)))


def _group_shape(shape, axes, mesh_shape) -> tuple[int, ...]:
    """A buffer shape with the ``axes`` leading dims spanning the whole mesh."""
    return tuple(mesh_shape[axis] if axis in axes else size for axis, size in enumerate(shape))


def _communicator(group: ProcessGroup):
    communicator = mpi_backend.group_communicator(group.processes)
    assert communicator.Get_rank() == group.rank, "group communicator ranks follow member order"
    return communicator


def _all_reduce(step, value, layout, group, label) -> np.ndarray:
    reduction = step.params.get("reduction", "sum")
    partial = np.ascontiguousarray(
        inprocess_collectives.all_reduce(value, step.axes, layout.local_shape, reduction=reduction))
    names = _MPI_BOOL_REDUCTIONS if partial.dtype == np.bool_ else _MPI_REDUCTIONS
    result = np.empty_like(partial)
    operation = getattr(mpi_backend.mpi(), names[reduction])
    request = _communicator(group).Iallreduce(partial, result, operation)
    mpi_deadline.wait([request], label, [group.processes])
    return result


def _reduce_scatter(step, value, layout, group, label) -> np.ndarray:
    reduced = _all_reduce(step, value, layout, group, label)
    # NOTE: every group member now holds the same reduced value, and max over identical copies
    # is the identity, so the in-process op with "max" only cuts out each member's chunk.
    scattered = inprocess_collectives.reduce_scatter(reduced, step.axes, layout.mesh_shape, dim=step.params["dim"],
                                                     lead=len(layout.mesh_shape), reduction="max")
    return layout.take_local(scattered, step.axes)


def _gather_group(value, axes, layout, group, label) -> np.ndarray:
    """The group's whole buffer along ``axes``, assembled from every process's block."""
    local = _expanded(value, axes, layout.local_shape)
    received = np.empty((group.size,) + local.shape, local.dtype)
    mpi_deadline.wait([_communicator(group).Iallgather(local, received)], label, [group.processes])
    whole = np.empty(_group_shape(local.shape, axes, layout.mesh_shape), local.dtype)
    for rank, block in enumerate(group.blocks):
        whole[layout.lead_index(block, axes, local.shape)] = received[rank]
    return whole


def _all_gather(step, value, layout, group, label) -> np.ndarray:
    whole = _gather_group(value, step.axes, layout, group, label)
    return inprocess_collectives.all_gather(whole, step.axes, layout.mesh_shape, dim=step.params["dim"],
                                            lead=len(layout.mesh_shape))


def _all_to_all(step, value, layout, group, label) -> np.ndarray:
    lead = len(layout.mesh_shape)
    split_dim = step.params["split_dim"]
    local = _expanded(value, step.axes, layout.local_shape)
    count = sum(len(members) for members in group.members)
    chunk_axis = lead + split_dim
    # NOTE: split the split dim into (receiving member, chunk) to pick each receiver's chunks
    chunked = local.reshape(local.shape[:chunk_axis] + (count, -1) + local.shape[chunk_axis + 1:])
    sending = np.ascontiguousarray(np.stack([np.take(chunked, members, axis=chunk_axis)
                                             for members in group.members]))
    received = np.empty_like(sending)
    mpi_deadline.wait([_communicator(group).Ialltoall(sending, received)], label, [group.processes])
    whole = np.zeros(_group_shape(chunked.shape, step.axes, layout.mesh_shape), local.dtype)
    mine = list(group.members[group.rank])
    for rank, block in enumerate(group.blocks):
        piece = np.zeros(chunked.shape, local.dtype)
        np.moveaxis(piece, chunk_axis, 0)[mine] = np.moveaxis(received[rank], chunk_axis, 0)
        whole[layout.lead_index(block, step.axes, chunked.shape)] = piece
    whole = whole.reshape(whole.shape[:chunk_axis] + (-1,) + whole.shape[chunk_axis + 2:])
    result = inprocess_collectives.all_to_all(whole, step.axes, layout.mesh_shape, split_dim=split_dim,
                                              concat_dim=step.params["concat_dim"], lead=lead)
    return layout.take_local(result, step.axes)


def _member_index(layout: ProcessLayout, member: int, axes, block=None) -> tuple:
    """The leading-dims index of one member: its mesh coordinates, or its positions inside
    ``block`` when given."""
    position = layout.member_position(member, axes)
    if block is not None:
        position = {axis: block[axis].index(coordinate) for axis, coordinate in position.items()}
    return tuple(position.get(axis, slice(None)) for axis in range(len(layout.mesh_shape)))


def _collective_permute(step, value, layout, group, label) -> np.ndarray:
    axes, pairs = step.axes, step.params["pairs"]
    local = _expanded(value, axes, layout.local_shape)
    communicator = _communicator(group)
    requests, peers, outgoing, incoming = [], [], [], {}
    # NOTE: only pairs between this process and another need a message: found on arrays over
    # all pairs (one per device along the axes), then visited in order
    ranks = group.owners[np.asarray(pairs, np.intp).reshape(-1, 2)]
    mine = (ranks[:, 0] != ranks[:, 1]) & ((ranks[:, 0] == group.rank) | (ranks[:, 1] == group.rank))
    for index in np.flatnonzero(mine).tolist():
        (source, target), (source_rank, target_rank) = pairs[index], ranks[index].tolist()
        if source_rank == group.rank:
            outgoing.append(np.ascontiguousarray(local[_member_index(layout, source, axes, layout.block)]))
            requests.append(communicator.Isend(outgoing[-1], dest=target_rank, tag=source))
            peers.append(group.processes[target_rank])
        else:
            incoming[source] = np.empty(local[_member_index(layout, target, axes, layout.block)].shape, local.dtype)
            requests.append(communicator.Irecv(incoming[source], source=source_rank, tag=source))
            peers.append(group.processes[source_rank])
    mpi_deadline.wait(requests, label, peers)
    whole = np.zeros(_group_shape(local.shape, axes, layout.mesh_shape), local.dtype)
    whole[layout.lead_index(layout.block, axes, local.shape)] = local
    for source, data in incoming.items():
        whole[_member_index(layout, source, axes)] = data
    result = inprocess_collectives.collective_permute(whole, axes, layout.mesh_shape, pairs=pairs,
                                                      lead=len(layout.mesh_shape))
    return layout.take_local(result, axes)


_CROSS_PROCESS = {
    "all_reduce": _all_reduce,
    "reduce_scatter": _reduce_scatter,
    "all_gather": _all_gather,
    "all_to_all": _all_to_all,
    "collective_permute": _collective_permute,
}
