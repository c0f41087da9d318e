"""Common-subexpression elimination: identical ops on identical operands are computed once.

Every IR op is pure, so two ops with the same name, operands and attributes (and no regions)
always give the same results.
"""

from __future__ import annotations

from meshjit.ir import Module, Value

from .rewrite_util import rename_operands, with_ops


def eliminate_common_subexpressions(module: Module) -> Module:
    seen: dict[tuple, tuple[Value, ...]] = {}
    renamed: dict[int, Value] = {}
    ops = []
    for op in module.main.body.ops:
        op = rename_operands(op, renamed)
        if op.regions:
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
    return with_ops(module, ops, renamed)
