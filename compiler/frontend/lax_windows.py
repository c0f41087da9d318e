"""jax.lax's convolutions and window reductions: ``conv_general_dilated`` (any dimension numbers,
strides, padding strings or pairs, dilations, feature and batch groups), ``conv``,
``conv_with_general_padding``, the dimension-number helpers, and ``reduce_window``, which
binds a window-reduction op for add, max and min and otherwise folds the computation over the
window's strided views.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

from meshjit.ir.ops.windows import dilated

from .precision import check_precision
from . import lax_ops as lax
from .operands import as_operand, dtype_of, is_python_scalar, shape_of
from .trace import bind

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "ConvDimensionNumbers",
    "conv",
    "conv_dimension_numbers",
    "conv_general_dilated",
    "conv_general_permutations",
    "conv_with_general_padding",
    "padtype_to_pads",
    "reduce_window",
)


class ConvDimensionNumbers(NamedTuple):
    """Per operand: the batch (or output feature) dim, the feature (or input feature) dim, then
    the spatial dims in order."""

    lhs_spec: tuple[int, ...]
    rhs_spec: tuple[int, ...]
    out_spec: tuple[int, ...]


def conv_general_permutations(dimension_numbers) -> tuple[tuple[int, ...], ...]:
    """The dim orders three layout strings (like ``("NHWC", "HWIO", "NHWC")``) stand for; the
    spatial dims follow their order in the kernel's string."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    if not all(isinstance(spec, str) for spec in dimension_numbers):
        raise TypeError(f"conv dimension_numbers must be three strings, got {dimension_numbers!r}")
    for spec, chars, what in ((lhs_spec, "NC", "lhs"), (rhs_spec, "OI", "rhs"), (out_spec, "NC", "out")):
        if any(spec.count(char) != 1 for char in chars) or len(set(spec)) != len(spec):
            raise TypeError(f"conv dimension_numbers: the {what} spec {spec!r} must name each of {chars!r} once "
                            f"and every dim once")
    if not len(lhs_spec) == len(rhs_spec) == len(out_spec):
        raise TypeError(f"conv dimension_numbers {dimension_numbers!r} must have one length")
    rhs_spatial = [char for char in rhs_spec if char not in "OI"]
    if sorted(rhs_spatial) != sorted(c for c in lhs_spec if c not in "NC") or \
            sorted(rhs_spatial) != sorted(c for c in out_spec if c not in "NC"):
        raise TypeError(f"conv dimension_numbers {dimension_numbers!r}: the spatial dims must be named alike")

    def order(spec: str, first: str, second: str) -> tuple[int, ...]:
        return (spec.index(first), spec.index(second)) + tuple(spec.index(char) for char in rhs_spatial)

    return order(lhs_spec, "N", "C"), order(rhs_spec, "O", "I"), order(out_spec, "N", "C")


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
    """ConvDimensionNumbers from None (NCHW / OIHW / NCHW), layout strings, or the tuple itself."""
    rank = len(lhs_shape)
    if len(rhs_shape) != rank:
        raise TypeError(f"convolution requires lhs and rhs of one rank, got {len(lhs_shape)} and {len(rhs_shape)}")
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return dimension_numbers
    if dimension_numbers is None:
        default = tuple(range(rank))
        return ConvDimensionNumbers(default, default, default)
    if isinstance(dimension_numbers, (tuple, list)) and len(dimension_numbers) == 3:
        if all(isinstance(spec, str) for spec in dimension_numbers):
            if any(len(spec) != rank for spec in dimension_numbers):
                raise TypeError(f"conv dimension_numbers {dimension_numbers!r} must have rank {rank}")
            return ConvDimensionNumbers(*conv_general_permutations(dimension_numbers))
        return ConvDimensionNumbers(*(tuple(int(dim) for dim in spec) for spec in dimension_numbers))
    raise TypeError(f"conv dimension_numbers must be None, a ConvDimensionNumbers or three layout strings, "
                    f"got {dimension_numbers!r}")


