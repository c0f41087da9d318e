"""Common-subexpression elimination: identical ops on identical operands are computed once.

Every IR op but an effect (a debug callback) is pure, so two ops with the same name, operands and attributes (and no regions)
always give the same results. Each region body (a loop body, a branch) is a scope of its own:
its values are never visible outside it, and it sees no outer values.
"""

from __future__ import annotations

from meshjit.ir import Block, Module, Value
from meshjit.ir.ops import EFFECT_OPS

from .rewrite_util import rename_operands, with_ops, with_regions


def eliminate_common_subexpressions(module: Module) -> Module:
    ops, renamed = _unique_ops(module.main.body.ops)
    return with_ops(module, ops, renamed)


def _in_region(block: Block) -> Block:
    ops, renamed = _unique_ops(block.ops)
    returns = tuple(renamed.get(value.id, value) for value in block.returns)
    return Block(block.args, tuple(ops), returns, block.arg_shardings)


def _unique_ops(source) -> tuple[list, dict[int, Value]]:
    seen: dict[tuple, tuple[Value, ...]] = {}
    renamed: dict[int, Value] = {}
    ops = []
    for op in source:
        op = rename_operands(op, renamed)
        if op.regions:
            ops.append(with_regions(op, _in_region))
            continue
        if op.name in EFFECT_OPS:
            ops.append(op)
            continue
        key = (op.name, tuple(operand.id for operand in op.operands), op.attrs, op.shardings,
               tuple(result.type for result in op.results))
        previous = seen.get(key)
        if previous is None:
            seen[key] = op.results
            ops.append(op)
            continue
        renamed.update({result.id: earlier for result, earlier in zip(op.results, previous)})
    return ops, renamed
