"""Static cost estimates of a module: floating-point operations and bytes touched."""

from __future__ import annotations

import math

from meshjit.ir import Module, Op
from meshjit.ir.dtypes import to_numpy

_FREE = {"constant", "iota", "reshape", "sharding_constraint", "squeeze", "expand_dims",
         "axis_index", "partition_id", "pvary"}


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


# -- collectives: bytes each device sends under ring algorithms, and an alpha-beta time ---------
def value_bytes(value) -> int:
    return _bytes(value)


def all_reduce_bytes(local_bytes: float, group: int) -> float:
    """Ring all-reduce: a reduce-scatter then an all-gather, 2 (n-1)/n of the buffer."""
    return 2.0 * (group - 1) / group * local_bytes if group > 1 else 0.0


def all_gather_bytes(gathered_bytes: float, group: int) -> float:
    """Ring all-gather: each device forwards the (n-1) shards it does not own."""
    return (group - 1) / group * gathered_bytes if group > 1 else 0.0


def reduce_scatter_bytes(input_bytes: float, group: int) -> float:
    return (group - 1) / group * input_bytes if group > 1 else 0.0


def all_to_all_bytes(local_bytes: float, group: int) -> float:
    return (group - 1) / group * local_bytes if group > 1 else 0.0


def collective_bytes(kind: str, operand_bytes: float, result_bytes: float, group: int) -> float:
    """What each device sends for one collective of ``kind`` over a group of ``group`` devices."""
    if kind == "all_reduce":
        return all_reduce_bytes(operand_bytes, group)
    if kind == "all_gather":
        return all_gather_bytes(result_bytes, group)
    if kind == "reduce_scatter":
        return reduce_scatter_bytes(operand_bytes, group)
    if kind == "all_to_all":
        return all_to_all_bytes(operand_bytes, group)
    return float(operand_bytes) if kind == "collective_permute" else 0.0


def ring_steps(kind: str, group: int) -> int:
    """Messages in a row that one collective takes on a ring: an all-reduce is a reduce-scatter
    and an all-gather (n-1 each); a permute is one exchange."""
    if group <= 1:
        return 0
    if kind == "all_reduce":
        return 2 * (group - 1)
    return 1 if kind == "collective_permute" else group - 1


# NOTE: link parameters; a simulated CPU mesh has no real links, so these are the
# defaults of a typical accelerator interconnect and only rank strategies against each other.
DEFAULT_LATENCY_SECONDS = 5e-6
DEFAULT_BANDWIDTH_BYTES_PER_SECOND = 50e9


def alpha_beta_seconds(bytes_sent: float, steps: int, *, latency: float = DEFAULT_LATENCY_SECONDS,
                       bandwidth: float = DEFAULT_BANDWIDTH_BYTES_PER_SECOND) -> float:
    """Time for ``steps`` messages in a row carrying ``bytes_sent`` in all: alpha per message
    plus bytes over bandwidth."""
    return steps * latency + bytes_sent / bandwidth
