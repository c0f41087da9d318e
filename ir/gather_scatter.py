"""Gather and scatter dimension numbers, as XLA and jax.lax spell them: the checks of the shape
rules, the result shapes, and the operand position each element of a gather result (or of a
scatter update) reads (or writes).

The index vector is always the last dim of the indices (JAX's convention). Both ops see the
same picture: the indices' other dims are *batch* dims, and every batch position picks a
*window* of the operand, one extent per operand dim (1 for collapsed or inserted dims and for
batching dims), starting at the position its index vector names. ``clip`` clamps a start so
that the window fits; ``fill`` marks windows that do not fit: a gather fills them, a scatter
drops them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .shape_rules import INTS, check_dims, expect_dtype, fail, ints_attr
from .types import TensorType

MODES = ("clip", "fill")


def _sorted_dims(op: str, name: str, dims, rank: int) -> None:
    check_dims(op, name, dims, rank)
    if list(dims) != sorted(dims):
        fail(op, f"{name} {tuple(dims)} must be sorted")


@dataclass(frozen=True)
class Windows:
    """Where each batch position's window lies: ``index_map[k]`` is the operand dim component
    ``k`` of an index vector starts; ``batching`` pairs operand dims with the indices dims
    whose position they take; ``sizes`` is the window's extent per operand dim."""

    index_map: tuple[int, ...]
    batching: tuple[tuple[int, int], ...]
    sizes: tuple[int, ...]

    def starts(self, operand_shape, indices: np.ndarray) -> np.ndarray:
        """Each batch position's window start, ``batch_shape + (rank,)``, before clamping."""
        batch_shape = indices.shape[:-1]
        starts = np.zeros(batch_shape + (len(operand_shape),), np.int64)
        for component, dim in enumerate(self.index_map):
            starts[..., dim] = indices[..., component]
        for operand_dim, index_dim in self.batching:
            shape = [1] * len(batch_shape)
            shape[index_dim] = batch_shape[index_dim]
            starts[..., operand_dim] = np.arange(batch_shape[index_dim]).reshape(shape)
        return starts

    def positions(self, operand_shape, indices: np.ndarray, mode: str):
        """Per operand dim, the position every window element maps to (arrays of shape
        ``batch_shape + sizes``, clamped in range), and which windows fit (``batch_shape``)."""
        starts = self.starts(operand_shape, indices)
        upper = np.asarray(operand_shape, np.int64) - np.asarray(self.sizes, np.int64)
        fits = np.all((starts >= 0) & (starts <= upper), axis=-1)
        starts = np.clip(starts, 0, np.maximum(upper, 0))
        batch_rank = indices.ndim - 1
        rank = len(operand_shape)
        positions = []
        for dim, size in enumerate(self.sizes):
            start = starts[..., dim].reshape(starts.shape[:-1] + (1,) * rank)
            offsets = np.arange(size).reshape((1,) * batch_rank + tuple(size if d == dim else 1 for d in range(rank)))
            positions.append(np.broadcast_to(start + offsets, starts.shape[:-1] + tuple(self.sizes)))
        return tuple(positions), (np.ones_like(fits) if mode == "clip" else fits)


@dataclass(frozen=True)
class GatherDims:
    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    operand_batching_dims: tuple[int, ...]
    start_indices_batching_dims: tuple[int, ...]
    slice_sizes: tuple[int, ...]

    NAMES = ("offset_dims", "collapsed_slice_dims", "start_index_map", "operand_batching_dims",
             "start_indices_batching_dims", "slice_sizes")

    @staticmethod
    def of(attrs) -> GatherDims:
        return GatherDims(*(tuple(attrs[name]) for name in GatherDims.NAMES))

    @property
    def windows(self) -> Windows:
        return Windows(self.start_index_map, tuple(zip(self.operand_batching_dims, self.start_indices_batching_dims)),
                       self.slice_sizes)

    def kept_dims(self, rank: int) -> list[int]:
        """The operand dims whose window extent becomes an offset dim of the result, in order."""
        dropped = set(self.collapsed_slice_dims) | set(self.operand_batching_dims)
        return [dim for dim in range(rank) if dim not in dropped]

    def batch_positions(self, result_rank: int) -> list[int]:
        """The result dims that the indices' batch dims become, in order."""
        return [dim for dim in range(result_rank) if dim not in self.offset_dims]

    def result_shape(self, operand_shape, indices_shape) -> tuple[int, ...]:
        rank = len(self.offset_dims) + len(indices_shape) - 1
        shape = [0] * rank
        for position, size in zip(self.batch_positions(rank), indices_shape[:-1]):
            shape[position] = size
        for position, dim in zip(self.offset_dims, self.kept_dims(len(operand_shape))):
            shape[position] = self.slice_sizes[dim]
        return tuple(shape)


