"""Running a kernel's independent chunks on every core: a few worker threads that call
``nogil`` Numba kernels (or numpy's matmul) while the calling thread runs its own share.

Why threads and not Numba's ``parallel=True``: measured on the 2-core machine (docs/execution.md,
"Using both cores"), Numba's workqueue layer was slower than one core, OpenMP is not always
installed, and both initialise a threading layer at start-up. Matmuls run on the same threads
with BLAS held to one thread meanwhile (``matmul``), so BLAS's own threads never wake up to
compete with ours: on a busy machine their hand-offs cost milliseconds per small GEMM, and
after a GEMM OpenBLAS's idle threads spin for about 0.11 s of a core before they sleep.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import queue
import threading

import numpy as np

from .buffers import empty

# NOTE: chunk boundaries are multiples of this many elements (a 64-byte cache line of float32
# and more), so two threads never write the same cache line of an output
ALIGNMENT = 64


def _default_thread_count() -> int:
    configured = os.environ.get("MESHJIT_NUM_THREADS")
    if configured:
        return max(1, int(configured))
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    # several MPI processes on one host share its cores (MPICH and Open MPI say how many)
    local = os.environ.get("MPI_LOCALNRANKS") or os.environ.get("OMPI_COMM_WORLD_LOCAL_SIZE") or "1"
    return max(1, cores // max(1, int(local)))


class _Pool:
    """Worker threads, each with its own queue of (job, thread number)."""

    def __init__(self, size: int):
        self.size = size
        self.queues: list[queue.SimpleQueue] = []
        self.lock = threading.Lock()

    def start(self) -> None:
        with self.lock:
            while len(self.queues) < self.size - 1:
                tasks: queue.SimpleQueue = queue.SimpleQueue()
                threading.Thread(target=_work, args=(tasks,), daemon=True, name="meshjit-worker").start()
                self.queues.append(tasks)


def _work(tasks: queue.SimpleQueue) -> None:
    while True:
        job, slot = tasks.get()
        job.drain(slot)
        # NOTE: drop the job before waiting again, so that no buffer it names stays referenced
        # by an idle worker (runtime/buffers.py reuses buffers nothing refers to)
        del job


_POOL = _Pool(_default_thread_count())


def thread_count() -> int:
    return _POOL.size


def set_thread_count(count: int) -> None:
    """Use ``count`` threads from now on (workers already started stay idle)."""
    if count < 1:
        raise ValueError(f"set_thread_count: count must be at least 1, got {count}")
    _POOL.size = count


def chunk_bounds(total: int, chunks: int, alignment: int = ALIGNMENT) -> list[int]:
    """``chunks + 1`` increasing bounds splitting ``range(total)`` into near-equal parts whose
    inner bounds are multiples of ``alignment``."""
    bounds = [0]
    for index in range(1, chunks):
        bound = (total * index // chunks) // alignment * alignment
        bounds.append(max(bound, bounds[-1]))
    bounds.append(total)
    return bounds


# NOTE: chunks per thread: threads take chunks from a shared counter, so a thread slowed by
# another process on its core (common on a shared machine) takes fewer, and the others finish
# the work instead of waiting for it
CHUNKS_PER_THREAD = 4


class _Job:
    """One ``parallel_for``: its chunks go to whichever thread asks next (``next`` on a count
    is atomic), and the thread that finishes the last chunk releases ``finished``. The caller
    waits for the chunks, never for a worker: a worker the system has not run yet (its core
    busy with another process) finds no chunk left when it wakes and does nothing."""

    __slots__ = ("function", "bounds", "arguments", "indexed", "taken", "completed", "finished", "failure")

    def __init__(self, function, bounds: list[int], arguments: tuple, indexed: bool):
        self.function, self.bounds, self.arguments, self.indexed = function, bounds, arguments, indexed
        self.taken, self.completed = itertools.count(), itertools.count(1)
        self.finished = threading.Lock()
        self.finished.acquire()
        self.failure = None

    def drain(self, slot: int) -> None:
        """Run chunks until none are left to take; ``slot`` is the running thread's number."""
        bounds, chunks = self.bounds, len(self.bounds) - 1
        extra = (slot,) if self.indexed else ()
        while True:
            index = next(self.taken)
            if index >= chunks:
                return
            try:
                self.function(bounds[index], bounds[index + 1], *extra, *self.arguments)
            except BaseException as error:  # handed to the caller, which re-raises it
                self.failure = self.failure or error
            if next(self.completed) == chunks:
                self.finished.release()


