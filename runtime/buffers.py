"""Large kernel outputs reused across calls instead of freshly mapped.

A fresh large numpy array is memory the operating system maps on first touch: a kernel that
writes 64 MiB into ``np.empty`` spends a third of its time in page faults (18.9 ms against 13.5
ms into a reused array, measured on a 4096 x 4096 float32 copy). glibc hands freed blocks of
32 MiB and more straight back to the system, so every call of a program over large arrays
pays the faults again. The pool keeps the large buffers kernels write (fused kernels, rows
kernels, matmuls) and hands one out again once nothing refers to it any more.

"Nothing refers to it" is read off the reference count: the pool holds each buffer in a list,
and every view of it (a reshaped result, an Array's data, a user's ``np.asarray`` of it, a
slice of that) holds a reference to it, because numpy points a view's ``base`` at the array
that owns the memory. So a buffer whose only reference is the pool's is unreachable from
anywhere else and can be overwritten. Code that keeps a raw pointer without a reference (ctypes
addresses) is outside that guarantee, as it is for numpy itself.

``MESHJIT_BUFFER_POOL_BYTES`` bounds the bytes the pool holds (default 512 MiB; 0 turns it
off); buffers under 1 MiB are left to malloc, which reuses those well once ``tune_malloc`` has
told glibc to keep them (below).
"""

from __future__ import annotations

import ctypes
import math
import os
import sys
import threading

import numpy as np

POOL_MIN_BYTES = 1 << 20
POOL_LIMIT_BYTES = int(os.environ.get("MESHJIT_BUFFER_POOL_BYTES", str(512 << 20)))


def _references_when_free() -> int:
    """What ``sys.getrefcount`` reports, in the loop of ``BufferPool.empty``, for a buffer only
    the pool holds (the list's reference, the loop variable's and the call's own)."""
    held = [np.empty(1)]
    for buffer in held:
        return sys.getrefcount(buffer)
    raise AssertionError("unreachable")


_FREE = _references_when_free()


class BufferPool:
    def __init__(self, limit: int):
        self.limit = limit
        self.held: dict[tuple, list[np.ndarray]] = {}
        self.bytes = 0
        self.reused = 0
        self._lock = threading.Lock()

    def empty(self, shape, dtype) -> np.ndarray:
        """``np.empty(shape, dtype)``, from the pool where a free buffer of that shape waits."""
        dtype = np.dtype(dtype)
        size = math.prod(shape) * dtype.itemsize
        if size < POOL_MIN_BYTES or size > self.limit:
            return np.empty(shape, dtype)
        shape = tuple(shape)
        key = (shape, dtype.str)
        with self._lock:
            for buffer in self.held.get(key, ()):
                if sys.getrefcount(buffer) == _FREE:
                    self.reused += 1
                    # NOTE: a result handed to the user was made read-only; nothing refers to it now
                    buffer.flags.writeable = True
                    return buffer
            if self.bytes + size > self.limit and not self._make_room(size):
                return np.empty(shape, dtype)
            buffer = np.empty(shape, dtype)
            self.held.setdefault(key, []).append(buffer)
            self.bytes += size
            return buffer

    def _make_room(self, size: int) -> bool:
        """Drop free buffers until ``size`` more bytes fit; False when they cannot."""
        for key, held in list(self.held.items()):
            kept = []
            for buffer in held:
                if self.bytes + size > self.limit and sys.getrefcount(buffer) == _FREE:
                    self.bytes -= buffer.nbytes
                else:
                    kept.append(buffer)
            if kept:
                self.held[key] = kept
            else:
                del self.held[key]
        return self.bytes + size <= self.limit

    def clear(self) -> None:
        """Forget every buffer (those still in use stay alive through their users)."""
        with self._lock:
            self.held.clear()
            self.bytes = 0


POOL = BufferPool(POOL_LIMIT_BYTES)
empty = POOL.empty


# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 32 << 20
TRIM_THRESHOLD_BYTES = 256 << 20


def tune_malloc() -> bool:
    """Ask glibc to serve blocks under 32 MiB from its heap and to keep up to 256 MiB of freed
    heap instead of returning it to the system; False where there is no glibc or
    ``MESHJIT_TUNE_MALLOC=0``.

    By default glibc maps every block over a threshold (128 KiB, raised as mapped blocks are
    freed) afresh and gives the top of its heap back once 2x that threshold is free there, so a
    program whose buffers are a few hundred KiB pays page faults on memory it had a moment ago:
    the transformer training step (examples/train_transformer.py) took 2,400-3,000 page faults
    and 27-29 ms of CPU time a step, and 0-3 faults and 19.7-20.8 ms with these settings
    (docs/execution.md, "Memory from malloc"). Blocks come back in the order they were freed,
    so a kernel's output often lands in memory a kernel just wrote, still in cache; the buffer
    pool, which keeps each buffer for its own size, measured 1-2 ms a step slower for these
    sizes.
    """
    if os.environ.get("MESHJIT_TUNE_MALLOC", "1") == "0" or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
        libc.gnu_get_libc_version  # noqa: B018  (only glibc has it; musl's mallopt does nothing)
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))


MALLOC_TUNED = tune_malloc()
