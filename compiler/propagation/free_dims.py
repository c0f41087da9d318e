"""After propagation: a contraction or reduction whose result is a function output the user left
unspecified, already split on some dim, and whose reduced factor is split over axes the result
does not use, takes those axes on a free result dim. The partitioner then reduce-scatters the
partial results into it, half the bytes of the all-reduce that a result left whole on those
axes needs (a batched matmul with batch and contracting dims split). A result nobody split
(the Megatron MLP's output) stays as propagation left it: splitting it is the user's call.
"""

from __future__ import annotations

import math

from meshjit.ir import Op

from ..sharding.provenance import Hop


def _reduced_axes(op: Op, rule, states) -> dict:
    """The axes the operands hold on dims made only of reduction factors, in order, each with
    the first operand holding it."""
    found = {}
    for value, dims in zip(op.operands, rule.operands):
        state = states.get(value.id)
        if state is None:
            continue
        for axes, factors in zip(state.dims, dims):
            if factors and all(rule.kinds[factor] == "reduction" for factor in factors):
                for axis in axes:
                    found.setdefault(axis, value.id)
    return found


def _free_dim(result, rule, mesh, group: int) -> int | None:
    """The largest open result dim of one pass factor whose shards still divide by ``group``."""
    best = None
    for dim, (factors, axes) in enumerate(zip(rule.results[0], result.dims)):
        if not result.open[dim] or len(factors) != 1 or rule.kinds[factors[0]] != "pass":
            continue
        shards = math.prod(axis.resolved_size(mesh) for axis in axes) * group
        if result.shape[dim] % shards == 0 and (best is None or result.shape[dim] > result.shape[best]):
            best = dim
    return best


STAGE = "after propagation: reduce-scatter onto a free dim"


def scatter_onto_free_dims(func, states, output_keys, rule_of, mesh, provenance) -> None:
    """Refine ``states`` in place (see the module docstring) for the ops whose one result is
    returned, once, to an output with no user sharding, and used by nothing else."""
    uses: dict[int, int] = {}
    for op in func.body.ops:
        for operand in op.operands:
            uses[operand.id] = uses.get(operand.id, 0) + 1
    for value, sharding in zip(func.returns, func.result_shardings):
        uses[value.id] = uses.get(value.id, 0) + (1 if sharding is None else 2)
    outputs = {value.id: key for value, key in zip(func.returns, output_keys)}
    for op in func.body.ops:
        if op.name not in ("dot_general", "reduce_sum") or len(op.results) != 1 or uses.get(op.result.id) != 1:
            continue
        result = states[op.result.id]
        if result.user or result.unreduced or not any(result.dims) or op.result.id not in outputs:
            continue
        rule = rule_of(op)
        used = {axis for axes in result.dims for axis in axes}
        holders = _reduced_axes(op, rule, states)
        axes = [axis for axis in holders if axis not in used and not axis.is_sub_axis and axis not in result.replicated]
        if not axes:
            continue
        dim = _free_dim(result, rule, mesh, math.prod(axis.resolved_size(mesh) for axis in axes))
        if dim is None:
            continue
        result.dims[dim] = result.dims[dim] + axes
        output = states[outputs[op.result.id]]
        output.dims[dim] = list(result.dims[dim])
        for axis in axes:
            source = states[holders[axis]]
            provenance.carry(source.key, result.key, axis, Hop(op.name, source.label, result.label, op.location, STAGE))
            provenance.carry(result.key, output.key, axis, Hop("return", result.label, output.label, None, STAGE))
