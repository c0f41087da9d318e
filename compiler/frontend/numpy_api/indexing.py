"""numpy indexing (``x[...]``) and ``take``/``take_along_axis``, from static slices and the IR's
``gather``.

Basic entries (ints, slices with any step, None, Ellipsis) become one ``slice`` (plus ``rev``
for negative steps) and a ``squeeze`` of the int dims. Integer-array entries, and ints next to
them, are advanced: they are broadcast together, clamped into range as in JAX, and combined into
one linear index over the dims they select, which a single ``gather`` takes. Where the advanced
dims land follows numpy: in place when the advanced entries are adjacent in the index as
written, first otherwise.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass

import numpy as np

from .. import lax_ops as lax
from ..operands import canonical_numpy, dtype_of, shape_of, x64
from ..promotion import default_int
from ..trace import ConcretizationTypeError, JAXIndexError, Tracer, is_concrete_array
from .arguments import (
    array_operand,
    broadcast_shapes,
    broadcast_to_shape,
    convert_operand,
    with_weak_type,
)

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "NonConcreteBooleanIndexError",
    "getitem",
)


class NonConcreteBooleanIndexError(JAXIndexError):
    """A traced boolean mask was used as an index: the result's shape would depend on values."""


@dataclass(frozen=True)
class _Advanced:
    """An integer-array entry (or an int among array entries): which operand dim it indexes."""

    index: object
    dim: int


def _is_integer(entry) -> bool:
    return isinstance(entry, (int, np.integer)) and not isinstance(entry, (bool, np.bool_))


@dataclass(frozen=True)
class _Mask:
    """A concrete boolean mask entry; it stands for as many dims as it has."""

    array: np.ndarray


def _as_index_array(entry):
    """A non-scalar index entry as a canonical numpy array, a Tracer or a device array."""
    if isinstance(entry, Tracer) or is_concrete_array(entry):
        return entry
    array = np.asarray(entry)
    if array.dtype == object or array.dtype.kind not in "biu":
        raise TypeError(
            f"indexing: only integers, slices, ellipsis, None and integer or boolean arrays are "
            f"valid indices; got {entry!r}"
        )
    return canonical_numpy(array, "bool" if array.dtype.kind == "b" else default_int(x64()))


def _classify(entry):
    """An index entry with arrays made canonical and concrete bool masks wrapped in _Mask."""
    if entry is None or entry is Ellipsis or isinstance(entry, slice) or _is_integer(entry):
        return entry
    if isinstance(entry, (bool, np.bool_)):
        return _Mask(np.asarray(entry))
    array = _as_index_array(entry)
    if dtype_of(array).name != "bool":
        return array
    if isinstance(array, Tracer) and array.known_value() is not None:
        # NOTE: under grad outside jit the mask's values are known, as in JAX
        array = array.known_value()
    if isinstance(array, Tracer):
        raise NonConcreteBooleanIndexError(
            f"indexing: a boolean mask of type {array.value.type} depends on traced values, so "
            f"the result's shape is unknown while tracing; use meshjit.numpy.where(mask, x, 0) "
            f"or index with a concrete (numpy) mask"
        )
    return _Mask(np.asarray(array))


def advanced_adjacent(entries) -> bool:
    """numpy's rule for where the broadcast index dims go, judged on the index as written (its
    entries classified, the Ellipsis not yet spelled out): in place only when the advanced
    entries (ints, integer arrays and masks, once any array is present) stand next to each other;
    a slice, a None or an Ellipsis between them, even one that stands for no dims, sends the
    dims first."""
    positions = [
        position
        for position, entry in enumerate(entries)
        if not (entry is None or entry is Ellipsis or isinstance(entry, slice))
    ]
    return not positions or positions == list(range(positions[0], positions[-1] + 1))


def _dims_of(entry) -> int:
    """How many dims of the indexed array an entry consumes."""
    if entry is None or entry is Ellipsis:
        return 0
    return entry.array.ndim if isinstance(entry, _Mask) else 1


def _fill_ellipsis(entries, rank: int):
    """The entries with the Ellipsis (or trailing dims) spelled out as full slices."""
    consumed = sum(_dims_of(entry) for entry in entries)
    if sum(1 for entry in entries if entry is Ellipsis) > 1:
        raise IndexError("indexing: an index can only have a single ellipsis ('...')")
    if consumed > rank:
        raise IndexError(
            f"indexing: too many indices for array: array is {rank}-dimensional, "
            f"but {consumed} were indexed"
        )
    fill = [slice(None)] * (rank - consumed)
    # NOTE: identity tests only: ``==`` on an array entry would compare elementwise.
    positions = [index for index, entry in enumerate(entries) if entry is Ellipsis]
    if positions:
        return entries[: positions[0]] + fill + entries[positions[0] + 1 :]
    return entries + fill