def padtype_to_pads(in_shape, window_shape, window_strides, padding: str) -> list[tuple[int, int]]:
    """(low, high) per dim for "VALID", "SAME" (extra at the end) or "SAME_LOWER"."""
    kind = padding.upper() if isinstance(padding, str) else padding
    if kind == "VALID":
        return [(0, 0)] * len(in_shape)
    if kind not in ("SAME", "SAME_LOWER"):
        raise ValueError(f"Unknown padding type: {padding}.")
    pads = []
    for size, window, stride in zip(in_shape, window_shape, window_strides):
        out = -(-size // stride)
        total = max((out - 1) * stride + window - size, 0)
        low = total // 2 if kind == "SAME" else total - total // 2
        pads.append((low, total - low))
    return pads


def _ints(value, count: int, name: str, function: str) -> tuple[int, ...]:
    value = (1,) * count if value is None else tuple(int(item) for item in value)
    if len(value) != count:
        raise ValueError(f"{function}: {name} {value} must have {count} entries, one per spatial dim")
    return value


def _pairs(padding, count: int, function: str) -> tuple[tuple[int, int], ...]:
    try:
        pairs = tuple((int(low), int(high)) for low, high in padding)
    except (TypeError, ValueError):
        raise TypeError(f"{function}: padding must be a string or (low, high) pairs, got {padding!r}") from None
    if len(pairs) != count:
        raise ValueError(f"{function}: padding {padding!r} must have {count} pairs, one per spatial dim")
    return pairs


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
                         dimension_numbers=None, feature_group_count: int = 1, batch_group_count: int = 1,
                         precision=None, preferred_element_type=None):
    """XLA's general convolution (see ``meshjit.ir.ops.windows``)."""
    check_precision(precision)
    lhs, rhs = as_operand(lhs), as_operand(rhs)
    lhs_shape, rhs_shape = shape_of(lhs), shape_of(rhs)
    numbers = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    spatial = len(lhs_shape) - 2
    strides = _ints(window_strides, spatial, "window_strides", "conv_general_dilated")
    lhs_dilation = _ints(lhs_dilation, spatial, "lhs_dilation", "conv_general_dilated")
    rhs_dilation = _ints(rhs_dilation, spatial, "rhs_dilation", "conv_general_dilated")
    if isinstance(padding, str):
        if any(step != 1 for step in lhs_dilation):
            raise ValueError("String padding is not implemented for transposed convolution using this op. Please "
                             "either exactly specify the required padding or use conv_transpose.")
        kernel = [dilated(rhs_shape[dim], step) for dim, step in zip(numbers.rhs_spec[2:], rhs_dilation)]
        padding = padtype_to_pads([lhs_shape[dim] for dim in numbers.lhs_spec[2:]], kernel, strides, padding)
    attrs = {"lhs_spec": tuple(numbers.lhs_spec), "rhs_spec": tuple(numbers.rhs_spec),
             "out_spec": tuple(numbers.out_spec), "window_strides": strides,
             "padding": _pairs(padding, spatial, "conv_general_dilated"), "lhs_dilation": lhs_dilation,
             "rhs_dilation": rhs_dilation, "feature_group_count": int(feature_group_count),
             "batch_group_count": int(batch_group_count)}
    if dtype_of(lhs).name != dtype_of(rhs).name:
        raise TypeError(f"conv_general_dilated requires lhs and rhs of one dtype, got {dtype_of(lhs).name} and "
                        f"{dtype_of(rhs).name}")
    result = bind("conv_general_dilated", [lhs, rhs], attrs)[0]
    if preferred_element_type is not None:
        result = lax.convert_element_type(result, preferred_element_type)
    return result


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """A convolution of NCHW inputs with OIHW kernels."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, precision=None,
                              preferred_element_type=None):
    """A convolution of NCHW inputs with OIHW kernels, with dilations."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                                precision=precision, preferred_element_type=preferred_element_type)


