"""How each op is partitioned: which factors may stay sharded, and how its attrs become local.

The default rule is factor-local: every factor keeps the axes the result is sharded on, so the
op runs unchanged on each device's shards. The tables below name what differs per op. Uneven
shards need no table: padding stays at the end of its own dim, so a factor may split unevenly
wherever it is a dim of its own (factor_choice.py), and reductions mask it (partition.py).
"""

from __future__ import annotations

import numpy as np
from meshjit.ir import Op
from meshjit.ir.dtypes import to_numpy

# reduction factors whose partial results combine with these all_reduce reductions
PARTIAL_REDUCTION = {"reduce_sum": "sum", "reduce_max": "max", "reduce_min": "min", "dot_general": "sum",
                     "conv_general_dilated": "sum"}


def identity(reduction: str, dtype: str):
    """The value that leaves ``reduction`` unchanged in ``dtype``, used to mask the padding of
    uneven shards: 0 for sums, the lowest value for max and the highest for min."""
    if reduction == "sum":
        return 0
    numpy_dtype = to_numpy(dtype)
    if numpy_dtype.kind == "f":
        return float("-inf") if reduction == "max" else float("inf")
    info = np.iinfo(numpy_dtype)
    return int(info.min) if reduction == "max" else int(info.max)


def _local_shape_attr(name: str):
    def rewrite(op: Op, local_result_shapes) -> dict:
        return {**op.attrs, name: tuple(local_result_shapes[0])}
    return rewrite


def _slice_attrs(op: Op, local_result_shapes) -> dict:
    attrs = dict(op.attrs)
    global_shape = op.result.type.shape
    local = local_result_shapes[0]
    attrs["limit_indices"] = tuple(
        local[dim] if local[dim] != global_shape[dim] else limit
        for dim, limit in enumerate(op.attrs["limit_indices"]))
    return attrs


def _dynamic_slice_attrs(op: Op, local_result_shapes) -> dict:
    return {**op.attrs, "slice_sizes": tuple(local_result_shapes[0])}


def _gather_attrs(op: Op, local_result_shapes) -> dict:
    """Operand dims a gather takes whole (offset dims) may be sharded: take the local extent."""
    attrs = dict(op.attrs)
    rank = op.operands[0].type.rank
    dropped = set(attrs["collapsed_slice_dims"]) | set(attrs["operand_batching_dims"])
    kept = [dim for dim in range(rank) if dim not in dropped]
    sizes = list(attrs["slice_sizes"])
    for dim, position in zip(kept, attrs["offset_dims"]):
        if sizes[dim] == op.operands[0].type.shape[dim]:
            sizes[dim] = local_result_shapes[0][position]
    attrs["slice_sizes"] = tuple(sizes)
    return attrs


LOCAL_ATTRS = {
    "gather": _gather_attrs,
    "broadcast_in_dim": _local_shape_attr("shape"),
    "reshape": _local_shape_attr("new_sizes"),
    "iota": _local_shape_attr("shape"),
    "slice": _slice_attrs,
    "dynamic_slice": _dynamic_slice_attrs,
}


def local_attrs(op: Op, local_result_shapes) -> dict:
    rewrite = LOCAL_ATTRS.get(op.name)
    return dict(op.attrs) if rewrite is None else rewrite(op, local_result_shapes)
