"""The compiler's rules for the reductions and cumulative scans: reduced dims are reduction
factors (argmax/argmin and the scanned dim need the whole dim); kernels are numpy reductions
over local dims; JVPs of max/min average over ties, of prod use prefix and suffix products.
"""

from __future__ import annotations

import numpy as np
from meshjit.ir import Op
from meshjit.ir.dtypes import to_numpy

from ..factor_rules import FactorRule, joined, letters
from ..frontend import lax_ops as lax
from ..frontend.autodiff.evaluate import emit
from ..frontend.autodiff.jvp import linear_jvp, no_tangent
from ..frontend.autodiff.registries import full, jvp_rules, scalar, single, transpose_rules, type_of
from .elementwise import _balanced_weight
from .registries import (
    factor_rule,
    kernel_rules,
    run_per_leading_position,
    sharding_rules,
    shifted_axes,
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
    names = letters(op.result.type.rank)
    return factor_rule(op, f"{joined(names)} -> {joined(names)}",
                 {names[op.attrs["axis"]]: "replication"})


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


def _identity(name: str, dtype: str):
    if name == "cumprod":
        return 1
    return float("-inf") if name == "cummax" else float("inf")


def _combine(name: str, value, tangent, earlier, earlier_tangent):
    """One scan step: ``value`` combined with the ``earlier`` element, and its tangent."""
    if name == "cumprod":
        combined = lax.mul(value, earlier)
        return combined, lax.add(lax.mul(tangent, earlier), lax.mul(value, earlier_tangent))
    combined = lax.max(value, earlier) if name == "cummax" else lax.min(value, earlier)
    first = lax.mul(tangent, _balanced_weight(value, combined, earlier))
    second = lax.mul(earlier_tangent, _balanced_weight(earlier, combined, value))
    return combined, lax.add(first, second)


@jvp_rules.register("cumprod", "cummax", "cummin")
def _scan(op, primals, tangents):
    outputs = emit(op, primals)
    axis, reverse = op.attrs["axis"], op.attrs["reverse"]
    value, value_type = primals[0], type_of(primals[0])
    tangent = tangents[0]
    fill = _identity(op.name, value_type.dtype)
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
