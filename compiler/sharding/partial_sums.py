"""The partial-sum algebra: per op, which operands a pending reduction passes through.

A value with unreduced axes holds, on each device, one term of a reduction (a sum, max or min)
over the devices along those axes. An op may run on the terms instead of the reduced value when
the reduction commutes with it; its result is then pending too, and the reduction happens once,
where a consumer needs the value (DESIGN §6). Each rule states its algebra; ``pass_through``
checks an op's operands against its rule. An op without a rule reduces its operands first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from meshjit.ir import AxisRef, Op, TensorSharding
from meshjit.ir.dtypes import kind_of, to_numpy
from meshjit.ir.registry import Registry

SUM = {"sum": "sum"}
MAX = {"max": "max"}
MIN = {"min": "min"}
EVERY_REDUCTION = {"sum": "sum", "max": "max", "min": "min"}
COMBINES = ("all", "one", "some")


@dataclass(frozen=True)
class PartialRule:
    """How a pending reduction passes through one op.

    ``carriers``: the operands a pending reduction may ride in. ``combine``: ``"all"`` (every
    carrier is pending over the same axes), ``"one"`` (exactly one carrier is pending) or
    ``"some"`` (at least one is, all over the same axes). Every other operand must be free of
    the pending axes: the same on every device along them. ``reductions``: the carriers'
    reduction -> the result's; a reduction not listed is done before the op.
    """

    carriers: tuple[int, ...]
    combine: str
    reductions: Mapping[str, str]

    def __post_init__(self):
        if self.combine not in COMBINES:
            raise ValueError(f"combine must be one of {COMBINES}, got {self.combine!r}")


def reduce_first(op: Op) -> PartialRule | None:
    """The named default: an op without a rule needs its operands reduced before it runs."""
    return None


partial_sum_rules = Registry("partial-sum rule", default=reduce_first)


def float_result(op: Op) -> bool:
    """The op's result is a float: some algebra holds only for floats (integer terms truncate)."""
    return kind_of(to_numpy(op.result.type.dtype)) == "f"



@dataclass(frozen=True)
class PassThrough:
    """A pending reduction an op passes on: over ``axes`` with ``reduction``, carried by the
    operands ``operands``; the results are pending over the same axes with ``result_reduction``."""

    axes: tuple[AxisRef, ...]
    reduction: str
    result_reduction: str
    operands: tuple[int, ...]


def pass_through(op: Op, shardings: Sequence[TensorSharding], single_use: Sequence[bool]) -> PassThrough | None:
    """How ``op`` passes on its operands' pending reduction, or None when they must be reduced
    before it runs. ``single_use[i]`` says operand ``i`` has no other consumer: a pending value
    that another consumer reduces anyway is reduced once for all of them instead."""
    rule = partial_sum_rules[op.name](op)
    pending = [index for index, sharding in enumerate(shardings) if sharding.unreduced]
    if rule is None or not pending:
        return None
    if any(index not in rule.carriers or not single_use[index] for index in pending):
        return None
    first = shardings[pending[0]]
    if any(set(shardings[index].unreduced) != set(first.unreduced) or shardings[index].reduction != first.reduction
           for index in pending):
        return None
    if rule.combine == "all" and len(pending) != len(rule.carriers):
        return None
    if rule.combine == "one" and len(pending) != 1:
        return None
    result_reduction = rule.reductions.get(first.reduction)
    if result_reduction is None:
        return None
    return PassThrough(tuple(first.unreduced), first.reduction, result_reduction, tuple(pending))
