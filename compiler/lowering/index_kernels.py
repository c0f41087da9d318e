"""Kernels of the indexing and windowed ops on plan buffers.

Gathers and scatters run as Numba loops over the index vectors: numpy works out each window's
flat start in the operand (one vectorised pass over the indices) and the flat offsets of one
window (once), and the loop copies, or combines, one window per index vector; scatters apply
their updates in order, so the last of repeated indices wins and sums accumulate. Convolutions
run as one BLAS contraction per group over a strided window view of the dilated, padded input;
window reductions reduce a strided window view with numpy's reductions. Each kernel runs once
per distinct leading (mesh) position of the plan buffers.
"""

from __future__ import annotations

import numba
import numpy as np
from meshjit.ir.gather_scatter import GatherDims, ScatterDims, Windows
from meshjit.ir.ops.indexing import fill_value
from meshjit.ir.ops.windows import dilate_and_pad, dilated, window_count

from ..tables import per_leading_position
from meshjit.ir.dtypes import kind_of


@numba.njit(cache=True, nogil=True)
def _gather_windows(source, bases, offsets, fits, fill, out):
    for batch in range(out.shape[0]):
        if fits[batch]:
            base = bases[batch]
            for element in range(offsets.shape[0]):
                out[batch, element] = source[base + offsets[element]]
        else:
            for element in range(offsets.shape[0]):
                out[batch, element] = fill


@numba.njit(cache=True, nogil=True)
def _scatter_set(target, bases, offsets, fits, updates):
    for batch in range(updates.shape[0]):
        if fits[batch]:
            for element in range(offsets.shape[0]):
                target[bases[batch] + offsets[element]] = updates[batch, element]


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _scatter_add(target, bases, offsets, fits, updates):
    for batch in range(updates.shape[0]):
        if fits[batch]:
            for element in range(offsets.shape[0]):
                target[bases[batch] + offsets[element]] += updates[batch, element]


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _scatter_mul(target, bases, offsets, fits, updates):
    for batch in range(updates.shape[0]):
        if fits[batch]:
            for element in range(offsets.shape[0]):
                target[bases[batch] + offsets[element]] *= updates[batch, element]


@numba.njit(cache=True, nogil=True)
def _scatter_min(target, bases, offsets, fits, updates):
    # NaN wins, as XLA's min: a NaN update replaces, a NaN already there stays
    for batch in range(updates.shape[0]):
        if fits[batch]:
            for element in range(offsets.shape[0]):
                position = bases[batch] + offsets[element]
                value = updates[batch, element]
                if value != value or value < target[position]:
                    target[position] = value


@numba.njit(cache=True, nogil=True)
def _scatter_max(target, bases, offsets, fits, updates):
    for batch in range(updates.shape[0]):
        if fits[batch]:
            for element in range(offsets.shape[0]):
                position = bases[batch] + offsets[element]
                value = updates[batch, element]
                if value != value or value > target[position]:
                    target[position] = value


# bools combine as logic: an add is an or (the max), a multiply an and (the min)
_SCATTER_LOOPS = {"scatter": _scatter_set, "scatter_add": _scatter_add, "scatter_mul": _scatter_mul,
                  "scatter_min": _scatter_min, "scatter_max": _scatter_max}
_BOOL_LOOPS = {"scatter_add": _scatter_max, "scatter_mul": _scatter_min}


def _window_plan(windows: Windows, shape, indices: np.ndarray, mode: str):
    """Each window's flat start, whether it fits, and the flat offsets of a window's elements."""
    strides = np.asarray([int(np.prod(shape[dim + 1:])) for dim in range(len(shape))], np.int64)
    starts = windows.starts(shape, indices)
    upper = np.asarray(shape, np.int64) - np.asarray(windows.sizes, np.int64)
    fits = np.all((starts >= 0) & (starts <= upper), axis=-1) if mode == "fill" else np.ones(starts.shape[:-1], bool)
    starts = np.clip(starts, 0, np.maximum(upper, 0))
    grid = np.indices(windows.sizes, dtype=np.int64).reshape(len(shape), -1) if shape else np.zeros((0, 1), np.int64)
    offsets = (grid * strides[:, None]).sum(axis=0) if shape else np.zeros(1, np.int64)
    return (starts @ strides).reshape(-1), fits.reshape(-1), offsets


