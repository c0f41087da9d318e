"""Turning a reshard into collectives by comparing axis lists per dim (Shardy's recipe).

Pending partial sums are reduced first (a reduce_scatter when the target shards a dim on the
same axes, else an all_reduce). Then per dim, with P the common prefix of the current and target
axes: an axis that moves from one dim to another is an all_to_all; the rest of the current
suffix is all_gathered; the rest of the target suffix is a local slice at the shard offset.
Dims that do not divide evenly are gathered whole, trimmed, and re-sliced with padding.
"""

from __future__ import annotations

import math

from meshjit.ir import DimSharding, SymbolRef, TensorSharding

from .spmd_builder import Local, SpmdBuilder


def _names(axes) -> tuple[str, ...]:
    return tuple(axis.name if axis.size is None else f"{axis.name}:({axis.pre_size}){axis.size}" for axis in axes)


def _count(axes, builder: SpmdBuilder) -> int:
    return math.prod(axis.resolved_size(builder.mesh) for axis in axes)


def _with(sharding: TensorSharding, dims=None, unreduced=None) -> TensorSharding:
    new_dims = sharding.dims if dims is None else tuple(DimSharding(tuple(axes)) for axes in dims)
    return TensorSharding(sharding.mesh_name, new_dims, sharding.replicated,
                          sharding.unreduced if unreduced is None else tuple(unreduced), sharding.reduction)


def _common_prefix(first, second) -> int:
    length = 0
    while length < min(len(first), len(second)) and first[length] == second[length]:
        length += 1
    return length


