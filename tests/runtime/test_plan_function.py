"""What the generated plan function does around the steps: constant steps run once when it is
made (runtime/plan_constants.py), and numpy's floating-point warnings are off for the call and
back on after it (runtime/float_errors.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from meshjit.runtime import plan_constants
from meshjit.runtime.executor import run_plan
from meshjit.runtime.plan import CondStep, FreeStep, KernelStep, Plan
from meshjit.runtime.plan_function import compile_plan


def plan_of(steps, num_slots, result_slots=None, arg_slots=(0,)) -> Plan:
    result_slots = (num_slots - 1,) if result_slots is None else result_slots
    return Plan(mesh_shape=(), num_slots=num_slots, arg_slots=arg_slots, arg_varying=((),) * len(arg_slots),
                result_slots=result_slots, result_varying=((),) * len(result_slots), steps=tuple(steps))


class Counted:
    """A kernel that counts its calls."""

    def __init__(self, function):
        self.function, self.calls = function, 0

    def __call__(self, *operands):
        self.calls += 1
        return self.function(*operands)


def test_steps_on_constants_alone_run_once_when_the_function_is_made():
    constant = Counted(lambda: (np.float32(2.0),))
    broadcast = Counted(lambda value: (np.broadcast_to(value, (4,)),))
    add = Counted(lambda x, y: (x + y,))
    plan = plan_of([KernelStep("constant", constant, (), (1,)),
                    KernelStep("broadcast_in_dim", broadcast, (1,), (2,)),
                    FreeStep((1,)),
                    KernelStep("add", add, (0, 2), (3,))], num_slots=4)
    run = compile_plan(plan)
    assert (constant.calls, broadcast.calls) == (1, 1)
    for offset in range(3):
        (result,) = run([np.arange(4, dtype=np.float32) + offset])
        np.testing.assert_array_equal(result, np.arange(4) + offset + 2)
    assert (constant.calls, broadcast.calls, add.calls) == (1, 1, 3)
    assert "step0" not in run.source and "step1" not in run.source and "step3(s0, folded2)" in run.source


def test_folded_buffers_are_read_only_and_a_folded_result_is_returned():
    plan = plan_of([KernelStep("iota", lambda: (np.arange(3),), (), (1,)),
                    KernelStep("mul", lambda value: (value * 2,), (1,), (2,))], num_slots=3)
    run = compile_plan(plan)
    (result,) = run([np.zeros(1)])
    np.testing.assert_array_equal(result, [0, 2, 4])
    assert not result.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        result[0] = 1


def test_a_step_that_raises_is_left_to_raise_at_each_call():
    def failing():
        raise FloatingPointError("no constant today")

    plan = plan_of([KernelStep("constant", failing, (), (1,)),
                    KernelStep("add", lambda x, y: (x + y,), (0, 1), (2,))], num_slots=3)
    run = compile_plan(plan)
    assert "step0()" in run.source
    for _ in range(2):
        with pytest.raises(FloatingPointError, match="no constant today"):
            run([np.zeros(1)])


def test_large_constants_and_steps_without_outputs_run_per_call():
    big = plan_constants.MAX_FOLDED_BYTES // 8 + 1
    seen = []
    plan = plan_of([KernelStep("iota", lambda: (np.arange(big, dtype=np.float64),), (), (1,)),
                    KernelStep("print", lambda: seen.append(1) or (), (), ()),
                    KernelStep("sum", lambda x, y: (x.sum() + y,), (1, 0), (2,))], num_slots=3)
    run = compile_plan(plan)
    assert "step0()" in run.source and "step1()" in run.source
    run([np.float64(1)])
    run([np.float64(1)])
    assert len(seen) == 2


def test_folded_slots_reach_steps_the_executor_runs():
    # a branch step (which the generated function hands to run_step) reads a folded index
    def branch(factor) -> Plan:
        return plan_of([KernelStep("mul", lambda x: (x * factor,), (0,), (1,))], num_slots=2)

    plan = plan_of([KernelStep("constant", lambda: (np.int32(1),), (), (1,)),
                    CondStep((branch(2), branch(3)), index=1, inputs=(0,), outputs=(2,))], num_slots=3)
    run = compile_plan(plan)
    # NOTE: run_step takes the slot list, which starts with the folded buffers in it
    assert "step0()" not in run.source and "run_step(step1, slots" in run.source
    assert "slots = initial_slots.copy()" in run.source
    (result,) = run([np.arange(3.0)])
    np.testing.assert_array_equal(result, [0, 3, 6])


@pytest.mark.parametrize("runner", ["generated", "interpreted"])
def test_floating_point_warnings_are_off_during_a_plan_and_restored_after(runner):
    def overflow(x):
        assert np.geterr()["over"] == "ignore"
        return (x * np.float32(1e30),)

    def fail(x):
        raise RuntimeError("kernel failed")

    before = np.geterr()
    plan = plan_of([KernelStep("mul", overflow, (0,), (1,))], num_slots=2)
    run = compile_plan(plan) if runner == "generated" else (lambda arguments: run_plan(plan, arguments))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (result,) = run([np.full(2, 1e30, np.float32)])
    assert np.isinf(result).all() and np.geterr() == before
    failing = plan_of([KernelStep("fail", fail, (0,), (1,))], num_slots=2)
    run = compile_plan(failing) if runner == "generated" else (lambda arguments: run_plan(failing, arguments))
    with pytest.raises(RuntimeError, match="kernel failed"):
        run([np.zeros(1)])
    assert np.geterr() == before


def test_a_kernel_with_a_single_output_call_is_called_directly():
    kernel = Counted(lambda x, y: (np.add(x, y),))
    kernel.single_output = np.multiply  # what the function says its one output is
    plan = plan_of([KernelStep("mul", kernel, (0, 0), (1,))], num_slots=2)
    run = compile_plan(plan)
    assert "s1 = step0(s0, s0)" in run.source
    (result,) = run([np.arange(3.0)])
    np.testing.assert_array_equal(result, [0, 1, 4])
    assert kernel.calls == 0


def test_a_scan_body_runs_through_its_own_generated_function_with_the_interpreters_values():
    from meshjit.runtime.plan import ScanStep
    add = Counted(lambda carry, x: (carry + x,))
    double = Counted(lambda value: (value * 2,))
    # body: carry' = carry + x; y = 2 * carry'
    body = plan_of([KernelStep("add", add, (0, 1), (2,)), KernelStep("mul", double, (2,), (3,))],
                   num_slots=4, arg_slots=(0, 1), result_slots=(2, 3))
    scan = ScanStep(body=body, inputs=(0, 1), outputs=(2, 3), num_consts=0, num_carry=1, length=3,
                    reverse=False, lead=0, ys_types=(((2,), "<f8"),))
    plan = plan_of([scan], num_slots=4, arg_slots=(0, 1), result_slots=(2, 3))
    carry, xs = np.zeros(2), np.arange(6.0).reshape(3, 2)
    generated = compile_plan(plan)([carry, xs])
    assert "_generated" in body.__dict__ and add.calls == 3
    interpreted = run_plan(plan, [carry, xs])
    for made, expected in zip(generated, interpreted):
        np.testing.assert_array_equal(made, expected)
    np.testing.assert_array_equal(generated[1], 2 * np.cumsum(xs, axis=0))
    made = body.__dict__["_generated"]
    compile_plan(plan)([carry, xs])
    assert body.__dict__["_generated"] is made and add.calls == 9   # made once per plan


def test_a_plan_with_matmuls_holds_blas_to_one_thread_for_the_whole_call():
    from meshjit.runtime import threads
    seen = []

    def matmul(left, right):
        seen.append([library.num_threads for library in threads._BLAS.load()])
        return (threads.matmul(left, right),)

    plan = plan_of([KernelStep("dot_general", matmul, (0, 0), (1,)), KernelStep("dot_general", matmul, (1, 1), (2,))],
                   num_slots=3)
    run = compile_plan(plan)
    before = [library.num_threads for library in threads._BLAS.load()]
    (result,) = run([np.eye(3) * 2])
    np.testing.assert_array_equal(result, np.eye(3) * 16)
    assert "blas_enter()" in run.source and all(counts == [1] * len(before) for counts in seen)
    assert [library.num_threads for library in threads._BLAS.load()] == before
    assert "blas_enter" not in compile_plan(plan_of([KernelStep("add", lambda x: (x + 1,), (0,), (1,))], 2)).source
