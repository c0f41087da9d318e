"""A slice of a padded value read through the pad: with static offsets, ``slice(pad(x))`` along
a dim the result is sharded on is a shift of ``x`` (rows outside ``x`` are the pad value), so
each device fetches the rows of ``x`` its output shard reads (a collective_permute of the halo
rows) instead of resharding the padded value, whose shards no longer line up with the result's
(``jnp.pad(a, ((2, 2), (0, 0)))[1:-3]``, a stencil written with pad and slices). The pad is
then dead unless something else reads it. Offered to ``halo_partition.partition_windowed`` as
one more priced plan.
"""

from __future__ import annotations

from meshjit.ir import DimSharding, Op, TensorSharding

from .halo import fetch, split_dim
from .reshard import reshard
from .spmd_builder import Local, SpmdBuilder, describe

THROUGH_PAD = "fetch each shard's window of the padded operand's source (halo exchange through the pad)"


def _same_fill(partitioner, left, right) -> bool:
    """Whether two pad values are one value or equal constants."""
    if left.id == right.id:
        return True
    producers = [partitioner.producers.get(value.id) for value in (left, right)]
    return all(op is not None and op.name == "constant" for op in producers) \
        and producers[0].attrs["value"] == producers[1].attrs["value"]


def _pad_chain(partitioner, value):
    """(source, padding per dim as (low, high), fill value) of the chain of pads without
    interior padding and with one fill that produced ``value`` (``jnp.pad`` pads each side
    with a pad of its own), or None when ``value`` is not a pad's."""
    found = None
    pad = partitioner.producers.get(value.id)
    while pad is not None and pad.name == "pad" and not any(entry[2] for entry in pad.attrs["padding_config"]):
        if found is not None and not _same_fill(partitioner, found[2], pad.operands[1]):
            break
        config = [(low, high) for low, high, _ in pad.attrs["padding_config"]]
        if found is not None:
            config = [(low + more_low, high + more_high) for (low, high), (more_low, more_high) in zip(config, found[1])]
        found = (pad.operands[0], config, pad.operands[1])
        pad = partitioner.producers.get(pad.operands[0].id)
    return found


def _padded_source(partitioner, op: Op, wanted: TensorSharding):
    """The pad chain ``op`` (a slice) reads, when it can be read through: every dim a pad
    changes is one the slice's result is sharded on."""
    chain = _pad_chain(partitioner, op.operands[0])
    if chain is None:
        return None
    source, config, _ = chain
    if any(entry != (0, 0) and not wanted.dims[dim].axes for dim, entry in enumerate(config)):
        return None
    if partitioner.locals[source.id].unreduced or 0 in source.type.shape:
        return None
    return chain


def _source_target(local: Local, wanted: TensorSharding, changed) -> TensorSharding:
    """The source's layout: the result's axes on every dim, except a changed dim the source
    holds whole, which stays whole (each device cuts its window locally)."""
    dims = []
    for dim, target in enumerate(wanted.dims):
        whole = dim in changed and not local.sharding.dims[dim].axes
        dims.append(DimSharding(() if whole else tuple(target.axes)))
    return TensorSharding(wanted.mesh_name, tuple(dims))


def slice_through_pad(partitioner, op: Op, wanted: TensorSharding, strided):
    """A plan (``emit(builder) -> [Local]``) for the slice ``op`` that reads the pad's operand
    directly, or None when its operand is not a pad it can read through. ``strided`` cuts
    a static strided slice along one dim of a local value."""
    chain = _padded_source(partitioner, op, wanted)
    if chain is None:
        return None
    source, config, fill_value = chain
    starts, strides = op.attrs["start_indices"], op.attrs["strides"]
    limits = op.attrs["limit_indices"]
    changed = [dim for dim in range(op.result.type.rank)
               if tuple(config[dim]) != (0, 0) or (starts[dim], limits[dim], strides[dim])
               != (0, op.operands[0].type.shape[dim], 1)]

    def emit(builder: SpmdBuilder) -> list[Local]:
        local = partitioner.locals[source.id]
        target = _source_target(local, wanted, changed)
        value = reshard(builder, local, target, describe(op, 0)).value
        fill = reshard(builder, partitioner.locals[fill_value.id], TensorSharding(wanted.mesh_name, ()),
                       describe(op, 0)).value
        for dim in changed:
            axes = wanted.dims[dim].axes
            if not axes:
                # NOTE: only a slice changes a dim the result keeps whole (see _padded_source)
                value = strided(builder, value, dim, starts[dim], limits[dim], strides[dim])
                continue
            split = split_dim(builder, source.type.shape[dim], target.dims[dim].axes)
            out = split_dim(builder, op.result.type.shape[dim], axes)
            first = starts[dim] - config[dim][0]
            windows = [first + strides[dim] * j * out.shard for j in range(out.count)]
            width = strides[dim] * (out.shard - 1) + 1
            window = fetch(builder, value, dim, split, axes, windows, width, fill,
                           reason=f"slice of a pad along dim {dim} sharded over {[a.name for a in axes]}: halo rows")
            value = strided(builder, window, dim, 0, width, strides[dim])
        return [Local(value, wanted, op.result.type.shape)]

    return emit
