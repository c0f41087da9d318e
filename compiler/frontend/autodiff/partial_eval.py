"""Partial evaluation of a block: splitting its ops into a known part (computed from no linear
input) and a linear part, with the residuals the linear part reads from the known part.

An op with regions whose JVP mixes primal and tangent values in one op (a scan carrying both,
a cond returning both) is split by its family's ``partial_eval_rules`` into a known op and a
linear op; ``dependence_rules`` say which of such an op's results depend on linear operands, so
that the analysis sees through nested control flow. Constants (ops computed from no input at
all, such as the zeros of a symbolic tangent) are recomputed by the linear part, not saved, and
so are broadcasts and reshapes of known values: the linear part reads their operand instead,
often far smaller (a layer norm's per-row statistics, not their broadcast to every element) or
already at hand (a scanned weight, not its broadcast saved on every step of the loop).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from meshjit.ir import Block, Op

from ...tables import MARKER_OPS, dependence_rules, partial_eval_rules


@dataclass
class SplitBlock:
    """``known_ops`` compute every known value; ``linear_ops`` (recomputed constants first)
    compute the linear ones from the linear arguments and ``residuals``, the known values they
    read; ``linear_ids`` are the ids of the linear values."""

    known_ops: list[Op]
    linear_ops: list[Op]
    residuals: list
    linear_ids: set[int]


def split_ops(ops: Sequence[Op], linear_ids: set[int]) -> tuple[list[Op], list[Op]]:
    """The known and linear ops of ``ops``, given the linear values so far (updated in place)."""
    known_ops, linear_ops = [], []
    for op in ops:
        flags = [operand.id in linear_ids for operand in op.operands]
        if not any(flags):
            known_ops.append(op)
            continue
        # NOTE: only an op with known results is split; one whose results are all linear (the
        # linear part of an earlier split) stays whole, its transpose handling what it recomputes.
        if op.name in partial_eval_rules and not all(dependence_rules[op.name](op, flags)):
            known_op, linear_op = partial_eval_rules[op.name](op, flags)
        else:
            known_op, linear_op = None, op
        if known_op is not None:
            known_ops.append(known_op)
        if linear_op is not None:
            linear_ops.append(linear_op)
            linear_ids.update(result.id for result in linear_op.results)
    return known_ops, linear_ops


# layout ops that copy or view their operand: recomputed by the linear part rather than saved
RECOMPUTED_LAYOUT = ("broadcast_in_dim", "reshape", "expand_dims", "squeeze")


def split_block(block: Block, linear: Sequence[bool], linear_returns) -> SplitBlock:
    """Split ``block`` whose arguments marked in ``linear`` are linear; ``linear_returns`` are
    the returned values the linear part must produce (known ones among them are residuals or
    recomputed constants and layout ops)."""
    linear_ids = {argument.id for argument, flag in zip(block.args, linear, strict=True) if flag}
    known_ops, linear_ops = split_ops(block.ops, linear_ids)
    recomputable = _constant_ops(known_ops) | {result.id: op for op in known_ops if op.name in RECOMPUTED_LAYOUT
                                               for result in op.results}
    recomputed = _needed(recomputable, linear_ops, linear_returns)
    residuals = _residuals(recomputed + linear_ops, linear_returns, linear_ids, recomputed)
    return SplitBlock(known_ops, recomputed + linear_ops, residuals, linear_ids)


def linear_values(block: Block, linear: Sequence[bool]) -> set[int]:
    """The ids of ``block``'s values that depend on its arguments marked in ``linear``."""
    linear_ids = {argument.id for argument, flag in zip(block.args, linear, strict=True) if flag}
    for op in block.ops:
        flags = [operand.id in linear_ids for operand in op.operands]
        if not any(flags):
            continue
        results = dependence_rules[op.name](op, flags)
        linear_ids.update(result.id for result, flag in zip(op.results, results) if flag)
    return linear_ids


def _constant_ops(known_ops: Sequence[Op]) -> dict[int, Op]:
    """The known ops computed from no input (by result id): cheaper to recompute than to save."""
    constant: dict[int, Op] = {}
    for op in known_ops:
        if op.regions or op.name in MARKER_OPS:
            continue
        if all(operand.id in constant for operand in op.operands):
            constant.update((result.id, op) for result in op.results)
    return constant


def _needed(constant_ops: dict[int, Op], linear_ops: Sequence[Op], returns) -> list[Op]:
    """The recomputable ops the linear part uses, directly or through others, in order."""
    wanted = [operand.id for op in linear_ops for operand in op.operands] + [
        value.id for value in returns
    ]
    chosen: dict[int, Op] = {}
    while wanted:
        op = constant_ops.get(wanted.pop())
        if op is None or id(op) in chosen:
            continue
        chosen[id(op)] = op
        wanted.extend(operand.id for operand in op.operands)
    order = {id(op): index for index, op in enumerate(dict.fromkeys(constant_ops.values()))}
    return sorted(chosen.values(), key=lambda op: order[id(op)])


def _residuals(linear_ops: Sequence[Op], returns, linear_ids: set[int], recomputed: Sequence[Op]) -> list:
    """The known values the linear part reads, in first-use order (what it recomputes
    excluded)."""
    local = {result.id for op in recomputed for result in op.results}
    residuals = {}
    for value in [operand for op in linear_ops for operand in op.operands] + list(returns):
        if value.id not in linear_ids and value.id not in local:
            residuals.setdefault(value.id, value)
    return list(residuals.values())
