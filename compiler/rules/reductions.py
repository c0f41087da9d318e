"""The compiler's rules for the reductions and cumulative scans: reduced dims are reduction
factors (argmax/argmin and the scanned dim need the whole dim); kernels are numpy reductions
over local dims; JVPs of max/min average over ties, of prod use prefix and suffix products.
"""

from __future__ import annotations

import numpy as np
from meshjit.ir import Op
from meshjit.ir.dtypes import to_numpy

from ..sharding.factor_rules import FactorRule, joined, letters
from ..sharding.factor_types import operand_type_text
from ..frontend import lax_ops as lax
from ..frontend.autodiff.evaluate import emit
from ..frontend.autodiff.jvp import linear_jvp, no_tangent
from ..tables import jvp_rules, transpose_rules
from ..frontend.autodiff.registries import full, scalar, single, type_of
from ..sharding.sharding_types import ShardingTypeError
from ..frontend.vmap.batching import shift_attrs
from ..sharding.partial_sums import MAX, MIN, SUM, PartialRule, partial_sum_rules
from ..partitioning.scan_partition import partition_cumulative, scan_identity
from .elementwise_autodiff import balanced_weight
from ..tables import (
    batching_rules,
    factor_rule,
    kernel_rules,
    partial_result_rules,
    partition_rules,
    run_per_leading_position,
    sharding_rules,
    sharding_type_rules,
    shifted_axes,
    typed,
    unreduced_not_implemented,
)

# --- sharding ------------------------------------------------------------------------------------


def _reduced(op: Op, axes, kind: str) -> FactorRule:
    rank = op.operands[0].type.rank
    names = letters(rank)
    kept = [names[dim] for dim in range(rank) if dim not in axes]
    return factor_rule(op, f"{joined(names)} -> {joined(kept)}", {names[dim]: kind for dim in axes})


@sharding_rules.register("reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and",
                         "reduce_or")
def _reduce(op: Op) -> FactorRule:
    return _reduced(op, set(op.attrs["axes"]), "reduction")


@sharding_rules.register("argmax", "argmin")
def _arg_reduce(op: Op) -> FactorRule:
    return _reduced(op, {op.attrs["axis"]}, "replication")


@sharding_rules.register("cumsum", "cumprod", "cummax", "cummin")
def _scan(op: Op) -> FactorRule:
    """The scanned dim is a permutation factor: its sharding flows between operand and result
    like a pass factor (``partition_cumulative`` scans a split dim where it lies, exchanging
    only the shards' totals), so nothing gathers a result no consumer needs whole."""
    names = letters(op.result.type.rank)
    return factor_rule(op, f"{joined(names)} -> {joined(names)}",
                 {names[op.attrs["axis"]]: "permutation"})


# --- sharding types (explicit mode) -------------------------------------------------------------
# A reduction over a split dim drops the dim's axes (the partitioner reduces over them); a
# pending sum passes through reduce_sum only. Scans need their scanned dim unsplit.


def _kept_dims(operand, axes) -> tuple:
    return tuple(dims for dim, dims in enumerate(operand.dims) if dim not in axes)


@sharding_type_rules.register("reduce_sum")
def _reduce_sum_type(op: Op, operands, mesh) -> list:
    (operand,) = operands
    return typed(mesh, [_kept_dims(operand, set(op.attrs["axes"]))], operand.unreduced, operand.reduced)


@sharding_type_rules.register("reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or")
def _reduce_type(op: Op, operands, mesh) -> list:
    unreduced_not_implemented(op, operands)
    (operand,) = operands
    return typed(mesh, [_kept_dims(operand, set(op.attrs["axes"]))], reduced=operand.reduced)


@sharding_type_rules.register("argmax", "argmin")
def _arg_reduce_type(op: Op, operands, mesh) -> list:
    unreduced_not_implemented(op, operands)
    (operand,) = operands
    return typed(mesh, [_kept_dims(operand, {op.attrs["axis"]})])


