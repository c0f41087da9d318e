"""Dead-code elimination: ops none of whose results reach a returned value are dropped, in the
function and inside every region body (whose returned values are all live: they are the
region's results)."""

from __future__ import annotations

from meshjit.ir import Block, Module

from .rewrite_util import with_ops, with_regions


def eliminate_dead_code(module: Module) -> Module:
    func = module.main
    return with_ops(module, _live_ops(func.body.ops, func.returns))


def _in_region(block: Block) -> Block:
    return Block(block.args, tuple(_live_ops(block.ops, block.returns)), block.returns, block.arg_shardings)


def _live_ops(ops, returns) -> list:
    live = {value.id for value in returns}
    kept = []
    for op in reversed(ops):
        if not any(result.id in live for result in op.results):
            continue
        kept.append(with_regions(op, _in_region))
        live.update(operand.id for operand in op.operands)
    return list(reversed(kept))
