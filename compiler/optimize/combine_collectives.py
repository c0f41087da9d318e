"""Chained all-reduces merge: ``all_reduce(all_reduce(v, A), B)`` is ``all_reduce(v, A + B)``.

Two ring all-reduces over groups of ``|A|`` and ``|B|`` devices send ``2(|A|-1)/|A| + 2(|B|-1)/|B|``
of the buffer per device; one over ``|A||B|`` devices sends ``2(|A||B|-1)/(|A||B|)``, always less.
Chains come from shard_map bodies that reduce over one axis and then another, and from reshards
that reduce part of a value's pending axes for one consumer and the rest for the next. The
inner all-reduce must have no other user, the same reduction, and axes disjoint from the outer
one's (reducing twice over one axis multiplies a sum by the axis size; one all-reduce would not).
"""

from __future__ import annotations

from dataclasses import replace

from meshjit.ir import Block, Module, Op

from .rewrite_util import definitions, use_counts, with_ops, with_regions


def _mergeable(inner: Op | None, outer: Op, uses: dict[int, int]) -> bool:
    if inner is None or outer.name != "all_reduce" or inner.name != "all_reduce":
        return False
    if uses[inner.result.id] != 1 or inner.attrs["reduction"] != outer.attrs["reduction"]:
        return False
    return not set(inner.attrs["axes"]) & set(outer.attrs["axes"])


def merge_chained_collectives(module: Module) -> Module:
    func = module.main
    defs, uses = definitions(func), use_counts(func)
    return with_ops(module, _merged(func.body.ops, defs, uses))


def _merged(source, defs: dict[int, Op], uses: dict[int, int]) -> list[Op]:
    """``source`` with chains merged; a region body is merged on its own (its all-reduces run
    on every trip, so a chain inside a loop body merges inside it)."""
    # NOTE: an op merged into its user is looked up here, so a chain of three merges into one
    merged: dict[int, Op] = {}
    ops = []
    for op in source:
        op = with_regions(op, lambda block: Block(block.args, tuple(_merged(block.ops, defs, uses)),
                                                  block.returns, block.arg_shardings))
        inner = merged.get(op.operands[0].id, defs.get(op.operands[0].id)) if op.operands else None
        if not _mergeable(inner, op, uses):
            ops.append(op)
            continue
        axes = tuple(inner.attrs["axes"]) + tuple(op.attrs["axes"])
        combined = replace(op, operands=inner.operands, attrs=op.attrs.updated(axes=axes))
        merged[op.result.id] = combined
        ops = [existing for existing in ops if all(result.id != inner.result.id for result in existing.results)]
        ops.append(combined)
    return ops