def gather_kernel(op, lead: int):
    attrs = op.attrs
    dims = GatherDims.of(attrs)

    def one(operand, indices):
        bases, fits, offsets = _window_plan(dims.windows, operand.shape, indices, attrs["mode"])
        batch_shape = indices.shape[:-1]
        out = np.empty((len(bases), len(offsets)), operand.dtype)
        fill = np.asarray(fill_value(attrs, operand.dtype), operand.dtype)
        if out.size:
            _gather_windows(np.ascontiguousarray(operand).reshape(-1), bases, offsets, fits, fill[()], out)
        kept = dims.kept_dims(operand.ndim)
        out = out.reshape(batch_shape + tuple(dims.slice_sizes[dim] for dim in kept))
        rank = out.ndim
        positions = dims.batch_positions(rank)
        order = [positions.index(dim) if dim in positions else len(batch_shape) + dims.offset_dims.index(dim)
                 for dim in range(rank)]
        return np.transpose(out, order)

    def stacked(operand, indices):
        positions, flat, bases, fits, offsets, rows = _stacked_plan(dims.windows, operand, indices, attrs["mode"], lead)
        out = np.empty((len(bases), len(offsets)), operand.dtype)
        fill = np.asarray(fill_value(attrs, operand.dtype), operand.dtype)
        if out.size:
            _gather_windows(flat, bases, offsets, fits, fill[()], out)
        kept = dims.kept_dims(operand.ndim - lead)
        out = out.reshape(positions + rows + tuple(dims.slice_sizes[dim] for dim in kept))
        batch = dims.batch_positions(out.ndim - lead)
        order = [batch.index(dim) if dim in batch else len(rows) + dims.offset_dims.index(dim)
                 for dim in range(out.ndim - lead)]
        return (np.transpose(out, list(range(lead)) + [lead + dim for dim in order]),)

    return stacked if lead and not dims.windows.batching else per_leading_position(one, lead)


def _stacked_plan(windows: Windows, operand: np.ndarray, indices: np.ndarray, mode: str, lead: int):
    """_window_plan for every leading (mesh) position at once: the operand's blocks lie one
    after another in its flat buffer, so a position's windows start its block's size further
    on. Returns the positions' shape, the flat operand, the plan, and one position's batch
    shape. (Operand batching dims would shift with the leading dims: those take one position
    at a time.)"""
    positions = np.broadcast_shapes(operand.shape[:lead], indices.shape[:lead])
    block_shape = operand.shape[lead:]
    blocks = np.arange(int(np.prod(operand.shape[:lead])), dtype=np.int64).reshape(operand.shape[:lead])
    blocks = np.broadcast_to(blocks, positions).reshape(-1)
    rows = indices.shape[lead:-1]
    every = np.broadcast_to(indices, positions + indices.shape[lead:]).reshape(
        (int(np.prod(positions)),) + indices.shape[lead:])
    bases, fits, offsets = _window_plan(windows, block_shape, every, mode)
    bases = bases + np.repeat(blocks * int(np.prod(block_shape)), int(np.prod(rows)))
    return positions, np.ascontiguousarray(operand).reshape(-1), bases, fits, offsets, rows


def scatter_kernel(op, lead: int):
    attrs = op.attrs
    dims = ScatterDims.of(attrs)
    is_bool = op.result.type.dtype == "bool"
    loop = (_BOOL_LOOPS.get(op.name) if is_bool else None) or _SCATTER_LOOPS[op.name]

    def one(operand, indices, updates):
        windows = dims.windows(operand.ndim, updates.shape)
        bases, fits, offsets = _window_plan(windows, operand.shape, indices, attrs["mode"])
        order = dims.scatter_positions(updates.ndim) + list(dims.update_window_dims)
        moved = np.ascontiguousarray(np.transpose(updates, order)).reshape(len(bases), len(offsets))
        result = np.array(operand, copy=True, order="C")
        flat = result.reshape(-1)
        if moved.size:
            if is_bool:
                flat_view, moved = flat.view(np.uint8), moved.view(np.uint8)
                loop(flat_view, bases, offsets, fits, moved)
            else:
                loop(flat, bases, offsets, fits, moved)
        return result

    def stacked(operand, indices, updates):
        positions = np.broadcast_shapes(operand.shape[:lead], indices.shape[:lead], updates.shape[:lead])
        result = np.array(np.broadcast_to(operand, positions + operand.shape[lead:]), order="C")
        windows = dims.windows(operand.ndim - lead, updates.shape[lead:])
        _, flat, bases, fits, offsets, _ = _stacked_plan(windows, result, indices, attrs["mode"], lead)
        order = dims.scatter_positions(updates.ndim - lead) + list(dims.update_window_dims)
        every = np.broadcast_to(updates, positions + updates.shape[lead:])
        moved = np.ascontiguousarray(np.transpose(every, list(range(lead)) + [lead + dim for dim in order]))
        moved = moved.reshape(len(bases), len(offsets))
        if moved.size:
            if is_bool:
                loop(flat.view(np.uint8), bases, offsets, fits, moved.view(np.uint8))
            else:
                loop(flat, bases, offsets, fits, moved)
        return (result,)

    windowed = dims.windows(op.operands[0].type.rank, op.operands[2].type.shape)
    return stacked if lead and not windowed.batching else per_leading_position(one, lead)


