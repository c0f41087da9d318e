"""Fusing ``all_reduce(dot_general(...))`` into one matmul for the in-process executor.

On simulated devices the partial products of a sharded contraction and their sum can be one
GEMM over the devices' shards laid side by side (kernels.reduced_contraction): the same
numbers, a bigger and faster BLAS call, and no partial results held in memory.
"""

from __future__ import annotations

from dataclasses import dataclass

from meshjit.ir import Op, Value

from .rules.dot import reduced_contraction


@dataclass
class ReducedContraction:
    """A dot_general and the all_reduce (sum) that consumes it, run as one step."""

    label: str
    operands: tuple[Value, ...]
    results: tuple[Value, ...]
    function: object


def fuse_contraction_reductions(ops, returns, axis_names, mesh_shape: tuple[int, ...]) -> list:
    lead = len(mesh_shape)
    uses: dict[int, int] = {}
    for op in ops:
        for operand in op.operands:
            uses[operand.id] = uses.get(operand.id, 0) + 1
    for value in returns:
        uses[value.id] = uses.get(value.id, 0) + 1
    producers = {op.result.id: op for op in ops if isinstance(op, Op) and op.name == "dot_general"}
    fused_dots = set()
    result = []
    for op in ops:
        dot = producers.get(op.operands[0].id) if isinstance(op, Op) and op.name == "all_reduce" else None
        if dot is None or uses.get(dot.result.id) != 1 or op.attrs["reduction"] != "sum":
            result.append(op)
            continue
        axes = tuple(axis_names.index(name) for name in op.attrs["axes"])
        function = reduced_contraction(dot, axes, lead, mesh_shape)
        result.append(ReducedContraction("dot_general+all_reduce", dot.operands, op.results, function))
        fused_dots.add(dot.result.id)
    # the dots now computed inside their reductions are dropped
    return [op for op in result if not (isinstance(op, Op) and op.name == "dot_general" and op.result.id in fused_dots)]
