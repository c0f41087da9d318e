"""Lowering the ops with regions: a scan or while becomes a loop step and a cond a branch
step, each over nested plans lowered from its regions (one plan per region, lowered once, so a
loop body's collectives run inside the loop on every trip and nothing is unrolled)."""

from __future__ import annotations

from collections.abc import Callable

from meshjit.ir import Block, Op
from meshjit.ir.dtypes import to_numpy
from meshjit.runtime.plan import CondStep, Plan, ScanStep, WhileStep


def lower_region_op(op: Op, inputs: tuple[int, ...], outputs: tuple[int, ...], lead: int,
                    region_plan: Callable[[Block], Plan]):
    """The plan step of a scan, while or cond op whose operands and results are in the slots
    ``inputs`` and ``outputs``; ``region_plan`` lowers one region to its nested plan."""
    if op.name == "scan":
        num_carry = op.attrs["num_carry"]
        ys_types = tuple((value.type.shape[1:], to_numpy(value.type.dtype).str)
                         for value in op.results[num_carry:])
        return ScanStep(region_plan(op.regions[0]), inputs, outputs, op.attrs["num_consts"],
                        num_carry, op.attrs["length"], op.attrs["reverse"], lead, ys_types)
    if op.name == "while":
        cond, body = (region_plan(region) for region in op.regions)
        return WhileStep(cond, body, inputs, outputs, op.attrs["num_consts"])
    if op.name == "cond":
        branches = tuple(region_plan(region) for region in op.regions)
        return CondStep(branches, inputs[0], inputs[1:], outputs)
    raise ValueError(f"lower: {op.name} has regions but is not a control flow op (scan, while, cond); "
                     f"a manual_computation is inlined by the partitioner before lowering")
