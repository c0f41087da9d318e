"""``x.at[index].set(v)`` and its siblings: functional updates of the elements ``x[index]``
names, returning a new array (JAX's ``_IndexUpdateHelper``).

Basic entries (ints, slices, None, Ellipsis) pick a strided region of ``x``; the update is
computed on that region elementwise and put back with a pad and a select, so a sharded dim
keeps its layout. Integer-array entries become one ``scatter*`` op into the region, with the
index arrays stacked as index vectors; out-of-range indices are dropped (mode "fill", JAX's
default) or clamped (mode "clip"). Repeated indices combine as in JAX: ``set`` keeps the last,
``add``/``multiply``/``min``/``max`` combine all, ``apply`` applies the function once per
occurrence.
"""

from __future__ import annotations

import warnings

import numpy as np
from meshjit.ir.dtypes import to_numpy

from .. import lax_ops as lax
from ..lax_slicing import (
    GatherScatterMode,
    ScatterDimensionNumbers,
    _scatter,
    ir_mode,
    scatter_apply,
)
from ..operands import dtype_of, shape_of, x64
from ..promotion import promote
from .arguments import (
    array_operand,
    as_array_argument,
    broadcast_shapes,
    broadcast_to_shape,
    convert_operand,
)
from .elementwise import divide, power
from .indexing import (
    _Advanced,
    _basic_window,
    _classify,
    _expand_masks,
    _fill_ellipsis,
    _is_integer,
    _normalized_index,
    advanced_adjacent,
    getitem_entries,
)

_COMBINE = {"scatter": lambda region, values: values, "scatter_add": lax.add, "scatter_mul": lax.mul,
            "scatter_min": lax.min, "scatter_max": lax.max}


class IndexUpdateHelper:
    """``x.at``: indexing it gives the reference whose methods update ``x[index]``."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, index) -> IndexUpdateRef:
        return IndexUpdateRef(self.array, index)

    def __repr__(self) -> str:
        return f"_IndexUpdateHelper({self.array!r})"


def _entries(operand, index, *, static_out_of_range_as_arrays: bool):
    """The index entries with Ellipsis spelled out and masks expanded, and whether the advanced
    ones stand adjacent in the index as written; static ints out of range become 0-d index
    arrays (which are dropped or filled, as JAX does for ``.at``)."""
    shape = shape_of(operand)
    entries = [_classify(entry) for entry in (index if isinstance(index, tuple) else (index,))]
    adjacent = advanced_adjacent(entries)
    entries = _expand_masks(_fill_ellipsis(entries, len(shape)), shape)
    dim, result = 0, []
    for entry in entries:
        if _is_integer(entry) and static_out_of_range_as_arrays and not -shape[dim] <= entry < shape[dim]:
            entry = np.asarray(entry, np.int64 if x64() else np.int32)
        result.append(entry)
        dim += entry is not None
    return result, adjacent


def _is_array_entry(entry) -> bool:
    return not (entry is None or isinstance(entry, slice) or _is_integer(entry))


class IndexUpdateRef:
    """``x.at[index]``: ``get`` reads ``x[index]``; the other methods return ``x`` with
    ``x[index]`` updated."""

    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array = array
        self.index = index

    def __repr__(self) -> str:
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

    def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None, fill_value=None,
            wrap_negative_indices=True):
        """``x[index]``; out-of-range array indices are clamped, or give ``fill_value`` when
        ``mode`` is "fill"."""
        operand = array_operand(self.array, "at[].get")
        gather_mode = ir_mode(mode, GatherScatterMode.PROMISE_IN_BOUNDS)
        entries, adjacent = _entries(operand, self.index, static_out_of_range_as_arrays=gather_mode == "fill")
        return getitem_entries(operand, entries, adjacent, mode=gather_mode, fill_value=fill_value)

    def set(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None, wrap_negative_indices=True):
        """``x`` with ``x[index] = values`` (the last of repeated indices wins)."""
        return _update(self, "scatter", values, mode, unique_indices, indices_are_sorted, wrap_negative_indices)

    def add(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None, wrap_negative_indices=True):
        """``x`` with ``x[index] += values`` (repeated indices add up)."""
        return _update(self, "scatter_add", values, mode, unique_indices, indices_are_sorted, wrap_negative_indices)

    def subtract(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
                 wrap_negative_indices=True):
        """``x`` with ``x[index] -= values``."""
        operand = array_operand(self.array, "at[].subtract")
        negated = lax.neg(_values(operand, values, "at[].subtract"))
        return _update(self, "scatter_add", negated, mode, unique_indices, indices_are_sorted, wrap_negative_indices)

    def multiply(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
                 wrap_negative_indices=True):
        """``x`` with ``x[index] *= values``."""
        return _update(self, "scatter_mul", values, mode, unique_indices, indices_are_sorted, wrap_negative_indices)

    mul = multiply

    def divide(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
               wrap_negative_indices=True):
        """``x`` with ``x[index] /= values`` (as JAX: ``x`` divided by ones multiplied there)."""
        return divide(self.array, self._ones_times(values, mode, unique_indices, indices_are_sorted,
                                                   wrap_negative_indices))

    def power(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
              wrap_negative_indices=True):
        """``x`` with ``x[index] **= values`` (as JAX: ``x`` to the power of ones multiplied there)."""
        return power(self.array, self._ones_times(values, mode, unique_indices, indices_are_sorted,
                                                  wrap_negative_indices))

    def min(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None, wrap_negative_indices=True):
        """``x`` with ``x[index] = minimum(x[index], values)``."""
        return _update(self, "scatter_min", values, mode, unique_indices, indices_are_sorted, wrap_negative_indices)

    def max(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None, wrap_negative_indices=True):
        """``x`` with ``x[index] = maximum(x[index], values)``."""
        return _update(self, "scatter_max", values, mode, unique_indices, indices_are_sorted, wrap_negative_indices)

    def apply(self, func, *, indices_are_sorted=False, unique_indices=False, mode=None, wrap_negative_indices=True):
        """``x`` with ``func`` applied to ``x[index]``, once per occurrence of a repeated index;
        ``func`` must be elementwise (JAX calls it on scalars)."""
        return _update(self, "apply", func, mode, unique_indices, indices_are_sorted, wrap_negative_indices)

    def _ones_times(self, values, mode, unique_indices, indices_are_sorted, wrap_negative_indices):
        operand = array_operand(self.array, "at[]")
        kind = dtype_of(operand).name
        ones = IndexUpdateRef(lax.full(shape_of(operand), 1, kind), self.index)
        return _update(ones, "scatter_mul", values, mode, unique_indices, indices_are_sorted, wrap_negative_indices)


def _values(operand, values, function: str):
    """The update values in the operand's dtype; a cast that loses information warns as JAX."""
    values = as_array_argument(values, function)
    target, given = dtype_of(operand), dtype_of(values)
    if promote(given, target, x64()).name != target.name:
        warnings.warn(f"scatter inputs have incompatible types: cannot safely cast value from dtype={given.name} "
                      f"to dtype={target.name}. In future JAX releases this will result in an error.",
                      FutureWarning, stacklevel=4)
    return convert_operand(values, target.name)


