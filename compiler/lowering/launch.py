"""The plan steps that run fused kernels: line up the buffers' leading (mesh) dims, view each
buffer in the shape its kernel reads, allocate the outputs, and run the kernel's range on every
core (runtime/threads.py)."""

from __future__ import annotations

import math
from ctypes import addressof, c_char

import numpy as np
from meshjit.ir import Value
from meshjit.ir.dtypes import to_numpy
# NOTE: the one place the compiler meets the runtime's execution services (docs/decisions.md):
# the kernels lowering builds run inside the executor, on its threads and its output buffers.
from meshjit.runtime.buffers import empty as empty
from meshjit.runtime.threads import matmul as matmul
from meshjit.runtime.threads import matmul_split as matmul_split
from meshjit.runtime.threads import parallel_for as parallel_for
from meshjit.runtime.threads import reshaped as reshaped
from meshjit.runtime.threads import single_threaded_blas as single_threaded_blas
from meshjit.runtime.threads import thread_count as thread_count


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


class _Layout:
    """What a launcher works out once per combination of its buffers' shapes and dtypes: the
    full leading shape, its size, and the kernel's native entry (kernel_objects.py) with each
    input's lead map as the words it takes (address, length), or None where the kernel runs
    through Numba (then ``maps`` holds the map arrays); and per output, the leading positions
    it keeps (``kept``: None for all of them, see ``_kept``)."""

    __slots__ = ("full", "count", "maps", "native", "map_words", "kept")

    def __init__(self, full: tuple, maps: list, native, kept: list):
        self.full, self.count, self.maps, self.native, self.kept = full, math.prod(full), maps, native, kept
        self.map_words = [(lead_map.ctypes.data, lead_map.size) for lead_map in maps]


def _kept(buffers, lead: int, full: tuple, reads: tuple[int, ...]):
    """The index of an output's leading positions that differ: an output computed only from
    inputs that are the same along a mesh axis (leading dim 1) is the same along it too, though
    the kernel, serving every input's positions at once, wrote it at every position. It keeps
    position 0 there, so that what reads it (and a scan that saves it) does not work on copies:
    the training step's dropout masks, made from random bits that differ along 'data' only,
    made its whole residual stream four times the size along 'model'. None where nothing drops."""
    own = np.broadcast_shapes(*(buffers[index].shape[:lead] for index in reads)) if reads else (1,) * lead
    if tuple(own) == tuple(full):
        return None
    return tuple(slice(None) if size == full_size else slice(0, 1) for size, full_size in zip(own, full))


def _layout(function, buffers, lead: int, maps: LeadMaps, views: list, results: list, prefix: tuple,
            dependencies) -> _Layout:
    full = np.broadcast_shapes(*(buffer.shape[:lead] for buffer in buffers))
    lead_maps = [maps(buffer.shape[:lead], full) for buffer in buffers]
    resolve = getattr(function, "resolve", None)
    arguments = [*prefix, *(item for pair in zip(views, lead_maps) for item in pair), *results]
    native = getattr(resolve(tuple(arguments)), "native", None) if resolve is not None else None
    kept = [None if dependencies is None else _kept(buffers, lead, full, reads) for reads in dependencies or ()]
    return _Layout(full, lead_maps, native, kept)


def _outputs(results, layout: _Layout, shapes) -> tuple:
    """The results shaped as the step's outputs, each cut to the leading positions it keeps."""
    outputs = []
    for index, (result, shape) in enumerate(zip(results, shapes)):
        output = result.reshape(layout.full + shape)
        kept = layout.kept[index] if layout.kept else None
        outputs.append(output if kept is None else output[kept])
    return tuple(outputs)


def _address(array: np.ndarray) -> int:
    """A C-contiguous array's first byte: through the buffer protocol where it is writable
    (0.5 us), else numpy's ctypes view (1.3 us, most of a small kernel's launch)."""
    if array.flags.writeable and array.size:
        return addressof(c_char.from_buffer(array))
    return array.ctypes.data


def _words(arrays) -> list:
    """The native entry's words for C-contiguous arrays: each one's address, then its dims."""
    words = []
    for array in arrays:
        words.append(_address(array))
        words.extend(array.shape)
    return words