def _scalar_masks_as_dims(operand, entries):
    """numpy's reading of a 0-d boolean index: a new dim of size 1 at its place, indexed by
    the 1-d mask ``[value]`` (so True keeps it, False empties it)."""
    if not any(isinstance(entry, _Mask) and entry.array.ndim == 0 for entry in entries):
        return operand, entries
    dim, rewritten = 0, []
    for entry in entries:
        if isinstance(entry, _Mask) and entry.array.ndim == 0:
            operand = lax.expand_dims(operand, (dim,))
            entry = _Mask(entry.array.reshape(1))
        rewritten.append(entry)
        dim += _dims_of(entry)
    return operand, rewritten


def _expand_masks(entries, shape):
    """Masks become the integer arrays of their true positions (numpy's nonzero), after a
    check that each mask's shape is the shape of the dims it covers."""
    expanded, dim = [], 0
    for entry in entries:
        if isinstance(entry, _Mask):
            covered = tuple(shape[dim : dim + entry.array.ndim])
            if entry.array.shape != covered:
                raise IndexError(
                    f"indexing: boolean index of shape {entry.array.shape} does not match the "
                    f"indexed dims {dim}..{dim + entry.array.ndim - 1} of shape {covered}"
                )
            index_dtype = default_int(x64())
            expanded.extend(
                canonical_numpy(positions, index_dtype) for positions in np.nonzero(entry.array)
            )
        else:
            expanded.append(entry)
        dim += _dims_of(entry)
    return expanded


def _static_int(value, size: int, dim: int) -> int:
    """A static int index as a position; out of bounds it is clamped, as JAX's gather clamps
    (``jnp.arange(10)[11]`` is 9), except on an empty dim, which has no position."""
    index = operator.index(value)
    if size == 0:
        raise IndexError(
            f"indexing: index {index} is out of bounds for axis {dim} with size {size}"
        )
    return min(max(index + size if index < 0 else index, 0), size - 1)


def _slice_bound(value, name: str):
    if isinstance(value, Tracer):
        raise ConcretizationTypeError(
            f"indexing: slice {name} must be concrete, got a traced value "
            f"{value.value.type}; use lax.dynamic_slice for traced offsets"
        )
    return None if value is None else operator.index(value)


def _basic_window(entry, size: int, dim: int):
    """(start, limit, stride, reversed) of a slice or static int on a dim of ``size``."""
    if _is_integer(entry):
        index = _static_int(entry, size, dim)
        return index, index + 1, 1, False
    start, stop, step = (
        _slice_bound(getattr(entry, name), name) for name in ("start", "stop", "step")
    )
    if step == 0:
        raise ValueError("indexing: slice step cannot be zero")
    start, stop, step = slice(start, stop, step).indices(size)
    count = len(range(start, stop, step))
    if step > 0:
        return start, start + max(count - 1, 0) * step + (1 if count else 0), step, False
    # A negative step reads the reversed dim forward from the mirrored start.
    mirrored = size - 1 - start
    return mirrored, mirrored + max(count - 1, 0) * -step + (1 if count else 0), -step, True


def _apply_basic(operand, entries, advanced: bool):
    """One strided slice for every slice (and, without advanced entries, every int) entry;
    advanced entries keep their dim whole."""
    shape = shape_of(operand)
    per_dim = [entry for entry in entries if entry is not None]
    windows = []
    for dim, (entry, size) in enumerate(zip(per_dim, shape)):
        if isinstance(entry, slice) or (_is_integer(entry) and not advanced):
            windows.append(_basic_window(entry, size, dim))
        else:
            windows.append((0, size, 1, False))
    reversed_dims = tuple(dim for dim, window in enumerate(windows) if window[3])
    if reversed_dims:
        operand = lax.rev(operand, reversed_dims)
    if any(window[:3] != (0, size, 1) for window, size in zip(windows, shape)):
        operand = lax.slice(operand, *zip(*(window[:3] for window in windows)))
    if not advanced:
        # NOTE: a squeeze, as JAX's indexing writes it (make_jaxpr prints the same equations)
        integer_dims = tuple(dim for dim, entry in enumerate(per_dim) if _is_integer(entry))
        if integer_dims:
            operand = lax.squeeze(operand, integer_dims)
    return operand


def _normalized_index(index, size: int, clamp: bool = True):
    """An index array with negatives counted from the end and, with ``clamp``, clamped into
    ``[0, size)``."""
    index = convert_operand(index, default_int(x64()))
    if isinstance(index, np.ndarray):
        # Concrete indices are normalised here rather than by staged ops.
        wrapped = np.where(index < 0, index + size, index)
        return (np.clip(wrapped, 0, max(size - 1, 0)) if clamp else wrapped).astype(index.dtype)
    index = lax.select(lax.lt(index, 0), lax.add(index, size), index)
    return lax.clamp(0, index, max(size - 1, 0)) if clamp else index


