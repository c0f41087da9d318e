"""Running the Plan's loop and branch steps (plan.py: ScanStep, WhileStep, CondStep) over their
nested plans. Carries pass from one trip to the next by reference (no copies); a scan's x slices
are views of the scanned buffers and its y slices are written in place into one preallocated
buffer each. A while predicate and a cond index are the same on every device, so any one
device's copy decides (across processes, each process decides the same way).

A nested plan runs through ``call(plan, arguments, layout) -> results``: the executor's
interpreter (executor.call_plan) or the plan's own generated function (plan_function.py).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .plan import CondStep, Plan, ScanStep, WhileStep


def run(step, buffers: list, layout, call: Callable) -> None:
    """Run one loop or branch step on the enclosing plan's ``buffers``."""
    if isinstance(step, ScanStep):
        results = _scan(step, [buffers[slot] for slot in step.inputs], layout, call)
    elif isinstance(step, WhileStep):
        results = _while(step, [buffers[slot] for slot in step.inputs], layout, call)
    elif isinstance(step, CondStep):
        index = _uniform_scalar(buffers[step.index], "cond index")
        branch = step.branches[min(max(int(index), 0), len(step.branches) - 1)]
        results = call(branch, [buffers[slot] for slot in step.inputs], layout)
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


def _scan(step: ScanStep, operands: list, layout, call: Callable) -> list:
    consts = operands[:step.num_consts]
    carry = operands[step.num_consts:step.num_consts + step.num_carry]
    xs = operands[step.num_consts + step.num_carry:]
    ys = [_Stacked(step.length, step.lead, shape, dtype) for shape, dtype in step.ys_types]
    order = list(range(step.length - 1, -1, -1) if step.reverse else range(step.length))
    whole = step.length - step.length % step.unroll if step.unrolled is not None else 0
    if whole:
        carry = _trips(step, step.unrolled, step.unroll, consts, carry, xs, ys, order[:whole], layout, call)
    carry = _trips(step, step.body, 1, consts, carry, xs, ys, order[whole:], layout, call)
    return list(carry) + [stacked.buffer for stacked in ys]


def _trips(step: ScanStep, body: Plan, per_trip: int, consts, carry, xs, ys, indices, layout, call: Callable) -> list:
    """Run ``body`` (``per_trip`` steps a trip) over the steps ``indices``, in that order."""
    prefix = (slice(None),) * step.lead
    for start in range(0, len(indices), per_trip):
        trip = indices[start:start + per_trip]
        results = call(body, [*consts, *carry, *(x[prefix + (index,)] for index in trip for x in xs)], layout)
        carry = results[:step.num_carry]
        for value, (index, stacked) in zip(results[step.num_carry:], ((index, stacked) for index in trip for stacked in ys)):
            stacked.write(index, value)
    return carry


def _while(step: WhileStep, operands: list, layout, call: Callable) -> list:
    consts, carry = operands[:step.num_consts], operands[step.num_consts:]
    while _uniform_scalar(call(step.cond, consts + carry, layout)[0], "while predicate"):
        carry = call(step.body, consts + carry, layout)
    return carry
