"""Turning a reshard into collectives by comparing axis lists per dim (Shardy's recipe).

Pending partial results are reduced first (a reduce_scatter when the target shards a dim further
on the pending axes, after a local split over free axes the target lists before them; else an
all_reduce). The same tiling in another device order is a
collective_permute. Then an axis that moves from the end of one dim's list to the next place of
another's is an all_to_all (once the other dim has gathered what it must drop); the rest of each
dim's list past the common prefix with the target is all_gathered; the rest of the target's list
is a local dynamic_slice at the shard offset. Dims that trade axes (``[x, y]`` to ``[y, x]``)
wait on each other's room for their all_to_alls; one of them gathers its axis first.

A dim of size n over k devices has local size ceil(n / k), the tail of the last shards padding.
Splitting a shard further (or joining shards) stays local to a device group only when the sizes
line up, ``ceil(n / |P|) == ceil(n / |P + E|) * |E|``; a whole dim can always be padded to line
up. Otherwise the dim is gathered whole first; a dim gathered whole and sliced again is an
involuntary full rematerialisation, which the builder records and the partitioner warns about.
Collectives over sub-axes go through ``axis_blocks``.
"""

from __future__ import annotations

import math

import numpy as np

from meshjit.ir import DimSharding, SymbolRef, TensorSharding

from ..analysis import cost
from .axis_blocks import all_reduce_over_parts, gather_dim_over_parts
from .spmd_builder import Local, SpmdBuilder
from .tile_permute import tile_permute


def _names(axes) -> tuple[str, ...]:
    return tuple(axis.name for axis in axes)


def _has_sub_axis(axes) -> bool:
    return any(axis.is_sub_axis for axis in axes)


def _common_prefix(first, second) -> int:
    length = 0
    while length < min(len(first), len(second)) and first[length] == second[length]:
        length += 1
    return length


