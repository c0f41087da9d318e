"""jax.lax's gather, scatters and dynamic-slice helpers (JAX's ``lax/slicing.py``): the dimension
number tuples, the out-of-range modes, and functions that bind the IR's ``gather``,
``scatter*``, ``dynamic_slice`` and ``dynamic_update_slice``.
"""

from __future__ import annotations

import enum
import math
from typing import NamedTuple

import numpy as np
from meshjit.ir.reference import reference_impls

from .lax_ops import (
    _convert_element_type,
    _single,
    convert_element_type,
    dynamic_slice,
    dynamic_update_slice,
    full,
    gt,
    reshape,
    select,
    transpose,
)
from .operands import as_operand, dtype_of, is_python_scalar, shape_of
from .trace import Tracer, bind

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "GatherDimensionNumbers",
    "GatherScatterMode",
    "ScatterDimensionNumbers",
    "dynamic_index_in_dim",
    "dynamic_slice_in_dim",
    "dynamic_update_index_in_dim",
    "dynamic_update_slice_in_dim",
    "gather",
    "scatter",
    "scatter_add",
    "scatter_apply",
    "scatter_max",
    "scatter_min",
    "scatter_mul",
    "top_k",
)


class GatherDimensionNumbers(NamedTuple):
    """How a gather maps indices to windows of the operand (XLA's dimension numbers); the index
    vector is the last dim of the indices."""

    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()


class ScatterDimensionNumbers(NamedTuple):
    """How a scatter maps indices and updates to windows of the operand."""

    update_window_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    scatter_dims_to_operand_dims: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    scatter_indices_batching_dims: tuple[int, ...] = ()


class GatherScatterMode(enum.Enum):
    """What a gather or scatter does with windows that do not fit in the operand: CLIP clamps
    their starts; FILL_OR_DROP fills them (gather) or drops them (scatter); PROMISE_IN_BOUNDS
    promises there are none (clamped, as on JAX's CPU backend); ONE_HOT is accepted as in JAX
    and behaves as FILL_OR_DROP."""

    CLIP = enum.auto()
    FILL_OR_DROP = enum.auto()
    PROMISE_IN_BOUNDS = enum.auto()
    ONE_HOT = enum.auto()

    @staticmethod
    def from_any(mode) -> GatherScatterMode:
        if isinstance(mode, GatherScatterMode):
            return mode
        if mode is None:
            return GatherScatterMode.FILL_OR_DROP
        names = {"clip": GatherScatterMode.CLIP, "fill": GatherScatterMode.FILL_OR_DROP,
                 "drop": GatherScatterMode.FILL_OR_DROP, "promise_in_bounds": GatherScatterMode.PROMISE_IN_BOUNDS,
                 "one_hot": GatherScatterMode.ONE_HOT}
        if mode not in names:
            raise ValueError(f'Unknown gather mode "{mode}"')
        return names[mode]


def ir_mode(mode, default: GatherScatterMode) -> str:
    """The IR's mode attribute ("clip" or "fill") for a user's mode (None: ``default``)."""
    parsed = default if mode is None else GatherScatterMode.from_any(mode)
    return "fill" if parsed in (GatherScatterMode.FILL_OR_DROP, GatherScatterMode.ONE_HOT) else "clip"


def _integer_indices(indices, function: str):
    indices = as_operand(indices)
    if dtype_of(indices).name not in ("i32", "i64"):
        raise ValueError(f"{function}: indices must have an integer type, got {dtype_of(indices).name}")
    return indices


def _tuple(value, name: str, function: str) -> tuple[int, ...]:
    try:
        return tuple(int(item) for item in value)
    except TypeError:
        raise TypeError(f"{function}: {name} must be a sequence of ints, got {value!r}") from None