class Resharder:
    """Emits the collectives that take one Local to a target sharding."""

    def __init__(self, builder: SpmdBuilder, reason: str):
        self.builder = builder
        self.reason = reason

    def _collective(self, name: str, value, attrs):
        attrs = {"mesh": SymbolRef(self.builder.mesh_name), **attrs}
        return self.builder.emit1(name, [value], attrs, reason=self.reason)

    def divides(self, local: Local, dim: int, axes) -> bool:
        return local.global_shape[dim] % _count(axes, self.builder) == 0

    def reduce_pending(self, local: Local, target: TensorSharding) -> Local:
        pending = [axis for axis in local.unreduced if axis not in target.unreduced]
        if not pending:
            return local
        dims = [list(dim.axes) for dim in local.sharding.dims]
        value = local.value
        for dim, target_dim in enumerate(target.dims):
            prefix = _common_prefix(dims[dim], target_dim.axes)
            run = []
            for axis in target_dim.axes[prefix:]:
                if axis not in pending:
                    break
                run.append(axis)
            if prefix == len(dims[dim]) and run and self.divides(local, dim, dims[dim] + run):
                value = self._collective("reduce_scatter", value, {"axes": _names(run), "dim": dim,
                                                                  "reduction": local.sharding.reduction})
                dims[dim] = dims[dim] + run
                pending = [axis for axis in pending if axis not in run]
        if pending:
            value = self._collective("all_reduce", value, {"axes": _names(pending), "reduction": local.sharding.reduction})
        kept = [axis for axis in local.unreduced if axis in target.unreduced]
        return Local(value, _with(local.sharding, dims, kept), local.global_shape)

    def move_axes(self, local: Local, target: TensorSharding) -> Local:
        """all_to_all for an axis that is the last of one dim's current axes and the next of
        another dim's target axes, when both dims divide evenly."""
        dims = [list(dim.axes) for dim in local.sharding.dims]
        value = local.value
        changed = True
        while changed:
            changed = False
            for source in range(len(dims)):
                if not dims[source] or dims[source] == list(target.dims[source].axes[:len(dims[source])]):
                    continue
                axis = dims[source][-1]
                for destination in range(len(dims)):
                    wanted = target.dims[destination].axes
                    if destination == source or list(wanted[:len(dims[destination])]) != dims[destination]:
                        continue
                    if len(wanted) <= len(dims[destination]) or wanted[len(dims[destination])] != axis:
                        continue
                    if not (self.divides(local, source, dims[source]) and self.divides(local, destination, dims[destination] + [axis])):
                        continue
                    value = self._collective("all_to_all", value, {"axes": _names([axis]), "split_dim": destination,
                                                                   "concat_dim": source})
                    dims[source].pop()
                    dims[destination].append(axis)
                    changed = True
                    break
        return Local(value, _with(local.sharding, dims), local.global_shape)

    def gather(self, local: Local, target: TensorSharding) -> Local:
        dims = [list(dim.axes) for dim in local.sharding.dims]
        value = local.value
        for dim in range(len(dims)):
            prefix = _common_prefix(dims[dim], target.dims[dim].axes)
            even = self.divides(local, dim, dims[dim])
            removed = dims[dim][prefix:] if even else dims[dim]
            if not removed:
                continue
            value = self._collective("all_gather", value, {"axes": _names(removed), "dim": dim})
            dims[dim] = dims[dim][:len(dims[dim]) - len(removed)]
            if not even:
                value = self._trim(value, dim, local.global_shape[dim])
        return Local(value, _with(local.sharding, dims), local.global_shape)

    def _trim(self, value, dim: int, size: int):
        shape = value.type.shape
        if shape[dim] == size:
            return value
        return self.builder.emit1("slice", [value], {
            "start_indices": (0,) * len(shape),
            "limit_indices": tuple(size if d == dim else s for d, s in enumerate(shape)),
            "strides": (1,) * len(shape)})

    def slice_locally(self, local: Local, target: TensorSharding) -> Local:
        dims = [list(dim.axes) for dim in local.sharding.dims]
        value = local.value
        for dim in range(len(dims)):
            wanted = list(target.dims[dim].axes)
            if wanted == dims[dim]:
                continue
            added = wanted[len(dims[dim]):]
            total = _count(wanted, self.builder)
            chunk = -(-local.global_shape[dim] // total)
            current = value.type.shape[dim]
            if chunk * _count(added, self.builder) != current:
                # uneven: the dim is whole here (gather made sure); pad so every shard is full
                value = self._pad_to(value, dim, chunk * total)
                offset = self.builder.shard_offset(wanted, chunk)
            else:
                offset = self.builder.shard_offset(added, chunk)
            value = self._dynamic_slice(value, dim, offset, chunk)
            dims[dim] = wanted
        return Local(value, _with(local.sharding, dims), local.global_shape)

    def _pad_to(self, value, dim: int, size: int):
        extra = size - value.type.shape[dim]
        if extra <= 0:
            return value
        zero = self.builder.scalar(0, value.type.dtype)
        config = tuple((0, extra if d == dim else 0, 0) for d in range(value.type.rank))
        return self.builder.emit1("pad", [value, zero], {"padding_config": config})

    def _dynamic_slice(self, value, dim: int, offset, chunk: int):
        zero = self.builder.scalar(0, "i32")
        starts = [offset if d == dim else zero for d in range(value.type.rank)]
        sizes = tuple(chunk if d == dim else s for d, s in enumerate(value.type.shape))
        return self.builder.emit1("dynamic_slice", [value, *starts], {"slice_sizes": sizes})


def reshard(builder: SpmdBuilder, local: Local, target: TensorSharding, reason: str) -> Local:
    """``local`` laid out as ``target`` (dims and unreduced axes), with the collectives that takes."""
    if [dim.axes for dim in local.sharding.dims] == [dim.axes for dim in target.dims] and \
            tuple(local.unreduced) == tuple(target.unreduced):
        return local
    resharder = Resharder(builder, reason)
    local = resharder.reduce_pending(local, target)
    local = resharder.move_axes(local, target)
    local = resharder.gather(local, target)
    local = resharder.slice_locally(local, target)
    return Local(local.value, _with(target, [dim.axes for dim in target.dims], local.unreduced), local.global_shape)
