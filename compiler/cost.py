"""Static cost estimates of a module: floating-point operations and bytes touched."""

from __future__ import annotations

import math

from meshjit.ir import Module, Op
from meshjit.ir.dtypes import to_numpy

_FREE = {"constant", "iota", "reshape", "sharding_constraint", "squeeze", "expand_dims",
         "axis_index", "partition_id"}


def op_flops(op: Op) -> int:
    """Arithmetic operations one op performs (a multiply-add counts two)."""
    if op.name in _FREE:
        return 0
    if op.name == "dot_general":
        lhs = op.operands[0].type.shape
        contracting = op.attrs["contracting_dims"][0]
        return 2 * op.result.type.size * math.prod(lhs[dim] for dim in contracting)
    if op.name.startswith("reduce_") or op.name.startswith("cum") or op.name in ("argmax", "argmin"):
        return op.operands[0].type.size
    if op.name == "sort":
        size = op.operands[0].type.size
        length = op.operands[0].type.shape[op.attrs["dimension"]] if op.operands[0].type.shape else 1
        return size * max(1, math.ceil(math.log2(max(length, 2))))
    return sum(result.type.size for result in op.results)


def _bytes(value) -> int:
    return value.type.size * to_numpy(value.type.dtype).itemsize


def cost_analysis(module: Module) -> dict[str, float]:
    """``flops`` and ``bytes accessed`` (operands read plus results written) of the entry function."""
    flops = 0
    bytes_accessed = 0
    for op in module.main.body.walk():
        flops += op_flops(op)
        if op.name not in _FREE:
            bytes_accessed += sum(_bytes(value) for value in op.operands + op.results)
    return {"flops": float(flops), "bytes accessed": float(bytes_accessed)}