def gather(operand, start_indices, dimension_numbers: GatherDimensionNumbers, slice_sizes, *,
           unique_indices: bool = False, indices_are_sorted: bool = False, mode=None, fill_value=None):
    """Windows of ``operand`` of ``slice_sizes`` starting where ``start_indices`` say (XLA's
    Gather). Out-of-range windows are clamped unless ``mode`` is "fill", which gives
    ``fill_value`` (default NaN, the most negative int, or True) for them."""
    if not isinstance(dimension_numbers, GatherDimensionNumbers):
        raise TypeError(f"gather: dimension_numbers must be a GatherDimensionNumbers, got {dimension_numbers!r}")
    operand = as_operand(operand)
    indices = _integer_indices(start_indices, "gather")
    attrs = {name: _tuple(value, name, "gather") for name, value in dimension_numbers._asdict().items()}
    attrs["slice_sizes"] = _tuple(slice_sizes, "slice_sizes", "gather")
    attrs["mode"] = ir_mode(mode, GatherScatterMode.PROMISE_IN_BOUNDS)
    if fill_value is not None and attrs["mode"] == "fill":
        if not is_python_scalar(fill_value):
            fill_value = as_operand(fill_value).item() if hasattr(fill_value, "item") else fill_value
        attrs["fill_value"] = fill_value
    return _single("gather", [operand, indices], attrs, weak_type=dtype_of(operand).weak)


def _scatter(name: str, operand, indices, updates, dimension_numbers, indices_are_sorted, unique_indices, mode):
    if not isinstance(dimension_numbers, ScatterDimensionNumbers):
        raise TypeError(f"{name}: dimension_numbers must be a ScatterDimensionNumbers, got {dimension_numbers!r}")
    operand = as_operand(operand)
    indices = _integer_indices(indices, name)
    kind = dtype_of(operand).name
    updates = as_operand(updates, kind) if is_python_scalar(updates) else as_operand(updates)
    if dtype_of(updates).name != kind:
        raise TypeError(f"{name}: updates of dtype {dtype_of(updates).name} must have the operand's dtype {kind}")
    attrs = {field: _tuple(value, field, name) for field, value in dimension_numbers._asdict().items()}
    attrs.update(mode=ir_mode(mode, GatherScatterMode.FILL_OR_DROP), indices_are_sorted=bool(indices_are_sorted),
                 unique_indices=bool(unique_indices))
    return _single(name, [operand, indices, updates], attrs, weak_type=dtype_of(operand).weak)


def _scatter_function(name: str, doc: str):
    def apply(operand, scatter_indices, updates, dimension_numbers: ScatterDimensionNumbers, *,
              indices_are_sorted: bool = False, unique_indices: bool = False, mode=None):
        return _scatter(name, operand, scatter_indices, updates, dimension_numbers, indices_are_sorted,
                        unique_indices, mode)

    apply.__name__ = name
    apply.__doc__ = doc + " Out-of-range windows are dropped unless ``mode`` is \"clip\"."
    return apply


scatter = _scatter_function("scatter", "``operand`` with the windows ``scatter_indices`` name replaced by "
                                       "``updates`` (the last of repeated indices wins).")
scatter_add = _scatter_function("scatter_add", "``operand`` with ``updates`` added at ``scatter_indices``.")
scatter_mul = _scatter_function("scatter_mul", "``operand`` multiplied by ``updates`` at ``scatter_indices``.")
scatter_min = _scatter_function("scatter_min", "The minimum of ``operand`` and ``updates`` at ``scatter_indices``.")
scatter_max = _scatter_function("scatter_max", "The maximum of ``operand`` and ``updates`` at ``scatter_indices``.")


def scatter_apply(operand, scatter_indices, func, dimension_numbers: ScatterDimensionNumbers, *,
                  update_shape=(), indices_are_sorted: bool = False, unique_indices: bool = False, mode=None):
    """``operand`` with ``func`` applied at ``scatter_indices``, once per occurrence of an
    index (as XLA applies an update computation per update); ``func`` must be elementwise."""
    operand = as_operand(operand)
    counts = scatter_add(full(shape_of(operand), 0, "i32"), scatter_indices, full(tuple(update_shape), 1, "i32"),
                         dimension_numbers, mode=mode)
    repeats = _most_repeats(shape_of(operand), scatter_indices, dimension_numbers, tuple(update_shape), mode)
    result = operand
    for count in range(repeats):
        applied = _convert_element_type(func(result), dtype_of(operand).name, weak_type=dtype_of(operand).weak)
        result = select(gt(counts, count), applied, result)
    return result


