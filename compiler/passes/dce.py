"""Dead-code elimination: ops none of whose results reach a returned value are dropped."""

from __future__ import annotations

from meshjit.ir import Module

from .rewrite_util import with_ops


def eliminate_dead_code(module: Module) -> Module:
    func = module.main
    live = {value.id for value in func.returns}
    kept = []
    for op in reversed(func.body.ops):
        if not any(result.id in live for result in op.results):
            continue
        kept.append(op)
        live.update(operand.id for operand in op.operands)
        for region in op.regions:
            live.update(value.id for inner in region.walk() for value in inner.operands)
    return with_ops(module, reversed(kept))