# --- windows --------------------------------------------------------------------------------------


def _windows_view(padded: np.ndarray, dims, window, window_dilation, strides, counts) -> np.ndarray:
    """A view with one axis per window offset appended: ``view[..., i, ..., k]`` is the element
    at offset ``k`` of the window of output ``i`` along ``dims``."""
    view = padded
    for dim, size, dilation, stride, count in zip(dims, window, window_dilation, strides, counts):
        span = dilated(size, dilation)
        view = np.lib.stride_tricks.sliding_window_view(view, span, axis=dim)
        index = [slice(None)] * view.ndim
        index[dim] = slice(0, stride * (count - 1) + 1 if count else 0, stride)
        index[-1] = slice(None, None, dilation)
        view = view[tuple(index)]
    return view


def conv_kernel(op, lead: int):
    attrs = op.attrs

    def one(lhs, rhs):
        rank = lhs.ndim
        spatial = list(range(2, rank))
        x = dilate_and_pad(np.transpose(lhs, attrs["lhs_spec"]), spatial, attrs["lhs_dilation"], attrs["padding"], 0)
        w = np.transpose(rhs, attrs["rhs_spec"])
        kernel = w.shape[2:]
        counts = [window_count(x.shape[dim], dilated(k, d), s)
                  for dim, k, d, s in zip(spatial, kernel, attrs["rhs_dilation"], attrs["window_strides"])]
        view = _windows_view(x, spatial, kernel, attrs["rhs_dilation"], attrs["window_strides"], counts)
        groups, batch_groups = attrs["feature_group_count"], attrs["batch_group_count"]
        batch, features, out_features = x.shape[0], x.shape[1], w.shape[0]
        accumulate = np.float64 if kind_of(lhs.dtype) == "f" else lhs.dtype
        taps = tuple(range(view.ndim - len(spatial), view.ndim))
        pieces = []
        count = max(groups, batch_groups)
        per_out = out_features // count
        for group in range(count):
            if batch_groups > 1:
                part = view[group * (batch // count):(group + 1) * (batch // count)]
            else:
                part = view[:, group * (features // count):(group + 1) * (features // count)]
            weights = w[group * per_out:(group + 1) * per_out]
            product = np.tensordot(part.astype(accumulate), weights.astype(accumulate),
                                   axes=((1,) + taps, (1,) + tuple(range(2, w.ndim))))
            pieces.append(np.moveaxis(product, -1, 1))
        out = np.concatenate(pieces, axis=1).astype(lhs.dtype)
        return np.transpose(out, np.argsort(attrs["out_spec"]))

    return per_leading_position(one, lead)


_WINDOW_REDUCE = {"reduce_window_sum": np.sum, "reduce_window_max": np.max, "reduce_window_min": np.min}


def reduce_window_kernel(op, lead: int):
    attrs = op.attrs
    reduce = _WINDOW_REDUCE[op.name]

    def one(operand, init):
        dims = list(range(operand.ndim))
        padded = dilate_and_pad(operand, dims, attrs["base_dilation"], attrs["padding"], init)
        counts = [window_count(size, dilated(window, dilation), stride) for size, window, dilation, stride in
                  zip(padded.shape, attrs["window_dimensions"], attrs["window_dilation"], attrs["window_strides"])]
        if 0 in counts or 0 in attrs["window_dimensions"]:
            return np.full(counts, init, operand.dtype)
        view = _windows_view(padded, dims, attrs["window_dimensions"], attrs["window_dilation"],
                             attrs["window_strides"], counts)
        with np.errstate(all="ignore"):
            reduced = reduce(view, axis=tuple(range(operand.ndim, view.ndim)))
            combined = {"reduce_window_sum": np.add, "reduce_window_max": np.maximum,
                        "reduce_window_min": np.minimum}[op.name](reduced, init)
        return np.asarray(combined, dtype=operand.dtype)

    return per_leading_position(one, lead)
