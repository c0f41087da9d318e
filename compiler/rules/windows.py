"""The compiler's rules for the windowed ops: a convolution's batch and output features pass
through, its input features are a reduction factor (partial sums when sharded) and its spatial
dims are permutation factors (halo exchange, ``compiler/window_partition.py``); window
reductions pass the dims their window does not span. Convolutions are bilinear: their
transposes are convolutions (JAX's formulas); window sums transpose into window sums of the
padded cotangent; window max/min take the tangent of the first extreme element of each window.
"""

from __future__ import annotations

import itertools

import numpy as np
from meshjit.ir import Op
from meshjit.ir.ops.windows import OPS, WINDOW_REDUCTIONS, dilated

from ..sharding.factor_rules import FactorRule, joined
from ..frontend import lax_ops as lax
from ..frontend.autodiff.evaluate import emit
from ..frontend.autodiff.jvp import linear_jvp
from ..tables import jvp_rules, transpose_rules
from ..frontend.autodiff.registries import LinearInput, add_tangents, full, scalar, single, type_of, zeros
from ..frontend.vmap.batching import unrolled
from ..sharding.partial_sums import SUM, PartialRule, partial_sum_rules
from ..partitioning.window_partition import partition_conv, partition_reduce_window, windowed_dims
from ..tables import (
    batching_rules,
    factor_rule,
    kernel_rules,
    partial_result_rules,
    partition_rules,
    sharding_rules,
)

# --- sharding ------------------------------------------------------------------------------------


@sharding_rules.register("conv_general_dilated")
def _conv(op: Op) -> FactorRule:
    lhs_spec, rhs_spec, out_spec = (op.attrs[name] for name in ("lhs_spec", "rhs_spec", "out_spec"))
    rank = len(lhs_spec)
    lhs, rhs, out = [""] * rank, [""] * rank, [""] * rank
    kinds = {}
    # NOTE: a batch split into batch groups, and features split into feature groups, keep whole
    if op.attrs["batch_group_count"] == 1:
        lhs[lhs_spec[0]] = out[out_spec[0]] = "n"
    else:
        lhs[lhs_spec[0]], out[out_spec[0]] = "gn", "gm"
    if op.attrs["feature_group_count"] == 1 and op.attrs["batch_group_count"] == 1:
        lhs[lhs_spec[1]] = rhs[rhs_spec[1]] = "c"
        rhs[rhs_spec[0]] = out[out_spec[1]] = "o"
        kinds["c"] = "reduction"
    else:
        lhs[lhs_spec[1]], rhs[rhs_spec[1]], rhs[rhs_spec[0]], out[out_spec[1]] = "gc", "gi", "go", "gp"
    kinds.update({name: "replication" for name in ("gn", "gm", "gc", "gi", "go", "gp")
                  if name in lhs + rhs + out})
    sizes = {}
    for index in range(rank - 2):
        lhs[lhs_spec[2 + index]] = out[out_spec[2 + index]] = f"s{index}"
        rhs[rhs_spec[2 + index]] = f"k{index}"
        kinds[f"s{index}"], kinds[f"k{index}"] = "permutation", "replication"
        sizes[f"s{index}"] = op.operands[0].type.shape[lhs_spec[2 + index]]
    return factor_rule(op, f"{joined(lhs)}, {joined(rhs)} -> {joined(out)}", kinds, sizes)


@sharding_rules.register(*WINDOW_REDUCTIONS)
def _reduce_window(op: Op) -> FactorRule:
    rank = op.operands[0].type.rank
    names = [f"d{dim}" for dim in range(rank)]
    windowed = windowed_dims(op)
    kinds = {names[dim]: "permutation" for dim in windowed}
    sizes = {names[dim]: op.operands[0].type.shape[dim] for dim in windowed}
    return factor_rule(op, f"{joined(names)}, [] -> {joined(names)}", kinds, sizes)


# --- autodiff ------------------------------------------------------------------------------------


@jvp_rules.register("conv_general_dilated")
def _conv_jvp(op, primals, tangents):
    (lhs, rhs), (tangent_lhs, tangent_rhs) = primals, tangents
    first = None if tangent_lhs is None else emit(op, [tangent_lhs, rhs])[0]
    second = None if tangent_rhs is None else emit(op, [lhs, tangent_rhs])[0]
    return emit(op, primals), [add_tangents(first, second)]


