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


def test_parallel_for_raises_what_a_chunk_raises():
    def chunk(start, stop):
        if start > 0:
            raise ValueError("chunk failed")

    with pytest.raises(ValueError, match="chunk failed"):
        threads.parallel_for(chunk, 10_000, (), grain=10, alignment=1)


@pytest.mark.parametrize("left, right", [((300, 40), (40, 50)), ((2, 1, 128, 64), (1, 3, 64, 16)), ((5, 6), (6, 7))])
def test_matmul_equals_numpy_and_restores_blas_threads(left, right):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(left).astype(np.float32), rng.standard_normal(right).astype(np.float32)
    before = [library.num_threads for library in threads._BLAS.load()]
    np.testing.assert_allclose(threads.matmul(a, b), np.matmul(a, b), rtol=1e-5, atol=1e-5)
    assert [library.num_threads for library in threads._BLAS.load()] == before


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
