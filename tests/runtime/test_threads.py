"""The thread pool kernels and matmuls run on (runtime/threads.py), and the generated plan
function (runtime/plan_function.py)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from meshjit.runtime import threads
from meshjit.runtime.plan import CollectiveStep, FreeStep, KernelStep, Plan
from meshjit.runtime.plan_function import compile_plan


@pytest.mark.parametrize("total, chunks, alignment", [(1000, 4, 64), (64, 8, 64), (7, 3, 1), (0, 2, 64)])
def test_chunk_bounds_cover_the_range_in_aligned_steps(total, chunks, alignment):
    bounds = threads.chunk_bounds(total, chunks, alignment)
    assert bounds[0] == 0 and bounds[-1] == total and len(bounds) == chunks + 1
    assert all(low <= high for low, high in zip(bounds, bounds[1:]))
    assert all(bound % alignment == 0 for bound in bounds[1:-1])


@pytest.mark.parametrize("indexed", [False, True])
def test_parallel_for_runs_every_element_once(indexed):
    seen = np.zeros(10_000, np.int64)
    slots = set()
    lock = threading.Lock()

    def chunk(start, stop, *rest):
        if indexed:
            with lock:
                slots.add(rest[0])
        seen[start:stop] += 1

    threads.parallel_for(chunk, seen.size, (), grain=100, alignment=1, indexed=indexed)
    assert (seen == 1).all()
    assert slots <= set(range(threads.thread_count()))


@pytest.mark.parametrize("chunks, expected", [(24, 24), (100, 24), (3, 3)])
def test_parallel_for_makes_the_chunks_asked_for_up_to_one_per_grain(two_threads, chunks, expected):
    # one chunk per GEMM of a joined job, one per slice of a chain: the thread that starts late
    # (another process on its core) leaves at most one small chunk for the other to wait on
    ranges = []
    lock = threading.Lock()

    def chunk(start, stop):
        with lock:
            ranges.append((start, stop))

    threads.parallel_for(chunk, 24, (), grain=1, alignment=1, chunks=chunks)
    assert len(ranges) == expected
    assert sorted(ranges)[0][0] == 0 and sum(stop - start for start, stop in ranges) == 24


def test_parallel_for_raises_what_a_chunk_raises():
    def chunk(start, stop):
        if start > 0:
            raise ValueError("chunk failed")

    with pytest.raises(ValueError, match="chunk failed"):
        threads.parallel_for(chunk, 10_000, (), grain=10, alignment=1)


class _BusyWorker:
    """A job that keeps the worker thread busy until released: a worker the system has not
    run yet, as on a machine whose other cores run other processes."""

    def __init__(self):
        self.started, self.release = threading.Event(), threading.Event()

    def drain(self, slot):
        self.started.set()
        self.release.wait(10)


def test_parallel_for_does_not_wait_for_a_worker_that_has_not_started(two_threads):
    threads.parallel_for(lambda start, stop: None, 4, (), grain=1, alignment=1)   # the worker exists
    busy = _BusyWorker()
    threads._POOL.queues[0].put((busy, 1))
    assert busy.started.wait(5)
    seen = np.zeros(1000, np.int64)

    def mark(start, stop):
        seen[start:stop] += 1

    runner = threading.Thread(target=threads.parallel_for, args=(mark, seen.size, ()), kwargs={"grain": 10, "alignment": 1})
    runner.start()
    runner.join(5)
    finished = not runner.is_alive()
    busy.release.set()
    runner.join(5)
    assert finished, "parallel_for waited for a worker that never took a chunk"
    assert (seen == 1).all()
    threads.parallel_for(mark, seen.size, (), grain=10, alignment=1)   # the late worker took nothing
    assert (seen == 2).all()


@pytest.mark.parametrize("left, right", [((300, 40), (40, 50)), ((2, 1, 128, 64), (1, 3, 64, 16)), ((5, 6), (6, 7))])
def test_matmul_equals_numpy_and_restores_blas_threads(left, right):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(left).astype(np.float32), rng.standard_normal(right).astype(np.float32)
    before = [library.num_threads for library in threads._BLAS.load()]
    np.testing.assert_allclose(threads.matmul(a, b), np.matmul(a, b), rtol=1e-5, atol=1e-5)
    assert [library.num_threads for library in threads._BLAS.load()] == before


@pytest.fixture
def two_threads(monkeypatch):
    """Two threads, and small GEMMs split as large ones are (so the tests stay small)."""
    count = threads.thread_count()
    threads.set_thread_count(2)
    monkeypatch.setattr(threads, "MATMUL_GRAIN", 1 << 10)
    monkeypatch.setattr(threads, "MATMUL_MIN_SPLIT", 8)
    yield
    threads.set_thread_count(count)


@pytest.mark.parametrize("left, right, split", [
    ((1, 64, 32), (8, 32, 16), ("batch", 0)),           # the left operand broadcast to every GEMM
    ((8, 2, 64, 16), (8, 2, 16, 64), ("batch", 0)),     # the largest batch axis is handed out
    ((2, 1, 64, 16), (1, 6, 16, 64), ("batch", 1)),
    ((2, 64, 16), (2, 16, 64), ("batch", 0)),           # as many GEMMs as threads
    ((3, 96, 32), (32, 40), ("rows",)),                 # 3 GEMMs do not balance on 2 threads
    ((40, 32), (32, 96), ("columns",)),                 # more columns than rows
    ((1, 4), (4, 3), ("numpy",)),
])
def test_matmul_splits_as_planned_and_equals_numpy(two_threads, left, right, split):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(left).astype(np.float32), rng.standard_normal(right).astype(np.float32)
    assert threads.matmul_split(left, right) == split
    np.testing.assert_allclose(threads.matmul(a, b), np.matmul(a, b), rtol=1e-5, atol=1e-5)
    # transposed views (the dot kernel passes them without copying), and float64
    views = a.swapaxes(-1, -2).copy().swapaxes(-1, -2), b.swapaxes(-1, -2).copy().swapaxes(-1, -2)
    np.testing.assert_allclose(threads.matmul(*views), np.matmul(a, b), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(threads.matmul(a.astype(np.float64), b.astype(np.float64)),
                               np.matmul(a.astype(np.float64), b.astype(np.float64)), rtol=1e-12)


def test_large_gemms_split_over_our_threads(two_threads):
    assert threads.matmul_split((2048, 2048), (2048, 2048)) == ("rows",)
    assert threads.matmul_split((512, 4096), (4096, 1024)) == ("columns",)
    assert threads.matmul_split((1, 512, 1024), (8, 1024, 512)) == ("batch", 0)
    threads.set_thread_count(1)
    assert threads.matmul_split((1, 512, 1024), (8, 1024, 512)) == ("one thread",)


def test_reshaped_copies_on_the_threads_only_where_a_view_cannot_do(two_threads, monkeypatch):
    monkeypatch.setattr(threads, "PARALLEL_COPY_BYTES", 64)
    copies = []
    monkeypatch.setattr(threads, "_copy_rows", lambda start, stop, source, target: copies.append((start, stop))
                        or np.copyto(target[start:stop], source[start:stop]))
    blocks = np.arange(4 * 6 * 8, dtype=np.float32).reshape(4, 6, 8)
    merged = threads.reshaped(blocks.transpose(1, 0, 2), (6, 32))  # the blocks side by side: a copy
    np.testing.assert_array_equal(merged, blocks.transpose(1, 0, 2).reshape(6, 32))
    assert sorted(copies)[0][0] == 0 and max(stop for _, stop in copies) == 6 and len(copies) > 1
    copies.clear()
    view = threads.reshaped(blocks, (24, 8))  # contiguous: a view, no copy
    assert np.shares_memory(view, blocks) and not copies
    broadcast = np.broadcast_to(blocks[:1], (4, 6, 8)).transpose(1, 0, 2)  # a replica read 4 times
    np.testing.assert_array_equal(threads.reshaped(broadcast, (6, 32)), np.tile(blocks[0], (1, 4)))


def test_the_plan_function_runs_kernels_collectives_and_frees_in_order():
    plan = Plan(mesh_shape=(2,), num_slots=4, arg_slots=(0,), arg_varying=((0,),), result_slots=(3,),
                result_varying=((),),
                steps=(KernelStep("double", lambda value: (value * 2,), (0,), (1,)),
                       CollectiveStep("all_reduce", (0,), 1, 2, {"reduction": "sum"}),
                       FreeStep((1,)),
                       KernelStep("add one", lambda value: (value + 1,), (2,), (3,))))
    run = compile_plan(plan)
    (result,) = run([np.arange(4.0).reshape(2, 2)])
    np.testing.assert_array_equal(result, [[5.0, 9.0]])
    # NOTE: every step is written out, so the slots are local variables
    assert "step0(s0)" in run.source and "s1 = None" in run.source


def test_step_kinds_the_plan_function_does_not_write_go_to_the_executor():
    class LoopStep:  # a step kind only the executor's run_step would know
        pass

    plan = Plan(mesh_shape=(), num_slots=1, arg_slots=(0,), arg_varying=((),), result_slots=(0,),
                result_varying=((),), steps=(LoopStep(),))
    run = compile_plan(plan)
    assert "run_step(step0" in run.source
    with pytest.raises(TypeError, match="cannot run plan step LoopStep"):
        run([np.zeros(1)])
