"""Shared plumbing for passes that rewrite the entry function's ops: use counts and renaming."""

from __future__ import annotations

from dataclasses import replace

from meshjit.ir import Block, Func, Module, Op, Value


def use_counts(func: Func) -> dict[int, int]:
    counts: dict[int, int] = {}
    for op in func.body.walk():
        for operand in op.operands:
            counts[operand.id] = counts.get(operand.id, 0) + 1
    for value in func.returns:
        counts[value.id] = counts.get(value.id, 0) + 1
    return counts


def definitions(func: Func) -> dict[int, Op]:
    return {result.id: op for op in func.body.walk() for result in op.results}


def with_regions(op: Op, rewrite) -> Op:
    """``op`` with ``rewrite`` (Block -> Block) applied to each of its regions: a pass runs on a
    control flow body as on the function, each region on its own (regions are isolated)."""
    if not op.regions:
        return op
    return replace(op, regions=tuple(rewrite(region) for region in op.regions))


def rename_operands(op: Op, renamed: dict[int, Value]) -> Op:
    if not any(operand.id in renamed for operand in op.operands):
        return op
    return replace(op, operands=tuple(renamed.get(operand.id, operand) for operand in op.operands))


def with_ops(module: Module, ops, renamed: dict[int, Value] | None = None) -> Module:
    """The module with the entry function's body ops replaced (and returns renamed)."""
    func = module.main
    renamed = renamed or {}
    returns = tuple(renamed.get(value.id, value) for value in func.returns)
    body = Block(func.body.args, tuple(ops), returns)
    new_func = replace(func, body=body)
    return replace(module, funcs=tuple(new_func if f is func else f for f in module.funcs))