@sharding_type_rules.register("cumsum", "cumprod", "cummax", "cummin")
def _scan_type(op: Op, operands, mesh) -> list:
    unreduced_not_implemented(op, operands)
    (operand,) = operands
    axis = op.attrs["axis"]
    if operand.dims[axis]:
        raise ShardingTypeError(f"Input should be unsharded over the axis being reduced. Got input "
                                f"type={operand_type_text(op, 0, operand)} and axis={axis}")
    return typed(mesh, [operand.dims], reduced=operand.reduced)


# --- kernels -------------------------------------------------------------------------------------



_REDUCERS = {"reduce_sum": np.sum, "reduce_max": np.max, "reduce_min": np.min, "reduce_prod": np.prod,
             "reduce_and": np.all, "reduce_or": np.any}


@kernel_rules.register(*_REDUCERS)
def _reduce(op: Op, lead: int):
    reducer = _REDUCERS[op.name]
    axes = shifted_axes(op.attrs["axes"], lead)
    dtype = to_numpy(op.result.type.dtype)
    empty = op.operands[0].type.size == 0 and op.name in ("reduce_max", "reduce_min")
    if empty:
        return run_per_leading_position(op, lead)

    def run(operand):
        return (np.asarray(reducer(operand, axis=axes), dtype=dtype),)

    return run


# --- autodiff ------------------------------------------------------------------------------------

jvp_rules.register("argmax", "argmin", "reduce_and", "reduce_or")(no_tangent)


jvp_rules.register("reduce_sum", "cumsum")(linear_jvp)


@transpose_rules.register("reduce_sum")
def _reduce_sum_transpose(op, cotangents, operands):
    operand_type = type_of(operands[0])
    kept = tuple(dim for dim in range(operand_type.rank) if dim not in op.attrs["axes"])
    attrs = {"shape": operand_type.shape, "broadcast_dimensions": kept}
    return [single("broadcast_in_dim", [cotangents[0]], attrs)]


@transpose_rules.register("cumsum")
def _cumsum_transpose(op, cotangents, operands):
    attrs = {"axis": op.attrs["axis"], "reverse": not op.attrs["reverse"]}
    return [single("cumsum", [cotangents[0]], attrs)]


def _kept_shape_broadcast(value, operand_type, axes):
    kept = tuple(dim for dim in range(operand_type.rank) if dim not in axes)
    return single(
        "broadcast_in_dim", [value], {"shape": operand_type.shape, "broadcast_dimensions": kept}
    )


@jvp_rules.register("reduce_max", "reduce_min")
def _reduce_extreme(op, primals, tangents):
    outputs = emit(op, primals)
    operand_type, axes = type_of(primals[0]), op.attrs["axes"]
    attained = lax.eq(primals[0], _kept_shape_broadcast(outputs[0], operand_type, axes))
    weights = lax.convert_element_type(attained, operand_type.dtype)
    count = single("reduce_sum", [weights], {"axes": axes})
    chosen = single("reduce_sum", [lax.mul(tangents[0], weights)], {"axes": axes})
    return outputs, [lax.div(chosen, count)]


def _shift(value, offset: int, axis: int, reverse: bool, fill):
    """``value`` moved ``offset`` places along ``axis`` (towards the end, or the start when
    ``reverse``), the vacated places filled with ``fill``; a pad with one negative edge."""
    rank = type_of(value).rank
    edges = (-offset, offset) if reverse else (offset, -offset)
    config = tuple((edges[0], edges[1], 0) if dim == axis else (0, 0, 0) for dim in range(rank))
    return single("pad", [value, scalar(fill, type_of(value).dtype)], {"padding_config": config})




