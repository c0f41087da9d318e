"""Running the Plan's loop and branch steps (plan.py: ScanStep, WhileStep, CondStep) over their
nested plans. Carries pass from one trip to the next by reference (no copies); a scan's x slices
are views of the scanned buffers and its y slices are written in place into one preallocated
buffer each. A while predicate and a cond index are the same on every device, so any one
device's copy decides (across processes, each process decides the same way).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .plan import CondStep, Plan, ScanStep, WhileStep


def run(step, buffers: list, layout, run_steps: Callable) -> None:
    """Run one loop or branch step on the enclosing plan's ``buffers``."""
    if isinstance(step, ScanStep):
        results = _scan(step, [buffers[slot] for slot in step.inputs], layout, run_steps)
    elif isinstance(step, WhileStep):
        results = _while(step, [buffers[slot] for slot in step.inputs], layout, run_steps)
    elif isinstance(step, CondStep):
        index = _uniform_scalar(buffers[step.index], "cond index")
        branch = step.branches[min(max(int(index), 0), len(step.branches) - 1)]
        results = _call(branch, [buffers[slot] for slot in step.inputs], layout, run_steps)
    else:
        raise TypeError(f"the executor cannot run plan step {type(step).__name__}")
    for slot, value in zip(step.outputs, results):
        buffers[slot] = value


def _uniform_scalar(buffer: np.ndarray, what: str):
    flat = np.asarray(buffer).reshape(-1)
    if flat.size > 1 and np.any(flat != flat[0]):
        raise ValueError(f"the {what} differs between devices ({flat.tolist()}); control flow needs "
                         f"the same value on every device")
    return flat[0]


def _call(plan: Plan, arguments: list, layout, run_steps: Callable) -> list:
    buffers: list = [None] * plan.num_slots
    for slot, value in zip(plan.arg_slots, arguments):
        buffers[slot] = value
    run_steps(plan, buffers, layout)
    return [buffers[slot] for slot in plan.result_slots]


class _Stacked:
    """One scan output: the y slices written in place along the loop dim (after ``lead``)."""

    def __init__(self, length: int, lead: int, local_shape, dtype: str):
        self.length, self.lead = length, lead
        self.buffer = np.empty((1,) * lead + (length,) + tuple(local_shape), np.dtype(dtype))
        self.allocated = False

    def write(self, step: int, value: np.ndarray) -> None:
        lead_shape = value.shape[:self.lead]
        if not self.allocated or lead_shape != self.buffer.shape[:self.lead]:
            self._widen(lead_shape, value)
        self.buffer[(slice(None),) * self.lead + (step,)] = value

    def _widen(self, lead_shape, value: np.ndarray) -> None:
        """Allocate (or grow) the buffer's leading dims to cover a slice varying along more
        mesh axes than the slices before it."""
        old = self.buffer.shape[:self.lead]
        full = np.broadcast_shapes(old, lead_shape) if self.allocated else lead_shape
        grown = np.empty(tuple(full) + (self.length,) + value.shape[self.lead:], value.dtype)
        if self.allocated:
            grown[...] = self.buffer
        self.buffer, self.allocated = grown, True


def _scan(step: ScanStep, operands: list, layout, run_steps: Callable) -> list:
    consts = operands[:step.num_consts]
    carry = operands[step.num_consts:step.num_consts + step.num_carry]
    xs = operands[step.num_consts + step.num_carry:]
    ys = [_Stacked(step.length, step.lead, shape, dtype) for shape, dtype in step.ys_types]
    order = list(range(step.length - 1, -1, -1) if step.reverse else range(step.length))
    whole = step.length - step.length % step.unroll if step.unrolled is not None else 0
    if whole:
        carry = _trips(step, step.unrolled, step.unroll, consts, carry, xs, ys, order[:whole], layout, run_steps)
    carry = _trips(step, step.body, 1, consts, carry, xs, ys, order[whole:], layout, run_steps)
    return list(carry) + [stacked.buffer for stacked in ys]


def _trips(step: ScanStep, body: Plan, per_trip: int, consts, carry, xs, ys, indices, layout,
           run_steps: Callable) -> list:
    """Run ``body`` (``per_trip`` steps a trip) over the steps ``indices``, in that order."""
    buffers: list = [None] * body.num_slots
    const_slots = body.arg_slots[:step.num_consts]
    carry_slots = body.arg_slots[step.num_consts:step.num_consts + step.num_carry]
    x_slots = body.arg_slots[step.num_consts + step.num_carry:]
    carry_results = body.result_slots[:step.num_carry]
    y_results = body.result_slots[step.num_carry:]
    prefix = (slice(None),) * step.lead
    for start in range(0, len(indices), per_trip):
        trip = indices[start:start + per_trip]
        for slot, value in zip(const_slots, consts):
            buffers[slot] = value
        for slot, value in zip(carry_slots, carry):
            buffers[slot] = value
        for slot, (index, x) in zip(x_slots, ((index, x) for index in trip for x in xs)):
            buffers[slot] = x[prefix + (index,)]
        run_steps(body, buffers, layout)
        carry = [buffers[slot] for slot in carry_results]
        for slot, (index, stacked) in zip(y_results, ((index, stacked) for index in trip for stacked in ys)):
            stacked.write(index, buffers[slot])
    return carry


def _while(step: WhileStep, operands: list, layout, run_steps: Callable) -> list:
    consts, carry = operands[:step.num_consts], operands[step.num_consts:]
    while _uniform_scalar(_call(step.cond, consts + carry, layout, run_steps)[0], "while predicate"):
        carry = _call(step.body, consts + carry, layout, run_steps)
    return carry
