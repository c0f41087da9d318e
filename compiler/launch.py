"""The plan steps that run fused kernels: line up the buffers' leading (mesh) dims, view each
buffer in the shape its kernel reads, allocate the outputs, and run the kernel's range on every
core (runtime/threads.py)."""

from __future__ import annotations

import math

import numpy as np
from meshjit.ir import Value
from meshjit.ir.dtypes import to_numpy
from meshjit.runtime.buffers import empty
from meshjit.runtime.threads import parallel_for, thread_count


class LeadMaps:
    """For each buffer, which of its blocks every leading position reads (size-1 leading dims
    broadcast), as an int64 array; remembered per (buffer lead shape, full lead shape)."""

    def __init__(self):
        self.maps: dict[tuple, np.ndarray] = {}

    def __call__(self, lead_shape: tuple, full: tuple) -> np.ndarray:
        key = (lead_shape, full)
        found = self.maps.get(key)
        if found is None:
            positions = np.arange(math.prod(lead_shape)).reshape(lead_shape)
            found = self.maps[key] = np.ascontiguousarray(np.broadcast_to(positions, full).ravel())
        return found


def elementwise_launcher(function, inputs: list[Value], outputs: list[Value], local_shape, grain: int):
    """``function(start, stop, n, in0, map0, ..., out0, ...)`` over the flattened elements."""
    size = math.prod(local_shape)
    output_dtypes = [to_numpy(value.type.dtype) for value in outputs]
    input_sizes = [max(1, math.prod(value.type.shape)) for value in inputs]
    local_rank = len(inputs[0].type.shape)
    maps = LeadMaps()

    def run(*buffers):
        lead = buffers[0].ndim - local_rank
        full = np.broadcast_shapes(*(buffer.shape[:lead] for buffer in buffers))
        count = math.prod(full)
        arguments = [size]
        for buffer, elements in zip(buffers, input_sizes):
            arguments.append(np.ascontiguousarray(buffer).reshape(-1, elements))
            arguments.append(maps(buffer.shape[:lead], full))
        results = [empty((count, size), dtype) for dtype in output_dtypes]
        parallel_for(function, count * size, (*arguments, *results), grain=grain)
        return tuple(result.reshape(full + local_shape) for result in results)

    return run


def rows_launcher(function, inputs, outputs, rows: int, columns: int, leading: bool, grain: int,
                  scratch=()):
    """``function(start, stop, rows, n, in0, map0, ..., out0, ...)``: ``inputs`` and
    ``outputs`` are (value, kind) pairs (codegen_reductions.KernelSource). A rows kernel's
    range is the flattened (position, row) pairs, a columns kernel's the (position, column)
    pairs. ``scratch`` holds the dtypes of the rows a kernel keeps values in, one per thread."""
    scratch_dtypes = [to_numpy(dtype) for dtype in scratch]
    shapes = {"full": (rows, columns), "row": (rows,), "col": (columns,), "scalar": (1,)}
    input_views = [shapes[kind] for _, kind in inputs]
    output_forms = [(shapes[kind], to_numpy(value.type.dtype), value.type.shape) for value, kind in outputs]
    local_rank = len(inputs[0][0].type.shape)
    maps = LeadMaps()

    def run(*buffers):
        lead = buffers[0].ndim - local_rank
        full = np.broadcast_shapes(*(buffer.shape[:lead] for buffer in buffers))
        count = math.prod(full)
        arguments = [rows, columns]
        for buffer, view in zip(buffers, input_views):
            arguments.append(np.ascontiguousarray(buffer).reshape((-1,) + view))
            arguments.append(maps(buffer.shape[:lead], full))
        results = [empty((count,) + view, dtype) for view, dtype, _ in output_forms]
        if scratch_dtypes:
            rows_of_scratch = [np.empty((thread_count(), columns), dtype) for dtype in scratch_dtypes]
            parallel_for(function, count * rows, (*arguments, *results, *rows_of_scratch),
                         grain=max(1, grain // columns), alignment=1, indexed=True)
        elif leading:
            parallel_for(function, count * columns, (*arguments, *results), grain=max(64, grain // rows))
        else:
            parallel_for(function, count * rows, (*arguments, *results), grain=max(1, grain // columns),
                         alignment=1)
        return tuple(result.reshape(full + shape) for result, (_, _, shape) in zip(results, output_forms))

    return run