def _gather_advanced(operand, advanced: list[_Advanced], adjacent: bool, mode: str = "clip", fill_value=None):
    """Take the advanced entries' elements; their broadcast dims replace the indexed dims, in
    place when ``adjacent`` and first otherwise. In mode "fill" an index out of range gives
    ``fill_value`` instead of the clamped element."""
    shape = shape_of(operand)
    dims = [item.dim for item in advanced]
    index_shape = broadcast_shapes("indexing", *(shape_of(item.index) for item in advanced))
    for dim in dims:
        if shape[dim] == 0 and math.prod(index_shape) > 0:
            raise IndexError(f"indexing: cannot take elements of axis {dim}, which has size 0")
    if not adjacent:
        rest = [dim for dim in range(len(shape)) if dim not in dims]
        operand = lax.transpose(operand, tuple(dims + rest))
        dims = list(range(len(dims)))
        shape = shape_of(operand)
    first = dims[0]
    merged = math.prod(shape[dim] for dim in dims)
    if merged == 0:
        # an empty index into an empty dim: nothing to take, and gather needs a slice of 1
        empty_shape = shape[:first] + tuple(index_shape) + shape[dims[-1] + 1 :]
        return lax.full(empty_shape, 0, dtype_of(operand).name)
    if len(dims) > 1:
        operand = lax.reshape(operand, shape[:first] + (merged,) + shape[dims[-1] + 1 :])
    linear = inside = None
    for item, dim in zip(advanced, dims):
        index = _normalized_index(item.index, shape[dim], clamp=mode != "fill")
        index = broadcast_to_shape(index, index_shape, "indexing")
        if mode == "fill":
            fits = lax.bitwise_and(lax.ge(index, 0), lax.lt(index, shape[dim]))
            inside = fits if inside is None else lax.bitwise_and(inside, fits)
        stride = math.prod(shape[later] for later in dims if later > dim)
        term = lax.mul(index, stride) if stride != 1 else index
        linear = term if linear is None else lax.add(linear, term)
    if mode == "fill":
        # a component out of its dim may still land inside the merged dim: send it out
        linear = lax.select(inside, linear, lax.full(index_shape, -1, dtype_of(linear).name))
    return lax.gather_along_axis(operand, linear, first, mode=mode, fill_value=fill_value)


def _final_layout(result, entries, advanced_rank: int, adjacent: bool):
    """Insert the None dims where numpy puts them, around the advanced dims' block."""
    if advanced_rank < 0:
        kinds = ["new" if entry is None else "dim" for entry in entries if not _is_integer(entry)]
    elif adjacent:
        kinds, placed = [], False
        for entry in entries:
            if isinstance(entry, _Advanced):
                kinds += [] if placed else ["dim"] * advanced_rank
                placed = True
            else:
                kinds.append("new" if entry is None else "dim")
    else:
        kinds = ["dim"] * advanced_rank + [
            "new" if entry is None else "dim"
            for entry in entries
            if not isinstance(entry, _Advanced)
        ]
    positions = tuple(position for position, kind in enumerate(kinds) if kind == "new")
    return lax.expand_dims(result, positions) if positions else result


def getitem(array, index, mode: str = "clip", fill_value=None):
    """``array[index]`` with numpy's basic and integer-array indexing (out-of-range array
    indices are clamped as in JAX, or give ``fill_value`` in mode "fill"; static ints out of
    range raise IndexError)."""
    operand = array_operand(array, "indexing")
    entries = [_classify(entry) for entry in (index if isinstance(index, tuple) else (index,))]
    adjacent = advanced_adjacent(entries)
    entries = _fill_ellipsis(entries, len(shape_of(operand)))
    operand, entries = _scalar_masks_as_dims(operand, entries)
    entries = _expand_masks(entries, shape_of(operand))
    return getitem_entries(operand, entries, adjacent, mode, fill_value)


def getitem_entries(operand, entries, adjacent: bool, mode: str = "clip", fill_value=None):
    """``operand[entries]`` for entries with the Ellipsis spelled out and masks expanded;
    ``adjacent`` is ``advanced_adjacent`` of the index as written."""
    has_arrays = any(
        not (entry is None or isinstance(entry, slice) or _is_integer(entry)) for entry in entries
    )
    operand = _apply_basic(operand, entries, has_arrays)
    if not has_arrays:
        return _final_layout(operand, entries, -1, adjacent=True)
    dim, marked = 0, []
    for entry in entries:
        if entry is None:
            marked.append(None)
            continue
        if isinstance(entry, slice):
            marked.append(entry)
        else:
            size = shape_of(operand)[dim]
            marked.append(
                _Advanced(_static_int(entry, size, dim) if _is_integer(entry) else entry, dim)
            )
        dim += 1
    advanced = [entry for entry in marked if isinstance(entry, _Advanced)]
    index_rank = len(broadcast_shapes("indexing", *(shape_of(item.index) for item in advanced)))
    result = _gather_advanced(operand, advanced, adjacent, mode, fill_value)
    return with_weak_type(
        _final_layout(result, marked, index_rank, adjacent), dtype_of(operand).weak
    )