def parallel_for(function, total: int, arguments: tuple, *, grain: int, alignment: int = ALIGNMENT,
                 indexed: bool = False, chunks: int | None = None) -> None:
    """``function(start, stop, *arguments)`` over chunks covering ``range(total)``, each at
    least ``grain`` long (so small work stays on the calling thread), run by every thread.
    ``indexed`` passes the running thread's number (below ``thread_count()``) after ``stop``,
    for per-thread scratch space. ``chunks`` sets how many chunks there are (at most one per
    ``grain``; by default ``CHUNKS_PER_THREAD`` per thread)."""
    threads = min(_POOL.size, total // max(grain, 1))
    if threads <= 1:
        function(0, total, *((0,) if indexed else ()), *arguments)
        return
    if len(_POOL.queues) < threads - 1:
        _POOL.start()
    most = max(threads, total // max(grain, 1))
    chunks = min(chunks, most) if chunks else min(threads * CHUNKS_PER_THREAD, most)
    job = _Job(function, chunk_bounds(total, chunks, alignment), arguments, indexed)
    for slot in range(1, threads):
        _POOL.queues[slot - 1].put((job, slot))
    job.drain(0)
    job.finished.acquire()
    if job.failure is not None:
        raise job.failure


# NOTE: a matmul under this many multiply-adds (about 0.2 ms of one core's GEMM) runs on the
# calling thread alone: split over two threads, the training step's GEMMs of 2^22 multiply-adds
# (eight 128 x 64 x 64) took longer than on one (145 against 105 us for one of them, the step
# 19.0-23.3 against 17.7-18.6 ms a call, the machine shared with other processes)
MATMUL_GRAIN = 1 << 23
# NOTE: a GEMM split by rows (or columns) gives every chunk at least this many of them: BLAS
# packs the whole other operand again for each chunk, which costs about as much as 20 of its
# rows' (columns') work (measured: 0.85 ms to repack 512 x 4096 floats, 7% of a 256-column
# chunk of a 512 x 4096 x 1024 GEMM), so chunks of 512 keep it under 4%
MATMUL_MIN_SPLIT = 512


class _Blas:
    """BLAS libraries' thread counts, through threadpoolctl when it is installed."""

    def __init__(self):
        self.libraries = None
        self.lock = threading.Lock()
        self.depth = 0
        self.saved: list[int] = []

    def load(self) -> list:
        if self.libraries is None:
            try:
                from threadpoolctl import ThreadpoolController
                self.libraries = list(ThreadpoolController().select(user_api="blas").lib_controllers)
            except Exception:  # no threadpoolctl, or a BLAS it cannot drive: leave BLAS alone
                self.libraries = []
        return self.libraries

    def enter(self) -> None:
        with self.lock:
            if self.depth == 0:
                libraries = self.load()
                self.saved = [library.num_threads for library in libraries]
                for library in libraries:
                    library.set_num_threads(1)
            self.depth += 1

    def exit(self) -> None:
        with self.lock:
            self.depth -= 1
            if self.depth == 0:
                for library, count in zip(self.libraries, self.saved):
                    library.set_num_threads(count)


_BLAS = _Blas()


@contextlib.contextmanager
def single_threaded_blas():
    """BLAS on one thread inside the block (nested blocks and threads share one setting)."""
    _BLAS.enter()
    try:
        yield
    finally:
        _BLAS.exit()


def matmul_split(left_shape: tuple, right_shape: tuple) -> tuple:
    """How ``matmul`` runs operands of these shapes: ``("numpy",)`` (tiny: one call as it
    is), ``("one thread",)`` (small: one call, BLAS on one thread), ``("batch", axis)``
    (whole GEMMs handed out along that axis of the broadcast batch shape), ``("rows",)`` or
    ``("columns",)`` (every GEMM split; columns when they outnumber the rows, since a chunk
    repacks the operand it does not split and the left one is then the smaller)."""
    rows, inner, columns = left_shape[-2], left_shape[-1], right_shape[-1]
    batch = np.broadcast_shapes(left_shape[:-2], right_shape[:-2])
    work = math.prod(batch) * rows * inner * columns
    if work < 1 << 16:
        return ("numpy",)
    if work < MATMUL_GRAIN or _POOL.size == 1:
        return ("one thread",)
    if batch:
        axis = max(range(len(batch)), key=lambda position: batch[position])
        # whole GEMMs balance when each thread gets several, or the same number
        if batch[axis] >= 2 * _POOL.size or (batch[axis] >= _POOL.size and batch[axis] % _POOL.size == 0):
            return ("batch", axis)
    return ("columns",) if columns > rows else ("rows",)


def _copy_rows(start: int, stop: int, source, target) -> None:
    np.copyto(target[start:stop], source[start:stop])


# NOTE: a copy is split over the threads from this many bytes (a 2 MB copy takes ~0.1 ms)
PARALLEL_COPY_BYTES = 1 << 21


def reshaped(array: np.ndarray, shape: tuple) -> np.ndarray:
    """``array.reshape(shape)``; where that needs a copy (a transposed view's dims merged), the
    copy is made on every thread (a matmul operand's layout change: 8 MB took 0.6 ms on one)."""
    if array.flags.c_contiguous or array.nbytes < PARALLEL_COPY_BYTES or _POOL.size == 1:
        return array.reshape(shape)
    try:
        return array.reshape(shape, copy=False)
    except TypeError:  # numpy before 2.1 has no copy=: it copies on one thread where it must
        return array.reshape(shape)
    except ValueError:  # a copy is needed
        target = empty(array.shape, array.dtype)
        parallel_for(_copy_rows, array.shape[0], (array, target),
                     grain=max(1, array.shape[0] * PARALLEL_COPY_BYTES // (2 * array.nbytes)), alignment=1)
        return target.reshape(shape)


def _matmul_batch(start: int, stop: int, left, right, out) -> None:
    np.matmul(left[start:stop], right[start:stop], out=out[start:stop])


def _matmul_rows(start: int, stop: int, left, right, out) -> None:
    np.matmul(left[..., start:stop, :], right, out=out[..., start:stop, :])


def _matmul_columns(start: int, stop: int, left, right, out) -> None:
    np.matmul(left, right[..., start:stop], out=out[..., start:stop])


# NOTE: matmul_split by (left shape, right shape, threads, grain): a program's matmuls repeat
# their shapes every call, and the split costs ~5 us to work out (np.broadcast_shapes)
_SPLITS: dict[tuple, tuple] = {}


def matmul(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``np.matmul(left, right)`` on every thread with BLAS on one thread in each (see the
    module docstring), split as ``matmul_split`` says."""
    key = (left.shape, right.shape, _POOL.size, MATMUL_GRAIN)
    split = _SPLITS.get(key)
    if split is None:
        split = _SPLITS[key] = matmul_split(left.shape, right.shape)
    if split[0] == "numpy":
        return np.matmul(left, right)
    if split[0] == "one thread":
        _BLAS.enter()
        try:
            return np.matmul(left, right)
        finally:
            _BLAS.exit()
    rows, inner, columns = left.shape[-2], left.shape[-1], right.shape[-1]
    batch = np.broadcast_shapes(left.shape[:-2], right.shape[:-2])
    out = empty(batch + (rows, columns), np.result_type(left, right))
    work = math.prod(batch) * rows * inner * columns
    with single_threaded_blas():
        if split[0] == "batch":
            # the split axis first (views: broadcasting and moving axes copy nothing)
            views = tuple(np.moveaxis(np.broadcast_to(array, batch + array.shape[-2:]), split[1], 0)
                          for array in (left, right)) + (np.moveaxis(out, split[1], 0),)
            size = batch[split[1]]
            parallel_for(_matmul_batch, size, views, grain=max(1, size * MATMUL_GRAIN // work), alignment=1)
        else:
            length = columns if split[0] == "columns" else rows
            grain = max(min(MATMUL_MIN_SPLIT, length // _POOL.size), length * MATMUL_GRAIN // work, 1)
            function = _matmul_columns if split[0] == "columns" else _matmul_rows
            parallel_for(function, length, (left, right, out), grain=grain, alignment=16 if split[0] == "columns" else 1)
    return out