def check_gather(op: str, attrs, operand: TensorType, indices: TensorType) -> GatherDims:
    """The gather's dimension numbers, checked against its operand and indices."""
    expect_dtype(op, "indices", indices, INTS)
    if indices.rank == 0:
        fail(op, f"indices {indices} need a last dim holding the index vectors")
    dims = GatherDims(*(ints_attr(op, attrs, name) for name in GatherDims.NAMES))
    rank, batch_rank = operand.rank, indices.rank - 1
    if len(dims.slice_sizes) != rank:
        fail(op, f"slice_sizes {dims.slice_sizes} must have one entry per dim of the operand {operand}")
    for dim, (size, limit) in enumerate(zip(dims.slice_sizes, operand.shape)):
        if not 0 <= size <= limit:
            fail(op, f"slice_sizes {dims.slice_sizes}: dim {dim} needs 0 <= {size} <= {limit}")
    _sorted_dims(op, "collapsed_slice_dims", dims.collapsed_slice_dims, rank)
    _sorted_dims(op, "operand_batching_dims", dims.operand_batching_dims, rank)
    if set(dims.collapsed_slice_dims) & set(dims.operand_batching_dims):
        fail(op, "collapsed_slice_dims and operand_batching_dims must be disjoint")
    for name in ("collapsed_slice_dims", "operand_batching_dims"):
        for dim in getattr(dims, name):
            if dims.slice_sizes[dim] > 1:
                fail(op, f"{name} has dim {dim}, whose slice size {dims.slice_sizes[dim]} is not <= 1")
    result_rank = len(dims.offset_dims) + batch_rank
    _sorted_dims(op, "offset_dims", dims.offset_dims, result_rank)
    if len(dims.offset_dims) != len(dims.kept_dims(rank)):
        fail(op, f"offset_dims {dims.offset_dims} must name one result dim per operand dim that is neither "
                 f"collapsed nor batching ({len(dims.kept_dims(rank))})")
    if len(dims.start_index_map) != indices.shape[-1]:
        fail(op, f"start_index_map {dims.start_index_map} must have one entry per index vector component "
                 f"({indices.shape[-1]}, the last dim of {indices})")
    check_dims(op, "start_index_map", dims.start_index_map, rank)
    if set(dims.start_index_map) & set(dims.operand_batching_dims):
        fail(op, "start_index_map and operand_batching_dims must be disjoint")
    _check_batching(op, "start_indices_batching_dims", dims.start_indices_batching_dims, dims.operand_batching_dims,
                    operand, indices)
    return dims


def _check_batching(op: str, name: str, index_dims, operand_dims, operand: TensorType, indices: TensorType) -> None:
    check_dims(op, name, index_dims, indices.rank - 1)
    if len(index_dims) != len(operand_dims):
        fail(op, f"{name} {tuple(index_dims)} must pair up with operand_batching_dims {tuple(operand_dims)}")
    for operand_dim, index_dim in zip(operand_dims, index_dims):
        if operand.shape[operand_dim] != indices.shape[index_dim]:
            fail(op, f"operand batching dim {operand_dim} of {operand} and indices dim {index_dim} of "
                     f"{indices} differ in size")