def _combine(name: str, value, tangent, earlier, earlier_tangent):
    """One scan step: ``value`` combined with the ``earlier`` element, and its tangent."""
    if name == "cumprod":
        combined = lax.mul(value, earlier)
        return combined, lax.add(lax.mul(tangent, earlier), lax.mul(value, earlier_tangent))
    combined = lax.max(value, earlier) if name == "cummax" else lax.min(value, earlier)
    first = lax.mul(tangent, balanced_weight(value, combined, earlier))
    second = lax.mul(earlier_tangent, balanced_weight(earlier, combined, value))
    return combined, lax.add(first, second)


@jvp_rules.register("cumprod", "cummax", "cummin")
def _scan(op, primals, tangents):
    outputs = emit(op, primals)
    axis, reverse = op.attrs["axis"], op.attrs["reverse"]
    value, value_type = primals[0], type_of(primals[0])
    tangent = tangents[0]
    fill = scan_identity(op.name, value_type.dtype)
    offset = 1
    while offset < value_type.shape[axis]:
        earlier = _shift(value, offset, axis, reverse, fill)
        earlier_tangent = _shift(tangent, offset, axis, reverse, 0)
        value, tangent = _combine(op.name, value, tangent, earlier, earlier_tangent)
        offset *= 2
    return outputs, [tangent]


@jvp_rules.register("reduce_prod")
def _reduce_prod(op, primals, tangents):
    outputs = emit(op, primals)
    others = _product_of_others(primals[0], op.attrs["axes"])
    return outputs, [
        single("reduce_sum", [lax.mul(tangents[0], others)], {"axes": op.attrs["axes"]})
    ]


def _product_of_others(operand, axes):
    """For every element, the product of the other elements of its reduction group."""
    operand_type = type_of(operand)
    if not axes:
        return full(operand_type, 1)
    kept = [dim for dim in range(operand_type.rank) if dim not in axes]
    order = tuple(kept) + tuple(axes)
    moved = single("transpose", [operand], {"permutation": order})
    kept_shape = tuple(operand_type.shape[dim] for dim in kept)
    group = 1
    for dim in axes:
        group *= operand_type.shape[dim]
    flat = single("reshape", [moved], {"new_sizes": kept_shape + (group,)})
    last = len(kept_shape)
    before = single("cumprod", [_shift(flat, 1, last, False, 1)], {"axis": last, "reverse": False})
    after = single("cumprod", [_shift(flat, 1, last, True, 1)], {"axis": last, "reverse": True})
    others = single("reshape", [lax.mul(before, after)], {"new_sizes": type_of(moved).shape})
    inverse = tuple(order.index(dim) for dim in range(operand_type.rank))
    return single("transpose", [others], {"permutation": inverse})


# --- sort ----------------------------------------------------------------------------------------


# --- partitioning ----------------------------------------------------------------------------

partition_rules.register("cumsum", "cumprod", "cummax", "cummin")(partition_cumulative)


# --- partial sums --------------------------------------------------------------------------------


@partial_sum_rules.register("reduce_sum")
def _reduce_sum(op: Op) -> PartialRule:
    # a sum of sums is one sum, in any order
    return PartialRule((0,), "one", SUM)


@partial_sum_rules.register("reduce_max", "reduce_min")
def _reduce_max_min(op: Op) -> PartialRule:
    return PartialRule((0,), "one", MAX if op.name == "reduce_max" else MIN)


# --- partial results -------------------------------------------------------------------------

# a reduce over a sharded dim leaves each device the reduction of its part: one more reduction
# of the same kind over the devices finishes it
partial_result_rules.register("reduce_sum")(lambda op: "sum")
partial_result_rules.register("reduce_max")(lambda op: "max")
partial_result_rules.register("reduce_min")(lambda op: "min")
# --- vmap: the batch dim leads, the reduced dims shift past it ------------------------------------

batching_rules.register("reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and",
                        "reduce_or")(shift_attrs("axes"))
batching_rules.register("argmax", "argmin", "cumsum", "cumprod", "cummax", "cummin")(shift_attrs("axis"))