def _update(ref: IndexUpdateRef, kind: str, values, mode, unique_indices, indices_are_sorted, wrap_negative):
    operand = array_operand(ref.array, "at[]")
    shape = shape_of(operand)
    entries, adjacent = _entries(operand, ref.index, static_out_of_range_as_arrays=True)
    has_arrays = any(_is_array_entry(entry) for entry in entries)
    per_dim = [entry for entry in entries if entry is not None]
    windows = [_basic_window(entry, size, dim) if isinstance(entry, slice) or (_is_integer(entry) and not has_arrays)
               else (0, size, 1, False) for dim, (entry, size) in enumerate(zip(per_dim, shape))]
    region = _cut(operand, windows)
    if kind != "apply":
        values = _values(operand, values, "at[]")
    if not has_arrays:
        target = _basic_target_shape(entries, shape_of(region))
        if kind == "apply":
            updated = values(region)
        else:
            values = broadcast_to_shape(values, target, "at[]") if shape_of(values) != target else values
            if shape_of(values) != shape_of(region):
                values = lax.reshape(values, shape_of(region))
            updated = _COMBINE[kind](region, values)
    else:
        updated = _scatter_region(region, entries, adjacent, kind, values, mode, unique_indices,
                                  indices_are_sorted, wrap_negative)
    updated = lax._convert_element_type(updated, dtype_of(operand).name, weak_type=dtype_of(operand).weak)
    return _put_back(operand, updated, windows)


def _basic_target_shape(entries, region_shape) -> tuple[int, ...]:
    """The shape of ``x[index]`` for basic entries: ints drop their dim, None adds one."""
    sizes, target = iter(region_shape), []
    for entry in entries:
        if entry is None:
            target.append(1)
        elif _is_integer(entry):
            next(sizes)
        else:
            target.append(next(sizes))
    return tuple(target)


