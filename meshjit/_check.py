"""Check mode for jitted calls (``jit(..., check=True)`` or the ``check_partitioning`` option):
run the call, run the unsharded program through the reference interpreter, and raise
PartitioningMismatchError naming the first op whose per-device values differ.

The comparison of modules lives in ``compiler/check.py``; this file is the glue that reads a
Compiled's program (``Compiled.program``) and Executable (``Compiled.runtime_executable()``).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from meshjit.compiler.check import (
    PartitioningMismatchError,
    describe_difference,
    device_name,
    differing_outputs,
    explain_mismatch,
    interpret_all,
    spmd_mesh,
    stacked_arguments,
    values_close,
)
from meshjit.compiler.analysis.collectives import COLLECTIVES
from meshjit.compiler.pipeline import PER_DEVICE
from meshjit.ir import interpret
from meshjit.ir.printer import name_values, op_lines
from meshjit.runtime.executor import run_plan, to_buffer
from meshjit.runtime.plan import CollectiveStep

__all__ = ["PartitioningMismatchError", "run_checked"]


def run_checked(compiled, leaves) -> list:
    """Run ``compiled`` on flat ``leaves`` and check its outputs against the reference
    interpreter on the unsharded program; returns the outputs (Arrays) when they agree."""
    executable = compiled.runtime_executable()
    program = compiled.program
    # NOTE: read the arguments before the run, which may donate (invalidate) them.
    arguments = executable.host_arguments(leaves)
    outputs = executable.run(leaves)
    expected = list(interpret(program.reference, *arguments))
    wrong = differing_outputs(expected, [np.asarray(output) for output in outputs])
    if not wrong:
        return outputs
    index = wrong[0]
    summary = (f"check_partitioning: output {index} differs from the unsharded reference "
               f"({describe_difference(expected[index], np.asarray(outputs[index]))}).")
    if program.partitioned is None:
        cause = "the program is not sharded, so its compiled kernels compute what the reference does not"
    else:
        optimisations = program.pipeline.of_stage(PER_DEVICE)
        cause = (explain_mismatch(program.propagated, arguments, expected, optimisations)
                 or _plan_diagnosis(program, executable, arguments))
    raise PartitioningMismatchError(f"{summary}\n{cause}")


def _plan_diagnosis(program, executable, arguments) -> str:
    """The per-device program is right under the interpreter, so the compiled Plan is not: name
    its first collective step whose result differs from the interpreter's, if one does."""
    module = program.partitioned
    plan = executable.plan
    collectives = [op for op in module.main.body.ops if op.name in COLLECTIVES]
    steps = [index for index, step in enumerate(plan.steps)
             if isinstance(step, CollectiveStep) and step.kind in COLLECTIVES]
    below = "the per-device program is right under the reference interpreter, so the fault is below the IR"
    if len(steps) != len(collectives):
        return f"{below} (lowering, the kernels or the runtime's collectives)"
    reference = interpret_all(module, stacked_arguments(module, arguments))
    names = name_values(module.main)
    mesh = spmd_mesh(module)
    for op, index in zip(collectives, steps):
        step = plan.steps[index]
        # NOTE: fresh argument buffers for every partial run, in case a step writes into one
        prefix = replace(plan, steps=plan.steps[:index + 1], result_slots=(step.output,))
        (buffer,) = run_plan(prefix, _plan_arguments(executable, arguments))
        stacked = _stack_buffer(buffer, plan.mesh_shape)
        bad = _first_bad_row(reference[op.result.id], stacked, mesh)
        if bad is not None:
            reason = program.collective_reasons.get(op.result.id, "no recorded reason")
            return (f"{below}: the first collective whose compiled result differs is\n"
                    f"    {op_lines(op, names)[0]}\n    (needed for: {reason})\n    {bad}")
    return f"{below}: every collective agrees, so a kernel step computes a different value"


def _plan_arguments(executable, arguments) -> list[np.ndarray]:
    """The Plan's argument buffers, laid out from the global host ``arguments``."""
    plan = executable.plan
    return [to_buffer(value, sharding, plan.mesh_shape, varying)
            for value, sharding, varying in zip(arguments, executable.arg_shardings, plan.arg_varying)]


def _stack_buffer(buffer: np.ndarray, mesh_shape) -> np.ndarray:
    """A Plan buffer (mesh-shaped leading dims, 1 where replicated) as one row per device."""
    lead = len(mesh_shape)
    local = buffer.shape[lead:]
    full = np.broadcast_to(buffer, tuple(mesh_shape) + local)
    return full.reshape((int(np.prod(mesh_shape, dtype=int)),) + local)


def _first_bad_row(expected: np.ndarray, actual: np.ndarray, mesh) -> str | None:
    for position in range(mesh.size):
        if not values_close(expected[position], actual[position]):
            return f"{device_name(mesh, position)}: {describe_difference(expected[position], actual[position])}"
    return None
