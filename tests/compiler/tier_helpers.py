"""What the tier tests share: a result's bits with NaNs made one, and the steps of a jitted
function that run on the first tier."""

from __future__ import annotations

import numpy as np

from meshjit.compiler.lowering import tiers


def bits(array: np.ndarray) -> bytes:
    """The array's bytes, every NaN as one canonical NaN: IEEE 754 leaves a NaN result's sign
    and payload open, and LLVM may rewrite ``-x + y`` as ``y - x``, which differ only there."""
    if np.issubdtype(array.dtype, np.floating):
        array = np.where(np.isnan(array), np.array(np.nan, array.dtype), array)
    return array.tobytes()


def tiered_steps(function, *arguments) -> list:
    """The TieredKernels among the top-level steps of ``function``'s plan for ``arguments``."""
    plan = function.lower(*arguments).compile().runtime_executable().plan
    return [step.function for step in plan.steps if isinstance(getattr(step, "function", None), tiers.TieredKernel)]