def _cut(operand, windows):
    """The strided region the basic entries pick, every dim kept."""
    shape = shape_of(operand)
    reversed_dims = tuple(dim for dim, window in enumerate(windows) if window[3])
    if reversed_dims:
        operand = lax.rev(operand, reversed_dims)
    if any(window[:3] != (0, size, 1) for window, size in zip(windows, shape)):
        operand = lax.slice(operand, *zip(*(window[:3] for window in windows)))
    return operand


def _put_back(operand, updated, windows):
    """``operand`` with the region ``windows`` pick replaced by ``updated``: the region padded
    back to the operand's shape (as a slice's transpose), chosen by a mask padded alike."""
    shape = shape_of(operand)
    if all(window[:3] == (0, size, 1) and not window[3] for window, size in zip(windows, shape)):
        return updated
    config = []
    for size, (start, _, stride, _), count in zip(shape, windows, shape_of(updated)):
        spread = count + (count - 1) * (stride - 1) if count else 0
        config.append((start, size - start - spread, stride - 1 if count else 0))
    placed = lax.pad(updated, np.zeros((), to_numpy(dtype_of(updated).name)), config)
    mask = lax.pad(lax.full(shape_of(updated), True, "bool"), np.asarray(False), config)
    reversed_dims = tuple(dim for dim, window in enumerate(windows) if window[3])
    if reversed_dims:
        placed, mask = lax.rev(placed, reversed_dims), lax.rev(mask, reversed_dims)
    return lax.select(mask, placed, operand)


def _scatter_region(region, entries, adjacent, kind, values, mode, unique_indices, indices_are_sorted,
                    wrap_negative):
    """The region with its integer-array entries updated by one scatter (or, for ``apply``,
    by selects counted from one scatter_add); ``adjacent`` says where the index dims go."""
    shape = shape_of(region)
    dim, advanced, kinds = 0, [], []
    for entry in entries:
        if entry is None:
            kinds.append("new")
            continue
        if _is_array_entry(entry) or _is_integer(entry):
            advanced.append(_Advanced(entry, dim))
            kinds.append("advanced")
        else:
            kinds.append("dim")
        dim += 1
    index_shape = broadcast_shapes("at[]", *(np.shape(item.index) if not hasattr(item.index, "shape")
                                             else tuple(item.index.shape) for item in advanced))
    scatter_mode = ir_mode(mode, GatherScatterMode.FILL_OR_DROP)
    vectors = []
    for item in advanced:
        size = shape[item.dim]
        index = _normalized_index(item.index, size, clamp=False) if wrap_negative else \
            convert_operand(item.index, "i64" if x64() else "i32")
        vectors.append(lax.reshape(broadcast_to_shape(index, index_shape, "at[]"), index_shape + (1,)))
    indices = vectors[0] if len(vectors) == 1 else lax.concatenate(
        [lax.convert_element_type(vector, dtype_of(vectors[0]).name) for vector in vectors], len(index_shape))
    advanced_dims = [item.dim for item in advanced]
    rest = [d for d in range(len(shape)) if d not in advanced_dims]
    first = advanced_dims[0] if adjacent else 0
    update_shape = ([shape[d] for d in rest[:first]] + list(index_shape) + [shape[d] for d in rest[first:]])
    window_dims = tuple(range(first)) + tuple(range(first + len(index_shape), len(update_shape)))
    dimension_numbers = ScatterDimensionNumbers(window_dims, tuple(sorted(advanced_dims)), tuple(advanced_dims))
    if kind == "apply":
        return scatter_apply(region, indices, values, dimension_numbers, update_shape=tuple(update_shape),
                             mode=scatter_mode)
    target = _target_shape(update_shape, kinds, adjacent, len(index_shape))
    values = broadcast_to_shape(values, target, "at[]") if shape_of(values) != target else values
    if shape_of(values) != tuple(update_shape):
        values = lax.reshape(values, tuple(update_shape))
    return _scatter(kind, region, indices, values, dimension_numbers, indices_are_sorted, unique_indices,
                    scatter_mode)


def _target_shape(update_shape, kinds, adjacent: bool, index_rank: int) -> tuple[int, ...]:
    """The shape of ``x[index]``: the scatter's update shape with the None dims put back where
    numpy puts them."""
    sizes = iter(update_shape)
    target = []
    if not adjacent:
        target += [next(sizes) for _ in range(index_rank)]
    placed = not adjacent
    for item in kinds:
        if item == "new":
            target.append(1)
        elif item == "dim":
            target.append(next(sizes))
        elif not placed:
            target += [next(sizes) for _ in range(index_rank)]
            placed = True
    return tuple(target)
