"""Hoisting loop-invariant code out of loop bodies before lowering.

An op in a scan or while body whose operands are all loop-invariant (the loop's consts, or
results of other invariant ops) computes the same value on every trip: constants and their
broadcasts, partition offsets from axis_index, a collective on a const. Every IR op but an
effect (a debug callback, which must run on every trip) is pure, so it runs once before the loop instead, and its result enters the body as a new const. A cond's
branches are left alone (they run at most once). The body keeps the hoisted values' ids as its
new arguments, so nothing inside it is renamed.
"""

from __future__ import annotations

from meshjit.ir import Block, Op, Value
from meshjit.ir.ops import EFFECT_OPS


def hoist_loop_invariants(ops) -> list[Op]:
    """``ops`` with every scan and while preceded by the invariant ops of its body."""
    result: list[Op] = []
    for op in ops:
        if op.name in ("scan", "while"):
            hoisted, op = _hoist(op)
            result.extend(hoisted)
        result.append(op)
    return result


def _hoist(op: Op) -> tuple[list[Op], Op]:
    body = op.regions[-1]
    num_consts = op.attrs["num_consts"]
    outer = {arg.id: operand for arg, operand in zip(body.args[:num_consts], op.operands[:num_consts])}
    hoisted, kept, new_args, new_operands = [], [], [], []
    for inner in body.ops:
        if inner.regions or inner.name in EFFECT_OPS or not all(operand.id in outer for operand in inner.operands):
            kept.append(inner)
            continue
        results = tuple(Value.fresh(value.type, value.hint) for value in inner.results)
        hoisted.append(Op(inner.name, tuple(outer[operand.id] for operand in inner.operands), results,
                          inner.attrs, (), inner.shardings, inner.location))
        outer.update((value.id, fresh) for value, fresh in zip(inner.results, results))
        new_args.extend(inner.results)
        new_operands.extend(results)
    if not hoisted:
        return [], op
    regions = list(op.regions)
    regions[-1] = Block(body.args[:num_consts] + tuple(new_args) + body.args[num_consts:], tuple(kept),
                        body.returns)
    if op.name == "while":
        cond = op.regions[0]
        unused = tuple(Value.fresh(value.type) for value in new_args)
        regions[0] = Block(cond.args[:num_consts] + unused + cond.args[num_consts:], cond.ops, cond.returns)
    operands = op.operands[:num_consts] + tuple(new_operands) + op.operands[num_consts:]
    attrs = op.attrs.updated(num_consts=num_consts + len(new_operands))
    return hoisted, Op(op.name, operands, op.results, attrs, tuple(regions), op.shardings, op.location)
