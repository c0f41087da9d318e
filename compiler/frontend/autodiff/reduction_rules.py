"""JVP rules of the nonlinear reductions and scans, and of sort (with its transpose).

- reduce_max/min: the tangent averaged over the positions that attain the extreme (JAX's rule).
- reduce_prod: the tangent times the product of all other elements, from exclusive prefix and
  suffix products, so zeros in the operand are exact.
- cumprod/cummax/cummin: the JVP of a Hillis-Steele scan (log2(n) steps of combining each
  element with the one ``offset`` before it), exact with zeros and ties, as JAX differentiates
  its associative scan.
- sort: the tangents ride along as extra operands sorted by the same keys; the transpose
  sorts cotangents by the permutation to put every element back.
"""

from __future__ import annotations

from .. import lax_ops as lax
from ..trace import bind
from .elementwise_rules import _balanced_weight
from .evaluate import emit
from .registries import (
    LinearInput,
    full,
    jvp_rules,
    scalar,
    single,
    transpose_rules,
    type_of,
    zeros,
)


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


# --- sort ------------------------------------------------------------------------------------


@jvp_rules.register("sort")
def _sort(op, primals, tangents):
    outputs = emit(op, primals)
    keys = primals[: op.attrs["num_keys"]]
    moving = [index for index, tangent in enumerate(tangents) if tangent is not None]
    carried = emit(op, list(keys) + [tangents[index] for index in moving])[len(keys) :]
    output_tangents = [None] * len(primals)
    for index, tangent in zip(moving, carried):
        output_tangents[index] = tangent
    return outputs, output_tangents


@transpose_rules.register("sort")
def _sort_transpose(op, cotangents, operands):
    num_keys, dimension = op.attrs["num_keys"], op.attrs["dimension"]
    keys = operands[:num_keys]
    if any(isinstance(key, LinearInput) for key in keys):
        raise AssertionError("autodiff internal error: sort is linear in its non-key operands only")
    shape = type_of(keys[0]).shape
    positions = single("iota", [], {"dtype": "i32", "shape": shape, "dimension": dimension})
    attrs = {"dimension": dimension, "is_stable": True, "num_keys": num_keys}
    permutation = bind("sort", list(keys) + [positions], attrs)[-1]
    results = [None] * len(operands)
    back = {"dimension": dimension, "is_stable": True, "num_keys": 1}
    for index, (operand, cotangent) in enumerate(zip(operands, cotangents)):
        if index < num_keys or not isinstance(operand, LinearInput):
            continue
        cotangent = zeros(operand.type) if cotangent is None else cotangent
        # Sorting by the permutation sends element i back to position permutation[i].
        results[index] = bind("sort", [permutation, cotangent], back)[1]
    return results