class Resharder:
    """Takes one Local to a target sharding step by step, emitting what each step needs."""

    def __init__(self, builder: SpmdBuilder, local: Local, reason: str):
        self.source = local.sharding
        self.builder = builder
        self.mesh = builder.mesh
        self.reason = reason
        self.value = local.value
        self.shape = local.global_shape
        self.dims = [list(dim.axes) for dim in local.sharding.dims]
        self.unreduced = list(local.unreduced)
        self.reduction = local.sharding.reduction
        self.gathered_whole: set[int] = set()

    def result(self, target: TensorSharding) -> Local:
        dims = tuple(DimSharding(tuple(axes)) for axes in self.dims)
        reduction = self.reduction if self.unreduced else "sum"
        sharding = TensorSharding(target.mesh_name, dims, target.replicated, tuple(self.unreduced), reduction)
        return Local(self.value, sharding, self.shape)

    # -- sizes and small local rewrites -----------------------------------------------------
    def count(self, axes) -> int:
        return math.prod(axis.resolved_size(self.mesh) for axis in axes)

    def local_size(self, dim: int, axes) -> int:
        return -(-self.shape[dim] // self.count(axes))

    def lines_up(self, dim: int, prefix, extra) -> bool:
        """A shard over ``prefix`` is exactly ``|extra|`` shards over ``prefix + extra``, i.e.
        ``ceil(n / |P|) == ceil(n / |P + E|) * |E|``; as ``ceil(ceil(n / |P|) / |E|)`` is
        ``ceil(n / |P + E|)``, that holds when ``|E|`` divides the local size."""
        return self.local_size(dim, prefix) % self.count(extra) == 0

    def can_split(self, dim: int, prefix, extra) -> bool:
        return not prefix or self.lines_up(dim, prefix, extra)

    def resize(self, dim: int, size: int) -> None:
        """Pad the local dim (see SpmdBuilder.padding_value), or cut its tail, to ``size``."""
        shape = self.value.type.shape
        if shape[dim] < size:
            fill = self.builder.padding_value(self.value.type.dtype)
            config = tuple((0, size - shape[dim] if d == dim else 0, 0) for d in range(len(shape)))
            self.value = self.builder.emit1("pad", [self.value, fill], {"padding_config": config})
        elif shape[dim] > size:
            self.value = self.builder.emit1("slice", [self.value], {
                "start_indices": (0,) * len(shape),
                "limit_indices": tuple(size if d == dim else s for d, s in enumerate(shape)),
                "strides": (1,) * len(shape)})

    def fit_whole(self, dim: int, extra) -> None:
        """Pad a whole (unsharded) dim so that it splits into ``|extra|`` equal shards."""
        self.resize(dim, self.local_size(dim, extra) * self.count(extra))

    def collective(self, name: str, attrs) -> None:
        attrs = {"mesh": SymbolRef(self.builder.mesh_name), **attrs}
        self.value = self.builder.emit1(name, [self.value], attrs, reason=self.reason)

    def in_play(self) -> list:
        return [axis for axes in self.dims for axis in axes] + self.unreduced

    def is_free(self, axis, pending) -> bool:
        """No dim, pending sum or unreduced axis uses any part of ``axis`` (a sub-axis of an
        axis in play is not free, nor is the whole axis of a sub-axis in play)."""
        return not any(axis.overlaps(other, self.mesh) for other in self.in_play() + list(pending))

    # -- the steps --------------------------------------------------------------------------
    def reduce_pending(self, target: TensorSharding) -> None:
        pending = [axis for axis in self.unreduced if axis not in target.unreduced]
        if not pending:
            return
        self.unreduced = [axis for axis in self.unreduced if axis in target.unreduced]
        if _has_sub_axis(pending):
            self.value = all_reduce_over_parts(self.builder, self.value, pending, self.in_play(),
                                               self.reduction, self.reason)
            return
        for dim, wanted in enumerate(target.dims):
            scattered = self._scatter_into(dim, list(wanted.axes), pending)
            pending = [axis for axis in pending if axis not in scattered]
        if pending:
            self.collective("all_reduce", {"axes": _names(pending), "reduction": self.reduction})

    def _scatter_into(self, dim: int, wanted: list, pending: list) -> list:
        """Reduce-scatter the pending axes ``dim``'s target lists next; axes it lists before
        them that nothing holds yet are split off locally first, so that each device reduces
        only its part. Returns the axes reduced."""
        current = self.dims[dim]
        if wanted[:len(current)] != current:
            return []
        rest = wanted[len(current):]
        local = []
        while rest and self.is_free(rest[0], pending):
            local.append(rest.pop(0))
        run = []
        while rest and rest[0] in pending:
            run.append(rest.pop(0))
        if not run or (local and not self.can_split(dim, current, local)):
            return []
        if (current or local) and not self.lines_up(dim, current + local, run):
            return []
        if local:
            self.split_locally(dim, local)
        elif not current:
            self.fit_whole(dim, run)
        self.collective("reduce_scatter", {"axes": _names(run), "dim": dim, "reduction": self.reduction})
        self.dims[dim] = current + local + run
        return run

    def add_unreduced(self, target: TensorSharding) -> None:
        """Pending axes the target asks for: a sum keeps the value on the devices at index 0
        along them and zeros elsewhere; max and min are unchanged by repeating it."""
        added = [axis for axis in target.unreduced if axis not in self.unreduced]
        if not added:
            return
        self.unreduced += added
        self.reduction = target.reduction
        if target.reduction != "sum":
            return
        builder = self.builder
        first = builder.emit1("compare", [builder.shard_position(added), builder.scalar(0, "i32")], {"direction": "eq"})
        zero = builder.broadcast_scalar(builder.scalar(0, self.value.type.dtype), self.value.type.shape)
        self.value = builder.emit1("select", [builder.broadcast_scalar(first, self.value.type.shape), self.value, zero])

    def permute_devices(self, target: TensorSharding) -> None:
        """collective_permute when the target cuts every dim into as many shards, over whole
        axes, in another device order: each device fetches the block it is to hold from a
        device holding it (itself where it can)."""
        current_axes = [axis for dim in self.dims for axis in dim]
        target_axes = [axis for dim in target.dims for axis in dim.axes]
        if not current_axes or _has_sub_axis(current_axes + target_axes):
            return
        if any(self.count(current) != self.count(dim.axes) for current, dim in zip(self.dims, target.dims)):
            return
        names = [name for name in self.mesh.axis_names if name in _names(current_axes + target_axes)]
        holds = self._blocks(self.dims, names)
        needs = self._blocks([dim.axes for dim in target.dims], names)
        # NOTE: a device keeps its block where it holds what it needs; the others take, in
        # device order, the holders of what they need among the devices not keeping theirs
        # (as many as need each block, since every dim keeps its shard count)
        moving = np.flatnonzero(holds != needs)
        takers = moving[np.argsort(needs[moving], kind="stable")]
        givers = moving[np.argsort(holds[moving], kind="stable")]
        assert np.array_equal(holds[givers], needs[takers]), "collective_permute: unmatched blocks"
        sources = np.arange(len(holds))
        sources[takers] = givers
        if len(moving):
            pairs = tuple((int(source), destination) for destination, source in enumerate(sources))
            self.collective("collective_permute", {"axes": tuple(names), "pairs": pairs})
        self.dims = [list(dim.axes) for dim in target.dims]

    def _blocks(self, dims, names) -> np.ndarray:
        """For every device of the mesh over ``names`` (in mesh order), the number of the block
        it holds when laid out as ``dims``: its blocks of every dim in one mixed-radix number."""
        sizes = [self.mesh.axis_size(name) for name in names]
        coordinates = dict(zip(names, np.indices(sizes).reshape(len(names), -1)))
        number = np.zeros(math.prod(sizes), np.int64)
        for axes in dims:
            for axis in axes:
                number = number * axis.resolved_size(self.mesh) + coordinates[axis.name]
        return number

    def move_axes(self, target: TensorSharding) -> None:
        """all_to_all for an axis that ends one dim's list and is the next of another dim's
        target list, while the sizes line up on both sides."""
        moved = True
        while moved:
            moved = any(self._move_one(source, destination, target)
                        for source in range(len(self.dims)) for destination in range(len(self.dims))
                        if source != destination)

    def _move_one(self, source: int, destination: int, target: TensorSharding) -> bool:
        current, have = self.dims[source], self.dims[destination]
        if not current or current == list(target.dims[source].axes[:len(current)]):
            return False
        axis, wanted = current[-1], list(target.dims[destination].axes)
        if axis.is_sub_axis or wanted[:len(have)] != have or wanted[len(have):len(have) + 1] != [axis]:
            return False
        if not (self.can_split(source, current[:-1], [axis]) and self.can_split(destination, have, [axis])):
            return False
        if not have:
            self.fit_whole(destination, [axis])
        self.collective("all_to_all", {"axes": _names([axis]), "split_dim": destination, "concat_dim": source})
        self.dims[source], self.dims[destination] = current[:-1], have + [axis]
        if not self.dims[source]:
            self.resize(source, self.shape[source])
        return True

    def gather_suffix(self, dim: int, keep: int) -> None:
        """All-gather the axes of ``dim`` past the first ``keep``; the dim then holds a shard
        over those ``keep`` axes (the whole dim, trimmed, when ``keep`` is 0)."""
        removed = self.dims[dim][keep:]
        if not keep:
            self.gathered_whole.add(dim)
        if _has_sub_axis(removed):
            self.value = gather_dim_over_parts(self.builder, self.value, dim, removed, self.in_play(), self.reason)
        else:
            self.collective("all_gather", {"axes": _names(removed), "dim": dim})
        self.dims[dim] = self.dims[dim][:keep]
        if not keep:
            self.resize(dim, self.shape[dim])

    def gather(self, target: TensorSharding, *, defer_moves: bool = False) -> None:
        """Gather every dim's axes past its common prefix with the target; with
        ``defer_moves``, leave a last axis that another dim wants next, for an all_to_all once
        that dim has made room."""
        for dim, wanted in enumerate(target.dims):
            keep = _common_prefix(self.dims[dim], wanted.axes)
            if keep == len(self.dims[dim]) or (defer_moves and self._waiting(dim, target)):
                continue
            self._gather_past(dim, keep)

    def _gather_past(self, dim: int, keep: int) -> None:
        current = self.dims[dim]
        if keep and not self.lines_up(dim, current[:keep], current[keep:]):
            keep = 0
        self.gather_suffix(dim, keep)

    def _waiting(self, dim: int, target: TensorSharding) -> bool:
        """``dim`` keeps all but its last axis, which another dim wants next."""
        current = self.dims[dim]
        keep = _common_prefix(current, target.dims[dim].axes)
        return keep == len(current) - 1 and self._wanted_next(current[-1], target)

    def break_move_cycles(self, target: TensorSharding) -> None:
        """Dims that each hold the axis another wants next (two dims trading axes, as from
        ``[x, y]`` to ``[y, x]``) wait on each other's room: gather the cheapest waiting axis (a
        gather the last step would make anyway) and let the others all_to_all into the room it
        leaves. Gathering them all would hold the whole array on every device."""
        while True:
            waiting = [dim for dim in range(len(self.dims)) if self._waiting(dim, target)]
            if not waiting:
                return
            dim = min(waiting, key=lambda d: (self.count(self.dims[d][-1:]), d))
            self._gather_past(dim, len(self.dims[dim]) - 1)
            self.move_axes(target)

    def _wanted_next(self, axis, target: TensorSharding) -> bool:
        """Some dim's target lists ``axis`` right after what that dim keeps of its axes."""
        for current, wanted in zip(self.dims, target.dims):
            keep = _common_prefix(current, wanted.axes)
            if wanted.axes[keep:keep + 1] == (axis,):
                return True
        return False

    def rematerialize(self, dim: int, target: TensorSharding) -> None:
        self.builder.rematerializations.append(
            f"{self.reason}: dim {dim} of a {list(self.shape)} value is gathered whole to go from "
            f"{self.source} to {target}")

    def slice(self, target: TensorSharding) -> None:
        for dim, wanted in enumerate(target.dims):
            wanted = list(wanted.axes)
            current = self.dims[dim]
            if current == wanted:
                continue
            if not self.can_split(dim, current, wanted[len(current):]):
                self.gather_suffix(dim, 0)
                current = []
            if dim in self.gathered_whole and self.source.dims[dim].axes:
                self.rematerialize(dim, target)
            self.split_locally(dim, wanted[len(current):])

    def split_locally(self, dim: int, added) -> None:
        """Keep this device's part of ``dim`` split further over ``added``: a dynamic_slice at
        the shard offset (a whole dim is padded to line up first)."""
        if not self.dims[dim]:
            self.fit_whole(dim, added)
        wanted = self.dims[dim] + list(added)
        chunk = self.local_size(dim, wanted)
        zero = self.builder.scalar(0, "i32")
        starts = [self.builder.shard_offset(added, chunk) if d == dim else zero for d in range(len(self.dims))]
        sizes = tuple(chunk if d == dim else s for d, s in enumerate(self.value.type.shape))
        self.value = self.builder.emit1("dynamic_slice", [self.value, *starts], {"slice_sizes": sizes})
        self.dims[dim] = wanted

def same_layout(local: Local, target: TensorSharding) -> bool:
    return ([list(dim.axes) for dim in local.sharding.dims] == [list(dim.axes) for dim in target.dims]
            and tuple(local.unreduced) == tuple(target.unreduced))


def _reordered(local: Local, target: TensorSharding) -> TensorSharding | None:
    """``target`` with each dim's axes reordered: the axes the dim holds and keeps first, in
    their present order, then the ones that come in. Offered when the value already holds every
    axis the target uses (whole axes, nothing pending) and the order differs: moving the axes
    (all_to_alls) and then renumbering the devices (one collective_permute) may beat gathering
    a dim to re-split it in the target's order (``P('y', 'x')`` to ``P(('x', 'y'), None)``)."""
    current = [list(dim.axes) for dim in local.sharding.dims]
    held = [axis for axes in current for axis in axes]
    wanted = [axis for dim in target.dims for axis in dim.axes]
    if local.unreduced or target.unreduced or _has_sub_axis(held + wanted) or set(held) != set(wanted):
        return None
    dims = []
    for have, goal in zip(current, target.dims):
        kept = [axis for axis in have if axis in goal.axes]
        dims.append(DimSharding(tuple(kept + [axis for axis in goal.axes if axis not in kept])))
    if [dim.axes for dim in dims] == [tuple(dim.axes) for dim in target.dims]:
        return None
    return TensorSharding(target.mesh_name, tuple(dims))


def _sent(builder: SpmdBuilder, emitted: SpmdBuilder | None = None) -> float:
    """Bytes each device sends in the collectives ``builder`` holds (the ring model), but for
    those ``emitted`` already holds (the same collective of the same value: cse merges them)."""
    done = set() if emitted is None else {_collective_key(op) for op in emitted.ops}
    total = 0.0
    for op in builder.ops:
        if op.name in ("all_gather", "all_to_all", "all_reduce", "reduce_scatter", "collective_permute"):
            if _collective_key(op) in done:
                continue
            group = math.prod(builder.mesh.axis_size(name) for name in op.attrs.get("axes", ()))
            total += cost.collective_bytes(op.name, cost.value_bytes(op.operands[0]), cost.value_bytes(op.result),
                                           group)
    return total


def _collective_key(op) -> tuple:
    return op.name, tuple(value.id for value in op.operands), repr(sorted(op.attrs.items()))


def reshard(builder: SpmdBuilder, local: Local, target: TensorSharding, reason: str) -> Local:
    """``local`` laid out as ``target`` (dims and unreduced axes), with the collectives that
    takes: through the target's axes in the order the value holds them, then a renumbering of
    the devices, where that sends fewer bytes."""
    if same_layout(local, target):
        return local
    tiled = _cheaper_tile_permute(builder, local, target, reason)
    if tiled is not None:
        return tiled
    reordered = _reordered(local, target)
    if reordered is not None:
        direct, through = (SpmdBuilder(builder.mesh_name, builder.mesh) for _ in range(2))
        _reshard_steps(direct, local, target, reason)
        _reshard_steps(through, _reshard_steps(through, local, reordered, reason), target, reason)
        if _sent(through) < _sent(direct):
            return _reshard_steps(builder, _reshard_steps(builder, local, reordered, reason), target, reason)
    return _reshard_steps(builder, local, target, reason)


def _cheaper_tile_permute(builder: SpmdBuilder, local: Local, target: TensorSharding, reason: str):
    """The tile permute (tile_permute.py) emitted into ``builder`` when it sends fewer bytes than
    the axis-by-axis reshard, else None (nothing emitted)."""
    trial = SpmdBuilder(builder.mesh_name, builder.mesh)
    if tile_permute(trial, local, target, reason) is None:
        return None
    direct = SpmdBuilder(builder.mesh_name, builder.mesh)
    _reshard_steps(direct, local, target, reason)
    return tile_permute(builder, local, target, reason) if _sent(trial) < _sent(direct, builder) else None


def _reshard_steps(builder: SpmdBuilder, local: Local, target: TensorSharding, reason: str) -> Local:
    if same_layout(local, target):
        return local
    resharder = Resharder(builder, local, reason)
    resharder.reduce_pending(target)
    resharder.permute_devices(target)
    resharder.move_axes(target)
    resharder.gather(target, defer_moves=True)
    resharder.move_axes(target)
    resharder.break_move_cycles(target)
    resharder.gather(target)
    resharder.slice(target)
    resharder.add_unreduced(target)
    return resharder.result(target)
