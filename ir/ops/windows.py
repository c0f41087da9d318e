"""The windowed ops: ``conv_general_dilated`` and the window reductions ``reduce_window_sum``,
``reduce_window_max`` and ``reduce_window_min``, whose every output element reads a window of
the input (XLA's Convolution and ReduceWindow).

A convolution's ``lhs_spec``, ``rhs_spec`` and ``out_spec`` name, per operand, the batch (or
output feature) dim, the feature (or input feature) dim, then the spatial dims in order. The
input is dilated (``lhs_dilation``, zeros between elements), padded (``padding``, pairs that
may be negative), and the kernel, dilated by ``rhs_dilation``, slides over it in steps of
``window_strides``. ``feature_group_count`` splits the input features into groups, each with
its own output features; ``batch_group_count`` does the same with the batch. A window
reduction pads with its init value and starts every window's reduction from it.
"""

from __future__ import annotations

import itertools

import numpy as np

from ..reference import reference_impls
from ..shape_rules import (
    NUMERIC,
    expect_dtype,
    expect_operand_count,
    fail,
    int_attr,
    ints_attr,
    is_int,
    required_attr,
    shape_rules,
)
from ..types import TensorType
from ..dtypes import kind_of

OPS = ("conv_general_dilated", "reduce_window_sum", "reduce_window_max", "reduce_window_min")
WINDOW_REDUCTIONS = OPS[1:]


def pairs_attr(op: str, attrs, name: str, count: int) -> tuple[tuple[int, int], ...]:
    value = required_attr(op, attrs, name)
    if not isinstance(value, tuple) or not all(
            isinstance(pair, tuple) and len(pair) == 2 and all(is_int(n) for n in pair) for pair in value):
        fail(op, f"attribute {name!r} must be a tuple of (low, high) int pairs, got {value!r}")
    if len(value) != count:
        fail(op, f"{name} {value} must have {count} entries, one per spatial dim")
    return value


def _per_dim(op: str, attrs, name: str, count: int, minimum: int = 1) -> tuple[int, ...]:
    values = ints_attr(op, attrs, name, minimum=minimum)
    if len(values) != count:
        fail(op, f"{name} {values} must have {count} entries, one per spatial dim")
    return values


def dilated(size: int, dilation: int) -> int:
    return 0 if size == 0 else (size - 1) * dilation + 1


