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
off); buffers under 1 MiB are left to malloc, which reuses those well.
"""

from __future__ import annotations

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
        shape = tuple(shape)
        size = math.prod(shape) * dtype.itemsize
        if size < POOL_MIN_BYTES or size > self.limit:
            return np.empty(shape, dtype)
        key = (shape, dtype.str)
        with self._lock:
            for buffer in self.held.get(key, ()):
                if sys.getrefcount(buffer) == _FREE:
                    self.reused += 1
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
