"""``jax.ops``: segment reductions, a scatter of ``data``'s rows into ``num_segments`` rows.

Row ``i`` of ``data`` goes to row ``segment_ids[i]`` of the result; ids outside
``[0, num_segments)`` are dropped (``mode`` may ask to clip them instead), and a segment no row
reaches holds the reduction's identity. Each is one scatter in the IR, so it shards, batches and
differentiates as ``x.at[ids].add`` (or ``.max``, ``.min``, ``.multiply``) does."""

from __future__ import annotations

import operator

import numpy as np

from . import lax
from . import numpy as jnp
from .dtypes import iinfo

__all__ = ["segment_max", "segment_min", "segment_prod", "segment_sum"]


def segment_sum(data, segment_ids, num_segments=None, indices_are_sorted=False, unique_indices=False,
                bucket_size=None, mode=None):
    """The sum of ``data``'s rows per segment (0 where no row falls)."""
    return _segment(data, segment_ids, num_segments, "add", 0, indices_are_sorted, unique_indices, mode)


def segment_prod(data, segment_ids, num_segments=None, indices_are_sorted=False, unique_indices=False,
                 bucket_size=None, mode=None):
    """The product of ``data``'s rows per segment (1 where no row falls)."""
    return _segment(data, segment_ids, num_segments, "multiply", 1, indices_are_sorted, unique_indices, mode)


def segment_max(data, segment_ids, num_segments=None, indices_are_sorted=False, unique_indices=False,
                bucket_size=None, mode=None):
    """The maximum of ``data``'s rows per segment (-inf, the dtype's least integer or False where
    no row falls)."""
    return _segment(data, segment_ids, num_segments, "max", _lowest, indices_are_sorted, unique_indices, mode)


def segment_min(data, segment_ids, num_segments=None, indices_are_sorted=False, unique_indices=False,
                bucket_size=None, mode=None):
    """The minimum of ``data``'s rows per segment (inf, the dtype's greatest integer or True where
    no row falls)."""
    return _segment(data, segment_ids, num_segments, "min", _highest, indices_are_sorted, unique_indices, mode)


def _lowest(dtype: np.dtype):
    if dtype == np.bool_:
        return False
    return iinfo(dtype).min if np.issubdtype(dtype, np.integer) else -np.inf


def _highest(dtype: np.dtype):
    if dtype == np.bool_:
        return True
    return iinfo(dtype).max if np.issubdtype(dtype, np.integer) else np.inf


def _segment(data, segment_ids, num_segments, method: str, identity, indices_are_sorted, unique_indices,
             mode):
    data = jnp.asarray(data)
    segment_ids = jnp.asarray(segment_ids)
    if method in ("add", "multiply") and data.dtype == np.bool_:
        name = "add" if method == "add" else "mul"
        raise TypeError(f"{name} does not accept dtype bool at position 0. Accepted dtypes at position 0 are "
                        "subtypes of integer, floating, complexfloating.")
    if num_segments is None:
        # NOTE: as in JAX, the count comes from the ids' values, so it needs concrete ids
        num_segments = int(jnp.max(segment_ids)) + 1
    num_segments = operator.index(num_segments)
    fill = identity(np.dtype(data.dtype)) if callable(identity) else identity
    out = jnp.full((num_segments,) + tuple(data.shape[segment_ids.ndim:]), fill, data.dtype)
    # NOTE: a scatter, not ``out.at[ids]``: JAX's segment ids are not wrapped like Python indices
    # (-1 is out of range, so dropped or clipped to 0)
    window = tuple(range(segment_ids.ndim, data.ndim))
    numbers = lax.ScatterDimensionNumbers(update_window_dims=window, inserted_window_dims=(0,),
                                          scatter_dims_to_operand_dims=(0,))
    return _SCATTERS[method](out, segment_ids[..., None], data, numbers, indices_are_sorted=indices_are_sorted,
                             unique_indices=unique_indices, mode=_MODES.get(mode, mode))


_SCATTERS = {"add": lax.scatter_add, "multiply": lax.scatter_mul, "max": lax.scatter_max, "min": lax.scatter_min}
_MODES = {None: lax.GatherScatterMode.FILL_OR_DROP}
