"""Dead-code elimination: ops none of whose results reach a returned value are dropped, in the
function and inside every region body (whose returned values are all live: they are the
region's results); an op with an effect (a debug callback, or a loop holding one) always
lives. A scan also loses the stacked results nobody reads, then the consts and
scanned operands its body no longer reads: reverse mode's backward loop often needs fewer of
the forward loop's saved residuals than partial evaluation planned for (a tangent that a
stop_gradient drops), and those go with the loop computing them."""

from __future__ import annotations

from dataclasses import replace

from meshjit.ir import Block, Module, Op
from meshjit.ir.ops import has_effect

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
        if not any(result.id in live for result in op.results) and not has_effect(op):
            continue
        kept.append(_pruned_scan(op, live) if op.name == "scan" else with_regions(op, _in_region))
        live.update(operand.id for operand in kept[-1].operands)
    return list(reversed(kept))


def _pruned_scan(op: Op, live: set[int]) -> Op:
    """``op`` (a scan) without its dead stacked results, its body's dead code, and the consts
    and scanned operands the rest of the body does not read. Carries stay."""
    consts, carries = op.attrs["num_consts"], op.attrs["num_carry"]
    body = op.regions[0]
    kept_ys = [index for index in range(carries, len(op.results)) if op.results[index].id in live]
    returns = body.returns[:carries] + tuple(body.returns[index] for index in kept_ys)
    body_ops = _live_ops(body.ops, returns)
    read = {operand.id for body_op in body_ops for operand in body_op.operands} | {value.id for value in returns}
    kept_args = [index for index, arg in enumerate(body.args)
                 if consts <= index < consts + carries or arg.id in read]
    kept_results = list(range(carries)) + kept_ys

    def pick(items, indices):
        return tuple(items[index] for index in indices) if items else items

    new_body = Block(pick(body.args, kept_args), tuple(body_ops), returns, pick(body.arg_shardings, kept_args))
    attrs = op.attrs.updated(num_consts=sum(1 for index in kept_args if index < consts))
    return replace(op, operands=pick(op.operands, kept_args), results=pick(op.results, kept_results),
                   attrs=attrs, regions=(new_body,), shardings=pick(op.shardings, kept_results))