def _most_repeats(operand_shape, indices, dimension_numbers, update_shape, mode) -> int:
    """How often the most indexed element is hit: counted from concrete indices (even under a
    trace), else bounded by the number of index vectors."""
    if isinstance(indices, Tracer):
        return math.prod(shape_of(indices)[:-1])
    attrs = {**dimension_numbers._asdict(), "mode": ir_mode(mode, GatherScatterMode.FILL_OR_DROP)}
    counts = reference_impls["scatter_add"](attrs, np.zeros(operand_shape, np.int32), np.asarray(indices),
                                            np.ones(update_shape, np.int32))[0]
    return int(np.max(counts, initial=0))


def top_k(operand, k: int, *, axis: int = -1):
    """The ``k`` largest elements along ``axis`` and their indices, largest first (NaN counts
    as the largest; equal elements come in index order)."""
    operand = as_operand(operand)
    shape = shape_of(operand)
    if not shape:
        raise ValueError("top_k: operand must have at least one dimension")
    axis = _dim(axis, len(shape), "top_k")
    k = int(k)
    if not 0 <= k <= shape[axis]:
        raise ValueError(f"k argument to top_k must be no larger than size along axis; got k={k} with shape="
                         f"{list(shape)} and axis={axis}")
    last = len(shape) - 1
    order = tuple(dim for dim in range(len(shape)) if dim != axis) + (axis,)
    moved = operand if axis == last else transpose(operand, order)
    values, indices = bind("top_k", [moved], {"k": k}, weak_type=dtype_of(operand).weak)
    if axis != last:
        inverse = tuple(order.index(dim) for dim in range(len(shape)))
        values, indices = transpose(values, inverse), transpose(indices, inverse)
    return values, indices


# -- dynamic slices along one dim ----------------------------------------------------------------
def _dim(axis: int, rank: int, function: str) -> int:
    if not -rank <= axis < rank:
        raise ValueError(f"{function}: axis {axis} is out of bounds for an operand of rank {rank}")
    return axis + rank if axis < 0 else axis


def _starts(operand, index, axis: int):
    zero = convert_element_type(0, dtype_of(index).name) if not is_python_scalar(index) else 0
    return [index if dim == axis else zero for dim in range(len(shape_of(operand)))]


def dynamic_slice_in_dim(operand, start_index, slice_size: int = 1, axis: int = 0):
    """``slice_size`` elements of ``operand`` from ``start_index`` along ``axis`` (clamped to fit)."""
    operand = as_operand(operand)
    shape = shape_of(operand)
    axis = _dim(axis, len(shape), "dynamic_slice_in_dim")
    sizes = tuple(slice_size if dim == axis else size for dim, size in enumerate(shape))
    return dynamic_slice(operand, _starts(operand, start_index, axis), sizes)


def dynamic_index_in_dim(operand, index, axis: int = 0, keepdims: bool = True):
    """The element at ``index`` along ``axis``; ``keepdims=False`` drops the dim."""
    result = dynamic_slice_in_dim(operand, index, 1, axis)
    if keepdims:
        return result
    shape = shape_of(result)
    axis = _dim(axis, len(shape), "dynamic_index_in_dim")
    return reshape(result, shape[:axis] + shape[axis + 1:])


def dynamic_update_slice_in_dim(operand, update, start_index, axis: int):
    """``operand`` with ``update`` written from ``start_index`` along ``axis``."""
    operand = as_operand(operand)
    axis = _dim(axis, len(shape_of(operand)), "dynamic_update_slice_in_dim")
    return dynamic_update_slice(operand, update, _starts(operand, start_index, axis))


def dynamic_update_index_in_dim(operand, update, index, axis: int):
    """``operand`` with ``update`` written at ``index`` along ``axis`` (``update`` may lack it)."""
    operand, update = as_operand(operand), as_operand(update)
    axis = _dim(axis, len(shape_of(operand)), "dynamic_update_index_in_dim")
    if len(shape_of(update)) == len(shape_of(operand)) - 1:
        shape = shape_of(update)
        update = reshape(update, shape[:axis] + (1,) + shape[axis:])
    return dynamic_update_slice_in_dim(operand, update, index, axis)
