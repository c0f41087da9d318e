"""A plan's constant steps run once, when its function is made, not on every call.

A kernel step whose inputs are all constants (``constant`` and ``iota`` steps have none) gives
the same buffers on every call: scalar constants broadcast to an operand's shape, iotas and
what is computed from them alone. ``fold_constants`` runs those steps once and returns the
buffers by slot; the generated function starts each call from a slot list that already holds
them and skips the steps. Kernels are pure and never write into their inputs, so sharing the
buffers between calls is safe; they are made read-only so that a kernel that tried would fail
loudly. A step is left to run per call when it raises (the error then comes at the call, as
before), when it has no outputs, when its kernel says it runs on every call (``per_call``: a host
callback), or when a result is larger than ``MAX_FOLDED_BYTES`` (a
buffer kept for the program's lifetime must stay small; large values are not where the
per-call overhead is).
"""

from __future__ import annotations

import numpy as np

from .float_errors import quiet_float_errors, restore_float_errors
from .plan import KernelStep, Plan

MAX_FOLDED_BYTES = 1 << 16


def fold_constants(plan: Plan) -> dict[int, object]:
    """The buffers of the plan's constant steps, by slot (empty when it has none)."""
    folded: dict[int, object] = {}
    quiet = quiet_float_errors()
    try:
        for step in plan.steps:
            if (isinstance(step, KernelStep) and step.outputs and not getattr(step.function, "per_call", False)
                    and all(slot in folded for slot in step.inputs)):
                folded.update(_run_once(step, folded))
    finally:
        restore_float_errors(quiet)
    return folded


def _run_once(step: KernelStep, folded: dict) -> dict[int, object]:
    try:
        outputs = step.function(*(folded[slot] for slot in step.inputs))
    except Exception:  # noqa: BLE001 - the step then runs per call and raises there
        return {}
    if len(outputs) != len(step.outputs) or not all(_keepable(output) for output in outputs):
        return {}
    for output in outputs:
        if isinstance(output, np.ndarray):
            output.setflags(write=False)
    return dict(zip(step.outputs, outputs))


def _keepable(output) -> bool:
    if isinstance(output, np.generic):
        return True
    return isinstance(output, np.ndarray) and output.nbytes <= MAX_FOLDED_BYTES
