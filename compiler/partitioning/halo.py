"""Halo exchange: each device fetches a window of a dim split over mesh axes, taking the rows it
does not hold from the devices that do with ``collective_permute`` (GSPMD's halo exchange;
Shardy's permutation factors), never gathering the dim.

A fetch is given, per shard position ``j``, the global start of the window device ``j``
wants and the window's width. The plan is worked out statically: every window row maps to a
source shard and row (or to nothing, outside the dim, where the fill value goes; a cyclic
window wraps around). Consecutive rows from one source form a *run*; runs are packed into
rounds in which every device sends and receives at most one block, one collective_permute
per round. When every device's runs look alike (the even case: a conv's halo, a roll), the
blocks are static slices concatenated in order; otherwise per-device offsets are read from
small tables indexed by the device's shard position, blocks are placed with
dynamic_update_slice and chosen with masks. Rows outside the dim (and the padding of uneven
shards) are then replaced by the fill value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from meshjit.ir import SymbolRef, Value

from .spmd_builder import SpmdBuilder


@dataclass(frozen=True)
class SplitDim:
    """A dim of ``size`` elements split over ``axes`` into ``count`` shards of ``shard`` rows
    (the last ones padded when the size does not divide)."""

    size: int
    axes: tuple
    shard: int
    count: int


def split_dim(builder: SpmdBuilder, size: int, axes) -> SplitDim:
    count = builder.shard_count(axes) if axes else 1
    return SplitDim(size, tuple(axes), -(-size // count), count)


@dataclass
class _Run:
    receiver: int  # shard position of the device that wants the rows
    sender: int  # shard position of the device that holds them
    source_row: int  # first row in the sender's shard
    window_row: int  # where it goes in the receiver's window
    length: int


@dataclass
class _Round:
    """Runs with every device sending and receiving at most once: one collective_permute (none
    when every run stays on its device)."""

    runs: list[_Run] = field(default_factory=list)
    # NOTE: who already sends and receives, so that fitting a run is a lookup, not a scan of
    # the round (a round holds a run per device: quadratic in the devices otherwise)
    senders: set[int] = field(default_factory=set)
    receivers: set[int] = field(default_factory=set)

    def __post_init__(self):
        self.senders.update(run.sender for run in self.runs)
        self.receivers.update(run.receiver for run in self.runs)

    @property
    def local(self) -> bool:
        return all(run.sender == run.receiver for run in self.runs)

    def fits(self, run: _Run) -> bool:
        return run.sender not in self.senders and run.receiver not in self.receivers

    def add(self, run: _Run) -> None:
        self.runs.append(run)
        self.senders.add(run.sender)
        self.receivers.add(run.receiver)

    @property
    def width(self) -> int:
        return max(run.length for run in self.runs)


def _runs(dim: SplitDim, starts, width: int, cyclic: bool) -> list[_Run]:
    """Every device's window rows, grouped into runs of consecutive rows of one source shard
    (the device's own rows when the dim is not split)."""
    runs = []
    for receiver, start in enumerate(starts):
        current = None
        for row in range(width):
            position = start + row
            if cyclic:
                position %= dim.size
            elif not 0 <= position < dim.size:
                current = None
                continue
            sender, source_row = divmod(position, dim.shard) if dim.axes else (receiver, position)
            if current and current.sender == sender and current.source_row + current.length == source_row \
                    and current.window_row + current.length == row:
                current.length += 1
                continue
            current = _Run(receiver, sender, source_row, row, 1)
            runs.append(current)
    return runs


def _rounds(runs: list[_Run]) -> list[_Round]:
    """Runs staying on their device first, then the others packed greedily into rounds."""
    local = [run for run in runs if run.sender == run.receiver]
    rounds = []
    for run in runs:
        if run.sender == run.receiver:
            continue
        for candidate in rounds:
            if candidate.fits(run):
                candidate.add(run)
                break
        else:
            rounds.append(_Round([run]))
    local_rounds = []
    while local:
        # a device may keep several runs of its own rows: one local round per run
        taken, rest, seen = [], [], set()
        for run in local:
            (rest if run.receiver in seen else taken).append(run)
            seen.add(run.receiver)
        local_rounds.append(_Round(taken))
        local = rest
    return local_rounds + rounds


class HaloFetch:
    """Emits one fetch: the ops that give every device its window of ``value`` along ``dim``;
    ``receivers`` are the axes whose shard position numbers the devices' windows."""

    def __init__(self, builder: SpmdBuilder, value: Value, dim: int, split: SplitDim, receivers, reason: str):
        self.builder = builder
        self.value = value
        self.dim = dim
        self.split = split
        self.receivers = tuple(receivers)
        self.reason = reason

    @property
    def count(self) -> int:
        return self.builder.shard_count(self.receivers) if self.receivers else 1

    # -- per-device numbers ------------------------------------------------------------------
    def per_device(self, numbers) -> Value:
        """An i32 scalar that is ``numbers[j]`` on the device at shard position ``j``."""
        numbers = [int(number) for number in numbers]
        if len(set(numbers)) == 1:
            return self.builder.scalar(numbers[0], "i32")
        step = numbers[1] - numbers[0]
        if all(number == numbers[0] + step * j for j, number in enumerate(numbers)):
            # NOTE: an affine table is arithmetic on the shard position
            scaled = self.builder.emit1("mul", [self.builder.shard_position(self.receivers),
                                                self.builder.scalar(step, "i32")])
            if not numbers[0]:
                return scaled
            return self.builder.emit1("add", [scaled, self.builder.scalar(numbers[0], "i32")])
        table = self.builder.constant(np.asarray(numbers, np.int32), "i32")
        entry = self.builder.emit1("dynamic_slice", [table, self.builder.shard_position(self.receivers)],
                                   {"slice_sizes": (1,)})
        return self.builder.emit1("reshape", [entry], {"new_sizes": ()})

    def _shape_with(self, value: Value, size: int) -> tuple[int, ...]:
        return tuple(size if d == self.dim else extent for d, extent in enumerate(value.type.shape))

    def rows(self, value: Value, start: int, stop: int) -> Value:
        shape = value.type.shape
        if (start, stop) == (0, shape[self.dim]):
            return value
        return self.builder.emit1("slice", [value], {
            "start_indices": tuple(start if d == self.dim else 0 for d in range(len(shape))),
            "limit_indices": tuple(stop if d == self.dim else extent for d, extent in enumerate(shape)),
            "strides": (1,) * len(shape)})

    def dynamic_rows(self, value: Value, start: Value, size: int) -> Value:
        zero = self.builder.scalar(0, "i32")
        starts = [start if d == self.dim else zero for d in range(value.type.rank)]
        return self.builder.emit1("dynamic_slice", [value, *starts], {"slice_sizes": self._shape_with(value, size)})

    def row_positions(self, shape, first: Value) -> Value:
        """``first + i`` at row ``i`` of a value of ``shape``, as i32."""
        iota = self.builder.emit1("iota", [], {"dtype": "i32", "shape": tuple(shape), "dimension": self.dim})
        return self.builder.emit1("add", [iota, self.builder.broadcast_scalar(first, shape)])

    # -- moving blocks ------------------------------------------------------------------------
    def send(self, round_: _Round) -> Value:
        """Each sender's block of ``round_.width`` rows, moved to its receiver."""
        width = round_.width
        offsets = [0] * self.count
        for run in round_.runs:
            offsets[run.sender] = min(run.source_row, self.split.shard - width)
        if len({offsets[run.sender] for run in round_.runs}) == 1:
            start = offsets[round_.runs[0].sender]
            block = self.rows(self.value, start, start + width)
        else:
            block = self.dynamic_rows(self.value, self.per_device(offsets), width)
        if round_.local:
            return block, offsets
        pairs = {(run.sender, run.receiver) for run in round_.runs}
        return self.permute(block, pairs), offsets

    def permute(self, block: Value, shard_pairs) -> Value:
        names, member_pairs = device_pairs(self.builder, self.split.axes, shard_pairs)
        return self.builder.emit1("collective_permute", [block], {
            "axes": names, "pairs": member_pairs, "mesh": SymbolRef(self.builder.mesh_name)}, reason=self.reason)


def device_pairs(builder: SpmdBuilder, axes, shard_pairs) -> tuple[tuple[str, ...], tuple[tuple[int, int], ...]]:
    """The mesh axes a collective_permute runs over and its (source, target) group member
    pairs, for pairs of shard positions over ``axes`` (possibly sub-axes): a member sends to
    the member holding the target shard and agreeing on every other coordinate.

    Worked out on arrays over the group's members (one per device along the axes), not per
    member in Python."""
    mesh = builder.mesh
    names = tuple(name for name in mesh.axis_names if any(axis.name == name for axis in axes))
    sizes = [mesh.axis_size(name) for name in names]
    # NOTE: members are numbered row-major over ``names``, as the group orders them
    members = np.arange(math.prod(sizes))
    coordinates = dict(zip(names, np.unravel_index(members, sizes)))
    position = 0
    for axis in axes:
        position = position * axis.resolved_size(mesh) + _axis_index(axis, coordinates[axis.name], mesh)
    # NOTE: a member's other coordinates (``rest``) pick its row; ``position`` its column
    rest = np.ravel_multi_index([_without(axes, name, coordinates[name], mesh) for name in names], sizes)
    member_at = np.full((len(members), math.prod(axis.resolved_size(mesh) for axis in axes)), -1)
    member_at[rest, position] = members
    member_at = member_at[member_at[:, 0] >= 0]
    senders, receivers = zip(*shard_pairs) if shard_pairs else ((), ())
    sources = member_at[:, list(senders)].reshape(-1)
    targets = member_at[:, list(receivers)].reshape(-1)
    order = np.argsort(targets, kind="stable")
    return names, tuple(zip(sources[order].tolist(), targets[order].tolist()))


def _axis_index(axis, coordinate: np.ndarray, mesh) -> np.ndarray:
    """The index along ``axis`` (a mesh axis or a part of one) of devices at ``coordinate``
    along its mesh axis (``AxisRef.index``, on arrays)."""
    if axis.size is None:
        return coordinate
    post = mesh.axis_size(axis.name) // (axis.pre_size * axis.size)
    return (coordinate // post) % axis.size


def _without(axes, name: str, coordinate, mesh):
    """``coordinate`` along mesh axis ``name`` with the digits of the parts in ``axes`` zeroed
    (an int or an array of them)."""
    for axis in axes:
        if axis.name != name:
            continue
        if axis.size is None:
            return coordinate * 0
        post = mesh.axis_size(name) // (axis.pre_size * axis.size)
        coordinate = coordinate - ((coordinate // post) % axis.size) * post
    return coordinate


def fetch(builder: SpmdBuilder, value: Value, dim: int, split: SplitDim, receivers, starts, width: int,
          fill: Value | None, *, cyclic: bool = False, reason: str) -> Value:
    """Every device's window of ``width`` rows of ``value`` along ``dim``: global rows from
    ``starts[j]`` at the device with shard position ``j`` over ``receivers`` (the axes ``dim``
    is split over, or any axes when it is not split), wrapping around when ``cyclic``. Rows
    outside the dim are ``fill`` (a scalar)."""
    if split.axes and tuple(split.axes) != tuple(receivers):
        raise ValueError(f"halo fetch: a dim split over {split.axes} serves windows numbered over {receivers}")
    starts = [int(start) for start in starts]
    mover = HaloFetch(builder, value, dim, split, receivers, reason)
    rounds = _rounds(_runs(split, starts, width, cyclic))
    if not rounds:
        window = builder.broadcast_scalar(builder.scalar(0, value.type.dtype), mover._shape_with(value, width))
    elif _alike(rounds, split, starts, width, cyclic, mover.count):
        window = _concatenated(mover, rounds, width)
    else:
        window = _placed(mover, rounds, width)
    return window if cyclic else _fill_outside(mover, window, starts, width, fill)


def _outside(split: SplitDim, start: int, rows) -> bool:
    return all(not 0 <= start + row < split.size for row in rows)


def _alike(rounds: list[_Round], split: SplitDim, starts, width: int, cyclic: bool, count: int) -> bool:
    """Every device's window is tiled the same way: each round brings the same rows (from the
    same place in its sender's shard) to every device, or rows outside the dim where a device
    gets nothing; the rounds tile the window in order."""
    if not rounds:
        return False
    for round_ in rounds:
        shapes = {(run.source_row, run.window_row, run.length) for run in round_.runs}
        if len(shapes) != 1:
            return False
        (_, window_row, length), = shapes
        present = {run.receiver for run in round_.runs}
        for receiver in range(count):
            if receiver not in present and (cyclic or not _outside(split, starts[receiver],
                                                                   range(window_row, window_row + length))):
                return False
    spans = sorted((round_.runs[0].window_row, round_.runs[0].length) for round_ in rounds)
    position = spans[0][0]
    for row, length in spans:
        if row != position:
            return False
        position += length
    gaps = list(range(spans[0][0])) + list(range(position, width))
    return not gaps or not cyclic and all(_outside(split, start, gaps) for start in starts)


def _concatenated(mover: HaloFetch, rounds: list[_Round], width: int) -> Value:
    pieces = []
    for round_ in sorted(rounds, key=lambda item: item.runs[0].window_row):
        block, offsets = mover.send(round_)
        run = round_.runs[0]
        skip = run.source_row - offsets[run.sender]
        pieces.append((run.window_row, mover.rows(block, skip, skip + run.length) if skip or run.length != round_.width
                       else block))
    first, last = pieces[0][0], pieces[-1][0] + pieces[-1][1].type.shape[mover.dim]
    values = [piece for _, piece in pieces]
    builder = mover.builder
    shape = mover._shape_with(values[0], 0)
    if first:
        values.insert(0, builder.broadcast_scalar(builder.scalar(0, mover.value.type.dtype),
                                                  tuple(first if d == mover.dim else s for d, s in enumerate(shape))))
    if last < width:
        values.append(builder.broadcast_scalar(builder.scalar(0, mover.value.type.dtype),
                                               tuple(width - last if d == mover.dim else s for d, s in enumerate(shape))))
    if len(values) == 1:
        return values[0]
    return builder.emit1("concatenate", values, {"dimension": mover.dim})


def _placed(mover: HaloFetch, rounds: list[_Round], width: int) -> Value:
    """The general case: each round's block written at the device's own offset into a buffer,
    then its rows chosen by a mask of the device's own bounds."""
    builder = mover.builder
    count = mover.count
    widest = max(round_.width for round_ in rounds)
    shape = mover._shape_with(mover.value, width)
    dtype = mover.value.type.dtype
    window = builder.broadcast_scalar(builder.scalar(0, dtype), shape)
    for round_ in rounds:
        block, offsets = mover.send(round_)
        at, low, high = [widest] * count, [0] * count, [0] * count
        for run in round_.runs:
            at[run.receiver] = run.window_row - (run.source_row - offsets[run.sender]) + widest
            low[run.receiver], high[run.receiver] = run.window_row, run.window_row + run.length
        buffer = builder.broadcast_scalar(builder.scalar(0, dtype), mover._shape_with(mover.value, width + 2 * widest))
        zero = builder.scalar(0, "i32")
        starts = [mover.per_device(at) if d == mover.dim else zero for d in range(len(shape))]
        written = builder.emit1("dynamic_update_slice", [buffer, block, *starts])
        placed = mover.rows(written, widest, widest + width)
        rows = mover.row_positions(shape, builder.scalar(0, "i32"))
        above = builder.emit1("compare", [rows, builder.broadcast_scalar(mover.per_device(low), shape)],
                              {"direction": "ge"})
        below = builder.emit1("compare", [rows, builder.broadcast_scalar(mover.per_device(high), shape)],
                              {"direction": "lt"})
        chosen = builder.emit1("and", [above, below])
        window = builder.emit1("select", [chosen, placed, window])
    return window


def _fill_outside(mover: HaloFetch, window: Value, starts, width: int, fill: Value | None) -> Value:
    """Rows of the window outside ``[0, size)`` replaced by ``fill``."""
    split = mover.split
    if all(0 <= start and start + width <= split.size for start in starts):
        # NOTE: the windows stay inside the dim: no row needs the fill value
        return window
    if fill is None:
        raise ValueError("halo fetch: windows leave the dim, and no fill value was given")
    builder = mover.builder
    shape = window.type.shape
    positions = mover.row_positions(shape, mover.per_device(starts))
    low = builder.emit1("compare", [positions, builder.broadcast_scalar(builder.scalar(0, "i32"), shape)],
                        {"direction": "ge"})
    high = builder.emit1("compare", [positions, builder.broadcast_scalar(builder.scalar(split.size, "i32"), shape)],
                         {"direction": "lt"})
    inside = builder.emit1("and", [low, high])
    return builder.emit1("select", [inside, window, builder.broadcast_scalar(fill, shape)])


def dilated_window(builder: SpmdBuilder, value: Value, dim: int, split: SplitDim, receivers, firsts, length: int,
                   dilation: int, fill: Value, *, reason: str) -> Value:
    """Every device's ``length`` rows of the operand dilated by ``dilation`` (``dilation - 1``
    fill values between elements) and extended with fill values on both sides, from position
    ``firsts[j]`` (position ``dilation * i`` holds element ``i``): the input window of a pad,
    convolution or window reduction whose output shard is at position ``j``."""
    if dilation == 1:
        return fetch(builder, value, dim, split, receivers, firsts, length, fill, reason=reason)
    starts = [first // dilation for first in firsts]
    width = max((first + length - 1) // dilation - start + 1 for first, start in zip(firsts, starts))
    window = fetch(builder, value, dim, split, receivers, starts, width, fill, reason=reason)
    config = tuple((0, dilation + length, dilation - 1) if d == dim else (0, 0, 0) for d in range(value.type.rank))
    spread = builder.emit1("pad", [window, fill], {"padding_config": config})
    mover = HaloFetch(builder, spread, dim, split, receivers, reason)
    offsets = [first - dilation * start for first, start in zip(firsts, starts)]
    if len(set(offsets)) == 1:
        return mover.rows(spread, offsets[0], offsets[0] + length)
    return mover.dynamic_rows(spread, mover.per_device(offsets), length)