def window_count(size: int, window: int, stride: int) -> int:
    """How many windows of ``window`` fit in ``size`` in steps of ``stride``."""
    return max((size - window) // stride + 1, 0) if size >= window else 0


def _spec(op: str, attrs, name: str, rank: int) -> tuple[int, ...]:
    spec = ints_attr(op, attrs, name)
    if sorted(spec) != list(range(rank)):
        fail(op, f"{name} {spec} must be a permutation of the {rank} dims")
    return spec


@shape_rules.register("conv_general_dilated")
def _conv(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 2)
    lhs, rhs = operands
    expect_dtype(op, "lhs", lhs, NUMERIC)
    if rhs.dtype != lhs.dtype:
        fail(op, f"rhs {rhs} must have the dtype of lhs {lhs}")
    if lhs.rank != rhs.rank or lhs.rank < 2:
        fail(op, f"lhs {lhs} and rhs {rhs} need one rank of at least 2")
    rank, spatial = lhs.rank, lhs.rank - 2
    lhs_spec, rhs_spec, out_spec = (_spec(op, attrs, name, rank) for name in ("lhs_spec", "rhs_spec", "out_spec"))
    strides = _per_dim(op, attrs, "window_strides", spatial)
    lhs_dilation = _per_dim(op, attrs, "lhs_dilation", spatial)
    rhs_dilation = _per_dim(op, attrs, "rhs_dilation", spatial)
    padding = pairs_attr(op, attrs, "padding", spatial)
    groups, batch_groups = int_attr(op, attrs, "feature_group_count"), int_attr(op, attrs, "batch_group_count")
    if groups < 1 or batch_groups < 1 or (groups > 1 and batch_groups > 1):
        fail(op, f"feature_group_count {groups} and batch_group_count {batch_groups} must be >= 1, one of them 1")
    batch, features = lhs.shape[lhs_spec[0]], lhs.shape[lhs_spec[1]]
    out_features, in_features = rhs.shape[rhs_spec[0]], rhs.shape[rhs_spec[1]]
    if features != in_features * groups:
        fail(op, f"lhs feature dim {features} must be rhs input features {in_features} x feature_group_count "
                 f"{groups}")
    if out_features % groups or out_features % batch_groups or batch % batch_groups:
        fail(op, f"rhs output features {out_features} and lhs batch {batch} must divide by the group counts "
                 f"({groups}, {batch_groups})")
    sizes = []
    for dim in range(spatial):
        size = dilated(lhs.shape[lhs_spec[2 + dim]], lhs_dilation[dim]) + sum(padding[dim])
        kernel = dilated(rhs.shape[rhs_spec[2 + dim]], rhs_dilation[dim])
        if size < 0:
            fail(op, f"spatial dim {dim}: padding {padding[dim]} leaves a negative size")
        sizes.append(window_count(size, kernel, strides[dim]))
    shape = [0] * rank
    shape[out_spec[0]], shape[out_spec[1]] = batch // batch_groups, out_features
    for dim, size in enumerate(sizes):
        shape[out_spec[2 + dim]] = size
    return (TensorType(tuple(shape), lhs.dtype),)


@shape_rules.register(*WINDOW_REDUCTIONS)
def _reduce_window(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 2)
    operand, init = operands
    expect_dtype(op, "operand", operand, NUMERIC)
    if init != TensorType((), operand.dtype):
        fail(op, f"init value must be {operand.dtype}[], got {init}")
    rank = operand.rank
    window = _per_dim(op, attrs, "window_dimensions", rank, minimum=0)
    strides = _per_dim(op, attrs, "window_strides", rank)
    base_dilation = _per_dim(op, attrs, "base_dilation", rank)
    window_dilation = _per_dim(op, attrs, "window_dilation", rank)
    padding = pairs_attr(op, attrs, "padding", rank)
    shape = []
    for dim, size in enumerate(operand.shape):
        padded = dilated(size, base_dilation[dim]) + sum(padding[dim])
        if padded < 0:
            fail(op, f"dim {dim}: padding {padding[dim]} leaves a negative size")
        shape.append(window_count(padded, dilated(window[dim], window_dilation[dim]), strides[dim]))
    return (operand.with_shape(shape),)


# --- reference implementations ------------------------------------------------------------


def dilate_and_pad(array: np.ndarray, dims, dilation, padding, fill) -> np.ndarray:
    """``array`` with ``dilation - 1`` fill values between elements and ``padding`` (pairs,
    negative crops) along ``dims``."""
    shape = list(array.shape)
    for dim, step in zip(dims, dilation):
        shape[dim] = dilated(shape[dim], step)
    spread = np.full(shape, fill, array.dtype)
    spread[tuple(slice(None, None, dilation[dims.index(d)]) if d in dims else slice(None)
                 for d in range(array.ndim))] = array
    padded_shape = list(shape)
    for dim, (low, high) in zip(dims, padding):
        padded_shape[dim] = shape[dim] + low + high
    result = np.full(padded_shape, fill, array.dtype)
    source, target = [slice(None)] * array.ndim, [slice(None)] * array.ndim
    for dim, (low, _) in zip(dims, padding):
        start, stop = max(0, -low), max(min(shape[dim], padded_shape[dim] - low), max(0, -low))
        source[dim], target[dim] = slice(start, stop), slice(start + low, stop + low)
    result[tuple(target)] = spread[tuple(source)]
    return result


def window_slices(dims, offsets, window_dilation, strides, counts, rank):
    """The strided slice picking, for every output position, the window element at ``offsets``."""
    index = [slice(None)] * rank
    for dim, offset, dilation, stride, count in zip(dims, offsets, window_dilation, strides, counts):
        start = offset * dilation
        index[dim] = slice(start, start + stride * (count - 1) + 1 if count else start, stride)
    return tuple(index)


@reference_impls.register("conv_general_dilated")
def _conv(attrs, lhs, rhs):
    rank = lhs.ndim
    spatial = list(range(2, rank))
    x = np.transpose(lhs, attrs["lhs_spec"])
    w = np.transpose(rhs, attrs["rhs_spec"])
    x = dilate_and_pad(x, spatial, attrs["lhs_dilation"], attrs["padding"], 0)
    kernel = w.shape[2:]
    counts = [window_count(x.shape[dim], dilated(k, d), s)
              for dim, k, d, s in zip(spatial, kernel, attrs["rhs_dilation"], attrs["window_strides"])]
    groups, batch_groups = attrs["feature_group_count"], attrs["batch_group_count"]
    batch, features, out_features = x.shape[0], x.shape[1], w.shape[0]
    accumulate = np.float64 if kind_of(lhs.dtype) == "f" else lhs.dtype
    if batch_groups > 1:
        x = x.reshape((batch_groups, batch // batch_groups, features) + x.shape[2:])
        w = w.reshape((batch_groups, out_features // batch_groups) + w.shape[1:])
        out = np.zeros((batch // batch_groups, batch_groups, out_features // batch_groups, *counts), accumulate)
        equation = "gnc...,goc->ngo..."
    else:
        x = x.reshape((batch, groups, features // groups) + x.shape[2:])
        w = w.reshape((groups, out_features // groups) + w.shape[1:])
        out = np.zeros((batch, groups, out_features // groups, *counts), accumulate)
        equation = "ngc...,goc->ngo..."
    with np.errstate(all="ignore"):
        for offsets in itertools.product(*(range(k) for k in kernel)):
            patch = x[(slice(None),) * 3 + window_slices(list(range(len(spatial))), offsets, attrs["rhs_dilation"],
                                                         attrs["window_strides"], counts, len(spatial))]
            taps = w[(slice(None),) * 3 + tuple(offsets)]
            out += np.einsum(equation, patch.astype(accumulate), taps.astype(accumulate))
    out = out.reshape((out.shape[0], out_features, *counts)).astype(lhs.dtype)
    return (np.transpose(out, np.argsort(attrs["out_spec"])).copy(),)


def _reduce_window_impl(name: str):
    combine = {"reduce_window_sum": np.add, "reduce_window_max": np.maximum, "reduce_window_min": np.minimum}[name]

    def impl(attrs, operand, init):
        dims = list(range(operand.ndim))
        padded = dilate_and_pad(operand, dims, attrs["base_dilation"], attrs["padding"], init)
        counts = [window_count(size, dilated(window, dilation), stride) for size, window, dilation, stride in
                  zip(padded.shape, attrs["window_dimensions"], attrs["window_dilation"], attrs["window_strides"])]
        result = np.full(counts, init, operand.dtype)
        with np.errstate(all="ignore"):
            for offsets in itertools.product(*(range(window) for window in attrs["window_dimensions"])):
                index = window_slices(dims, offsets, attrs["window_dilation"], attrs["window_strides"], counts,
                                      operand.ndim)
                result = combine(result, padded[index]).astype(operand.dtype)
        return (result,)

    return impl


for _name in WINDOW_REDUCTIONS:
    reference_impls.register(_name)(_reduce_window_impl(_name))
del _name