def elementwise_launcher(function, inputs: list[Value], outputs: list[Value], local_shape, grain: int,
                         dependencies=None):
    """``function(start, stop, n, in0, map0, ..., out0, ...)`` over the flattened elements.
    ``dependencies``: per output, the positions of the inputs it is computed from."""
    size = math.prod(local_shape)
    output_dtypes = [to_numpy(value.type.dtype) for value in outputs]
    input_sizes = [max(1, math.prod(value.type.shape)) for value in inputs]
    local_rank = len(inputs[0].type.shape)
    maps = LeadMaps()
    layouts: dict[tuple, _Layout] = {}

    def run(*buffers):
        views = [np.ascontiguousarray(buffer).reshape(-1, elements) for buffer, elements in zip(buffers, input_sizes)]
        key = tuple([(buffer.shape, buffer.dtype) for buffer in buffers])
        layout = layouts.get(key)
        if layout is None:
            lead = buffers[0].ndim - local_rank
            count = math.prod(np.broadcast_shapes(*(buffer.shape[:lead] for buffer in buffers)))
            results = [empty((count, size), dtype) for dtype in output_dtypes]
            layout = layouts[key] = _layout(function, buffers, lead, maps, views, results, (0, 0, size), dependencies)
        else:
            count = layout.count
            results = [empty((count, size), dtype) for dtype in output_dtypes]
        if layout.native is not None:
            words = [size]
            for view, map_words in zip(views, layout.map_words):
                words += (_address(view), view.shape[0], view.shape[1], *map_words)
            for result in results:
                words += (_address(result), count, size)
            parallel_for(layout.native, count * size, words, grain=grain)
        else:
            arguments = [item for pair in zip(views, layout.maps) for item in pair]
            parallel_for(function, count * size, (size, *arguments, *results), grain=grain)
        return _outputs(results, layout, [local_shape] * len(results))

    return run


def rows_launcher(function, inputs, outputs, rows: int, columns: int, leading: bool, grain: int,
                  scratch=(), dependencies=None):
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
    layouts: dict[tuple, _Layout] = {}

    def run(*buffers):
        lead = buffers[0].ndim - local_rank
        # NOTE: the leading count spelled out: with a size-0 view, -1 could not be inferred
        views = [np.ascontiguousarray(buffer).reshape((math.prod(buffer.shape[:lead]),) + view)
                 for buffer, view in zip(buffers, input_views)]
        key = tuple((buffer.shape, buffer.dtype) for buffer in buffers)
        layout = layouts.get(key)
        count = layout.count if layout is not None else math.prod(
            np.broadcast_shapes(*(buffer.shape[:lead] for buffer in buffers)))
        results = [empty((count,) + view, dtype) for view, dtype, _ in output_forms]
        rows_of_scratch = [np.empty((thread_count(), columns), dtype) for dtype in scratch_dtypes]
        if layout is None:
            prefix = (0, 0, 0, rows, columns) if scratch_dtypes else (0, 0, rows, columns)
            layout = layouts[key] = _layout(function, buffers, lead, maps, views, results + rows_of_scratch, prefix,
                                            dependencies)
        if layout.native is not None:
            words = [rows, columns]
            for view, map_words in zip(views, layout.map_words):
                words += (_address(view), *view.shape, *map_words)
            call, arguments = layout.native, (*words, *_words(results), *_words(rows_of_scratch))
        else:
            call = function
            arguments = (rows, columns, *(item for pair in zip(views, layout.maps) for item in pair),
                         *results, *rows_of_scratch)
        if scratch_dtypes:
            parallel_for(call, count * rows, arguments, grain=max(1, grain // max(1, columns)), alignment=1, indexed=True)
        elif leading:
            parallel_for(call, count * columns, arguments, grain=max(64, grain // max(1, rows)))
        else:
            parallel_for(call, count * rows, arguments, grain=max(1, grain // max(1, columns)), alignment=1)
        return _outputs(results, layout, [shape for _, _, shape in output_forms])

    return run