# -- window reductions ---------------------------------------------------------------------------

_MONOIDS = {"add": "reduce_window_sum", "max": "reduce_window_max", "min": "reduce_window_min",
            "maximum": "reduce_window_max", "minimum": "reduce_window_min"}


def _window_op(computation) -> str | None:
    """The window-reduction op of ``lax.add``/``max``/``min`` (or jnp's add/maximum/minimum)."""
    module = getattr(computation, "__module__", "") or ""
    if not module.startswith("meshjit"):
        return None
    return _MONOIDS.get(getattr(computation, "__name__", ""))


def reduce_window(operand, init_value, computation, window_dimensions, window_strides=None, padding="VALID",
                  base_dilation=None, window_dilation=None):
    """Reduce every window of ``operand`` with ``computation`` starting from ``init_value``;
    padding holds the init value. ``operand`` and ``init_value`` may be matching pytrees (tuples
    or lists) for computations over several arrays."""
    several = isinstance(operand, (tuple, list))
    operands = [as_operand(item) for item in (operand if several else [operand])]
    inits = list(init_value) if several else [init_value]
    shape = shape_of(operands[0])
    rank = len(shape)
    window = _ints(window_dimensions, rank, "window_dimensions", "reduce_window")
    strides = _ints(window_strides, rank, "window_strides", "reduce_window")
    base_dilation = _ints(base_dilation, rank, "base_dilation", "reduce_window")
    window_dilation = _ints(window_dilation, rank, "window_dilation", "reduce_window")
    if isinstance(padding, str):
        padding = padtype_to_pads([dilated(size, step) for size, step in zip(shape, base_dilation)],
                                  [dilated(size, step) for size, step in zip(window, window_dilation)], strides,
                                  padding)
    attrs = {"window_dimensions": window, "window_strides": strides, "padding": _pairs(padding, rank, "reduce_window"),
             "base_dilation": base_dilation, "window_dilation": window_dilation}
    inits = [as_operand(init, dtype_of(item).name) if is_python_scalar(init) else as_operand(init)
             for init, item in zip(inits, operands)]
    name = _window_op(computation)
    if name is not None and not several:
        return bind(name, [operands[0], lax.convert_element_type(inits[0], dtype_of(operands[0]).name)], attrs)[0]
    results = _fold_windows(operands, inits, computation, attrs, several)
    return tuple(results) if several else results[0]


def _fold_windows(operands, inits, computation, attrs, several: bool) -> list:
    """The window reduction as a fold of ``computation`` over the strided views of the padded
    operands, one view per window offset in row-major order."""
    config = tuple((low, high, step - 1) for (low, high), step in zip(attrs["padding"], attrs["base_dilation"]))
    padded = [lax.pad(item, init, config) for item, init in zip(operands, inits)]
    padded_shape = shape_of(padded[0])
    counts = [max((size - dilated(w, d)) // s + 1, 0) if size >= dilated(w, d) else 0
              for size, w, d, s in zip(padded_shape, attrs["window_dimensions"], attrs["window_dilation"],
                                       attrs["window_strides"])]
    accumulated = [lax.full(counts, init, dtype_of(item).name) for item, init in zip(operands, inits)]
    for offsets in itertools.product(*(range(w) for w in attrs["window_dimensions"])):
        starts = [offset * d for offset, d in zip(offsets, attrs["window_dilation"])]
        limits = [start + s * (count - 1) + 1 if count else start
                  for start, s, count in zip(starts, attrs["window_strides"], counts)]
        views = [lax.slice(item, starts, limits, attrs["window_strides"]) for item in padded]
        combined = computation(tuple(accumulated), tuple(views)) if several else \
            computation(accumulated[0], views[0])
        accumulated = list(combined) if several else [combined]
    return accumulated
