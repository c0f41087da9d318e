"""Lowering the ops with regions: a scan or while becomes a loop step and a cond a branch
step, each over nested plans lowered from its regions (one plan per region, lowered once, so a
loop body's collectives run inside the loop on every trip).

A scan's ``unroll = k`` (k > 1) also gets a second body plan: k copies of the body chained
into one straight-line plan, which takes k consecutive x slices and gives k y slices, so the
loop makes ``length // k`` trips over it (its elementwise ops may fuse across the copies) and
the remaining ``length % k`` steps over the plain body, as XLA unrolls a while loop."""

from __future__ import annotations

from collections.abc import Callable

from meshjit.ir import Block, Op, Value
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
        unroll = min(op.attrs["unroll"], op.attrs["length"])
        unrolled = (region_plan(_chained(op.regions[0], unroll, op.attrs["num_consts"], num_carry))
                    if unroll > 1 else None)
        return ScanStep(region_plan(op.regions[0]), inputs, outputs, op.attrs["num_consts"],
                        num_carry, op.attrs["length"], op.attrs["reverse"], lead, ys_types,
                        unroll if unrolled is not None else 1, unrolled)
    if op.name == "while":
        cond, body = (region_plan(region) for region in op.regions)
        return WhileStep(cond, body, inputs, outputs, op.attrs["num_consts"])
    if op.name == "cond":
        branches = tuple(region_plan(region) for region in op.regions)
        return CondStep(branches, inputs[0], inputs[1:], outputs)
    raise ValueError(f"lower: {op.name} has regions but is not a control flow op (scan, while, cond); "
                     f"a manual_computation is inlined by the partitioner before lowering")


def _chained(body: Block, copies: int, num_consts: int, num_carry: int) -> Block:
    """``copies`` steps of a scan body in one block: (consts, carries, the x slices of step 0,
    of step 1, ...) -> (carries, the y slices of step 0, of step 1, ...). Each copy's values
    are fresh; nested regions are shared (each is lowered to a plan of its own)."""
    consts = tuple(Value.fresh(arg.type) for arg in body.args[:num_consts])
    carry_args = tuple(Value.fresh(arg.type) for arg in body.args[num_consts:num_consts + num_carry])
    x_args, ops, ys = [], [], []
    carry = list(carry_args)
    for _ in range(copies):
        slices = [Value.fresh(arg.type) for arg in body.args[num_consts + num_carry:]]
        x_args += slices
        mapping = {arg.id: value for arg, value in zip(body.args, list(consts) + carry + slices)}
        for op in body.ops:
            results = tuple(Value.fresh(value.type) for value in op.results)
            ops.append(Op(op.name, tuple(mapping[operand.id] for operand in op.operands), results, op.attrs,
                          op.regions, op.shardings, op.location))
            mapping.update((value.id, fresh) for value, fresh in zip(op.results, results))
        carry = [mapping[value.id] for value in body.returns[:num_carry]]
        ys += [mapping[value.id] for value in body.returns[num_carry:]]
    return Block(consts + carry_args + tuple(x_args), tuple(ops), tuple(carry + ys))