def _swap_first(spec) -> tuple[int, ...]:
    return (spec[1], spec[0]) + tuple(spec[2:])


def _split_dim(value, dim: int, parts: int):
    """``value`` with dim ``dim`` split into (parts, rest), parts major."""
    shape = type_of(value).shape
    return single("reshape", [value], {"new_sizes": shape[:dim] + (parts, shape[dim] // parts) + shape[dim + 1:]})


def _merge_dim(value, source: int, target: int):
    """Move dim ``source`` next to ``target`` (before it) and merge the two, ``source`` major."""
    shape = type_of(value).shape
    order = [dim for dim in range(len(shape)) if dim != source]
    order.insert(order.index(target), source)
    moved = single("transpose", [value], {"permutation": tuple(order)})
    moved_shape = type_of(moved).shape
    at = order.index(target) - 1
    merged = moved_shape[:at] + (moved_shape[at] * moved_shape[at + 1],) + moved_shape[at + 2:]
    return single("reshape", [moved], {"new_sizes": merged})


def _group_into(value, group_dim: int, into: int, groups: int):
    """Split ``group_dim`` into (groups, rest) and merge the groups into dim ``into``."""
    split = _split_dim(value, group_dim, groups)
    return _merge_dim(split, group_dim, into + (1 if into > group_dim else 0))


def _lhs_padding(attrs, lhs_spatial, rhs_spatial, out_spatial):
    pads = []
    for index, (size, kernel, out) in enumerate(zip(lhs_spatial, rhs_spatial, out_spatial)):
        lhs_size = dilated(size, attrs["lhs_dilation"][index])
        kernel_size = dilated(kernel, attrs["rhs_dilation"][index])
        out_size = dilated(out, attrs["window_strides"][index])
        before = kernel_size - attrs["padding"][index][0] - 1
        pads.append((before, lhs_size + kernel_size - 1 - out_size - before))
    return tuple(pads)


def _rhs_padding(attrs, lhs_spatial, rhs_spatial, out_spatial):
    pads = []
    for index, (size, kernel, out) in enumerate(zip(lhs_spatial, rhs_spatial, out_spatial)):
        lhs_size = dilated(size, attrs["lhs_dilation"][index])
        kernel_size = dilated(kernel, attrs["rhs_dilation"][index])
        out_size = dilated(out, attrs["window_strides"][index])
        low = attrs["padding"][index][0]
        pads.append((low, out_size - lhs_size + kernel_size - low - 1))
    return tuple(pads)


def _spatial(shape, spec):
    return [shape[dim] for dim in spec[2:]]


def _conv_transpose_lhs(op, cotangent, rhs, lhs_type):
    attrs = op.attrs
    lhs_spec, rhs_spec, out_spec = attrs["lhs_spec"], attrs["rhs_spec"], attrs["out_spec"]
    groups, batch_groups = attrs["feature_group_count"], attrs["batch_group_count"]
    rhs_shape = type_of(rhs).shape
    if groups > 1:
        rhs = _group_into(rhs, rhs_spec[0], rhs_spec[1], groups)
    elif batch_groups > 1:
        rhs = _group_into(rhs, rhs_spec[0], rhs_spec[1], batch_groups)
        groups = batch_groups
    padding = _lhs_padding(attrs, _spatial(lhs_type.shape, lhs_spec), _spatial(rhs_shape, rhs_spec),
                           _spatial(type_of(cotangent).shape, out_spec))
    flipped = single("rev", [rhs], {"dimensions": tuple(rhs_spec[2:])})
    result = single("conv_general_dilated", [cotangent, flipped], {
        "lhs_spec": out_spec, "rhs_spec": _swap_first(rhs_spec), "out_spec": lhs_spec,
        "window_strides": attrs["lhs_dilation"], "padding": padding, "lhs_dilation": attrs["window_strides"],
        "rhs_dilation": attrs["rhs_dilation"], "feature_group_count": groups, "batch_group_count": 1})
    if batch_groups > 1:
        result = _group_into(result, lhs_spec[1], lhs_spec[0], batch_groups)
    return result


def _conv_transpose_rhs(op, cotangent, lhs, rhs_type):
    attrs = op.attrs
    lhs_spec, rhs_spec, out_spec = attrs["lhs_spec"], attrs["rhs_spec"], attrs["out_spec"]
    groups, batch_groups = attrs["feature_group_count"], attrs["batch_group_count"]
    groups, batch_groups = (batch_groups, 1) if batch_groups > 1 else (1, groups)
    padding = _rhs_padding(attrs, _spatial(type_of(lhs).shape, lhs_spec), _spatial(rhs_type.shape, rhs_spec),
                           _spatial(type_of(cotangent).shape, out_spec))
    return single("conv_general_dilated", [lhs, cotangent], {
        "lhs_spec": _swap_first(lhs_spec), "rhs_spec": _swap_first(out_spec), "out_spec": _swap_first(rhs_spec),
        "window_strides": attrs["rhs_dilation"], "padding": padding, "lhs_dilation": attrs["lhs_dilation"],
        "rhs_dilation": attrs["window_strides"], "feature_group_count": groups, "batch_group_count": batch_groups})


@transpose_rules.register("conv_general_dilated")
def _conv_transpose(op, cotangents, operands):
    lhs, rhs = operands
    if isinstance(lhs, LinearInput) and isinstance(rhs, LinearInput):
        raise AssertionError("autodiff internal error: a convolution of two tangents is not linear")
    cotangent = cotangents[0]
    if isinstance(lhs, LinearInput):
        return [_conv_transpose_lhs(op, cotangent, rhs, lhs.type), None]
    return [None, _conv_transpose_rhs(op, cotangent, lhs, rhs.type)]


jvp_rules.register("reduce_window_sum")(linear_jvp)


@transpose_rules.register("reduce_window_sum")
def _reduce_window_sum_transpose(op, cotangents, operands):
    """Each input element went into every window covering it: spread the cotangent back by a
    window sum over it, dilated by the strides and padded so that windows line up."""
    operand, init = operands
    attrs = op.attrs
    cotangent = cotangents[0]
    operand_type = type_of(operand)
    config = []
    for dim, size in enumerate(operand_type.shape):
        window = dilated(attrs["window_dimensions"][dim], attrs["window_dilation"][dim])
        before = window - attrs["padding"][dim][0] - 1
        out = dilated(type_of(cotangent).shape[dim], attrs["window_strides"][dim])
        after = dilated(size, attrs["base_dilation"][dim]) + window - 1 - out - before
        config.append((before, after, attrs["window_strides"][dim] - 1))
    padded = single("pad", [cotangent, scalar(0, operand_type.dtype)], {"padding_config": tuple(config)})
    rank = operand_type.rank
    spread = single("reduce_window_sum", [padded, scalar(0, operand_type.dtype)], {
        "window_dimensions": attrs["window_dimensions"], "window_strides": attrs["base_dilation"],
        "padding": ((0, 0),) * rank, "base_dilation": (1,) * rank, "window_dilation": attrs["window_dilation"]})
    init_cotangent = None
    if isinstance(init, LinearInput):
        # the init value enters every window once, and once more per padding element in it
        ones = full(operand_type, 1)
        real = single("reduce_window_sum", [ones, scalar(0, operand_type.dtype)], attrs)
        total = int(np.prod(attrs["window_dimensions"]))
        counts = lax.sub(full(type_of(real), total + 1), real)
        init_cotangent = single("reduce_sum", [lax.mul(cotangent, counts)], {"axes": tuple(range(rank))})
    return [spread if isinstance(operand, LinearInput) else None, init_cotangent]


def _window_views(op, value, fill):
    """Per window offset (row-major: the order XLA walks a window in), every output's element at
    that offset: a strided slice of the operand where the windows read it, padded with ``fill``
    where they read padding (slicing before padding keeps a sharded dim's shards aligned)."""
    attrs = op.attrs
    shape = type_of(value).shape
    out_shape = op.result.type.shape
    if any(step != 1 for step in attrs["base_dilation"]):
        return _padded_window_views(op, value, fill)
    views = []
    for offsets in itertools.product(*(range(window) for window in attrs["window_dimensions"])):
        starts, limits, strides, config = [], [], [], []
        for dim, (offset, size, count) in enumerate(zip(offsets, shape, out_shape)):
            stride, shift = attrs["window_strides"][dim], offset * attrs["window_dilation"][dim] - attrs["padding"][dim][0]
            first = min(max(-(-(-shift) // stride), 0), count)
            last = min(max((size - 1 - shift) // stride + 1, first), count) if size else first
            start = stride * first + shift if last > first else 0
            starts.append(start)
            limits.append(start + stride * (last - first - 1) + 1 if last > first else 0)
            strides.append(stride)
            config.append((first, count - last, 0))
        piece = single("slice", [value], {"start_indices": tuple(starts), "limit_indices": tuple(limits),
                                          "strides": tuple(strides)})
        if any(entry != (0, 0, 0) for entry in config):
            piece = single("pad", [piece, fill], {"padding_config": tuple(config)})
        views.append(piece)
    return views


def _padded_window_views(op, value, fill):
    """The views with base dilation: strided slices of the dilated, padded operand."""
    attrs = op.attrs
    rank = type_of(value).rank
    config = tuple((low, high, attrs["base_dilation"][dim] - 1) for dim, (low, high) in enumerate(attrs["padding"]))
    padded = single("pad", [value, fill], {"padding_config": config})
    out_shape = op.result.type.shape
    views = []
    for offsets in itertools.product(*(range(window) for window in attrs["window_dimensions"])):
        starts = tuple(offset * attrs["window_dilation"][dim] for dim, offset in enumerate(offsets))
        limits = tuple(start + attrs["window_strides"][dim] * (count - 1) + 1 if count else start
                       for dim, (start, count) in enumerate(zip(starts, out_shape)))
        views.append(single("slice", [padded], {"start_indices": starts, "limit_indices": limits,
                                                "strides": tuple(attrs["window_strides"][:rank])}))
    return views


@jvp_rules.register("reduce_window_max", "reduce_window_min")
def _reduce_window_extreme_jvp(op, primals, tangents):
    """The tangent of the first element of each window that attains the extreme."""
    outputs = emit(op, primals)
    operand, init = primals
    tangent, init_tangent = tangents
    operand_type = type_of(operand)
    tangent = zeros(operand_type) if tangent is None else tangent
    init_tangent = scalar(0, operand_type.dtype) if init_tangent is None else init_tangent
    values = _window_views(op, operand, init)
    slopes = _window_views(op, tangent, init_tangent)
    result, taken = None, None
    for value, slope in zip(values, slopes):
        hit = lax.eq(value, outputs[0])
        first = hit if taken is None else lax.bitwise_and(hit, lax.bitwise_not(taken))
        taken = hit if taken is None else lax.bitwise_or(taken, hit)
        term = lax.select(first, slope, zeros(type_of(slope)))
        result = add_tangents(result, term)
    return outputs, [result]


# --- kernels and partitioning -------------------------------------------------------------------

partition_rules.register("conv_general_dilated")(partition_conv)
# NOTE: the kernels are imported when a program runs the op, so that Numba starts only then.
@kernel_rules.register("conv_general_dilated")
def _conv_kernel(op, lead: int):
    from ..lowering.index_kernels import conv_kernel

    return conv_kernel(op, lead)

@kernel_rules.register(*WINDOW_REDUCTIONS)
def _reduce_window_kernel(op, lead: int):
    from ..lowering.index_kernels import reduce_window_kernel

    return reduce_window_kernel(op, lead)

partition_rules.register(*WINDOW_REDUCTIONS)(partition_reduce_window)


# --- partial sums --------------------------------------------------------------------------------


@partial_sum_rules.register("conv_general_dilated")
def _conv_partial(op: Op) -> PartialRule:
    # a convolution is bilinear like a dot: linear in each operand separately, never in both
    return PartialRule((0, 1), "one", SUM)


# --- partial results -----------------------------------------------------------------------------

# a contracted feature or window dim split over devices leaves each a partial sum
partial_result_rules.register("conv_general_dilated")(lambda op: "sum")


# --- vmap ----------------------------------------------------------------------------------------

# NOTE: convolutions and windows batch by running once per example (vmap's generic rule); folding
# the batch into the convolution's batch dim would be the faster rule.
batching_rules.register(*OPS)(unrolled)