@dataclass(frozen=True)
class ScatterDims:
    update_window_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    scatter_dims_to_operand_dims: tuple[int, ...]
    operand_batching_dims: tuple[int, ...]
    scatter_indices_batching_dims: tuple[int, ...]

    NAMES = ("update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims", "operand_batching_dims",
             "scatter_indices_batching_dims")

    @staticmethod
    def of(attrs) -> ScatterDims:
        return ScatterDims(*(tuple(attrs[name]) for name in ScatterDims.NAMES))

    def window_operand_dims(self, rank: int) -> list[int]:
        """The operand dims the update window dims stand for, in order."""
        dropped = set(self.inserted_window_dims) | set(self.operand_batching_dims)
        return [dim for dim in range(rank) if dim not in dropped]

    def scatter_positions(self, updates_rank: int) -> list[int]:
        """The update dims that pair with the indices' batch dims, in order."""
        return [dim for dim in range(updates_rank) if dim not in self.update_window_dims]

    def window_sizes(self, rank: int, updates_shape) -> tuple[int, ...]:
        sizes = [1] * rank
        for dim, update_dim in zip(self.window_operand_dims(rank), self.update_window_dims):
            sizes[dim] = updates_shape[update_dim]
        return tuple(sizes)

    def windows(self, rank: int, updates_shape) -> Windows:
        return Windows(self.scatter_dims_to_operand_dims,
                       tuple(zip(self.operand_batching_dims, self.scatter_indices_batching_dims)),
                       self.window_sizes(rank, updates_shape))

    def as_gather(self, rank: int, updates_shape) -> GatherDims:
        """The gather that reads what this scatter writes, with the updates' layout."""
        return GatherDims(self.update_window_dims, self.inserted_window_dims, self.scatter_dims_to_operand_dims,
                          self.operand_batching_dims, self.scatter_indices_batching_dims,
                          self.window_sizes(rank, updates_shape))


def check_scatter(op: str, attrs, operand: TensorType, indices: TensorType, updates: TensorType) -> ScatterDims:
    """The scatter's dimension numbers, checked against its operand, indices and updates."""
    expect_dtype(op, "indices", indices, INTS)
    if indices.rank == 0:
        fail(op, f"indices {indices} need a last dim holding the index vectors")
    if updates.dtype != operand.dtype:
        fail(op, f"updates {updates} must have the dtype of the operand {operand}")
    dims = ScatterDims(*(ints_attr(op, attrs, name) for name in ScatterDims.NAMES))
    rank, batch_rank = operand.rank, indices.rank - 1
    _sorted_dims(op, "update_window_dims", dims.update_window_dims, updates.rank)
    _sorted_dims(op, "inserted_window_dims", dims.inserted_window_dims, rank)
    _sorted_dims(op, "operand_batching_dims", dims.operand_batching_dims, rank)
    if set(dims.inserted_window_dims) & set(dims.operand_batching_dims):
        fail(op, "inserted_window_dims and operand_batching_dims must be disjoint")
    if len(dims.update_window_dims) != len(dims.window_operand_dims(rank)):
        fail(op, f"update_window_dims {dims.update_window_dims} must name one update dim per operand dim that is "
                 f"neither inserted nor batching ({len(dims.window_operand_dims(rank))})")
    if updates.rank != len(dims.update_window_dims) + batch_rank:
        fail(op, f"updates {updates} must have rank {len(dims.update_window_dims) + batch_rank}: the update window "
                 f"dims and the batch dims of the indices {indices}")
    for operand_dim, update_dim in zip(dims.window_operand_dims(rank), dims.update_window_dims):
        if updates.shape[update_dim] > operand.shape[operand_dim]:
            fail(op, f"update window dim {update_dim} of {updates} is larger than operand dim {operand_dim} of "
                     f"{operand}")
    for update_dim, size in zip(dims.scatter_positions(updates.rank), indices.shape[:-1]):
        if updates.shape[update_dim] != size:
            fail(op, f"update dim {update_dim} of {updates} must match the indices' batch dims {indices.shape[:-1]}")
    if len(dims.scatter_dims_to_operand_dims) != indices.shape[-1]:
        fail(op, f"scatter_dims_to_operand_dims {dims.scatter_dims_to_operand_dims} must have one entry per index "
                 f"vector component ({indices.shape[-1]}, the last dim of {indices})")
    check_dims(op, "scatter_dims_to_operand_dims", dims.scatter_dims_to_operand_dims, rank)
    if set(dims.scatter_dims_to_operand_dims) & set(dims.operand_batching_dims):
        fail(op, "scatter_dims_to_operand_dims and operand_batching_dims must be disjoint")
    _check_batching(op, "scatter_indices_batching_dims", dims.scatter_indices_batching_dims,
                    dims.operand_batching_dims, operand, indices)
    return dims
