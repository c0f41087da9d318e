"""Kernels of dynamic_slice and dynamic_update_slice on plan buffers: every leading (mesh)
position at once, with numpy indexing, instead of the reference per position.

Each position has its own start indices (a partitioned program offsets them by the device's
place, so they differ per device); XLA clamps them so the window fits. Inside a scan these ops
run every iteration, and a loop over 1024 devices in Python made a 16-step scan cost 19 ms a
call. When the starts are the same at every position (one block of start indices), the window
is a plain slice of every position's block; otherwise one gather (or one scatter) covers all
positions' windows.
"""

from __future__ import annotations

import numpy as np

from meshjit.ir import Op


def _clamped(start: np.ndarray, size: int, length: int) -> np.ndarray:
    """Start indices clamped so a window of ``length`` fits in ``size`` (as int64)."""
    if start.dtype.kind == "u":
        # NOTE: clamp in the start's own type first: a huge unsigned start must not wrap negative
        start = np.minimum(start, size - length)
    return np.clip(start.astype(np.int64), 0, size - length)


def _window_index(lead_shape, operand_lead, starts, local_shape, window) -> tuple:
    """The advanced index of every position's window: per leading dim the position (0 where
    the operand holds one block for all), per local dim its clamped start plus the offsets."""
    lead = len(lead_shape)
    rank = lead + len(window)
    index = []
    for dim, (count, held) in enumerate(zip(lead_shape, operand_lead)):
        shape = [1] * rank
        shape[dim] = count
        positions = np.arange(count) if held > 1 else np.zeros(count, np.intp)
        index.append(positions.reshape(shape))
    for dim, (start, size, length) in enumerate(zip(starts, local_shape, window)):
        first = _clamped(np.broadcast_to(start.reshape(start.shape[:lead]), lead_shape), size, length)
        offsets = np.arange(length).reshape([1] * (lead + dim) + [length] + [1] * (len(window) - dim - 1))
        index.append(first.reshape(lead_shape + (1,) * len(window)) + offsets)
    return tuple(index)


def _uniform_window(starts, local_shape, window, lead: int) -> tuple | None:
    """The window as slices when every start has one value for all positions, else None."""
    if any(start.size != 1 for start in starts):
        return None
    firsts = [int(_clamped(start.reshape(()), size, length))
              for start, size, length in zip(starts, local_shape, window)]
    return (slice(None),) * lead + tuple(slice(first, first + length) for first, length in zip(firsts, window))


def dynamic_slice_kernel(op: Op, lead: int):
    window = tuple(op.attrs["slice_sizes"])

    def run(operand, *starts):
        local_shape = operand.shape[lead:]
        uniform = _uniform_window(starts, local_shape, window, lead)
        if uniform is not None:
            return (np.array(operand[uniform]),)
        lead_shape = np.broadcast_shapes(operand.shape[:lead], *(start.shape[:lead] for start in starts))
        return (operand[_window_index(lead_shape, operand.shape[:lead], starts, local_shape, window)],)

    return run


def dynamic_update_slice_kernel(op: Op, lead: int):
    def run(operand, update, *starts):
        local_shape, window = operand.shape[lead:], update.shape[lead:]
        lead_shape = np.broadcast_shapes(operand.shape[:lead], update.shape[:lead],
                                         *(start.shape[:lead] for start in starts))
        result = np.empty(lead_shape + local_shape, operand.dtype)
        result[...] = operand
        uniform = _uniform_window(starts, local_shape, window, lead)
        if uniform is not None:
            result[uniform] = update
            return (result,)
        index = _window_index(lead_shape, lead_shape, starts, local_shape, window)
        result[index] = np.broadcast_to(update, lead_shape + window)
        return (result,)

    return run
