"""Which ops run together in one fused kernel: groups of elementwise ops over one local shape,
with the reductions, broadcasts and per-row ops around them that a single pass can do.

A group has a full shape S and, once a reduction or a broadcast fixes it, a split s: the
group then sees S as rows x columns, ``R = prod(S[:s])`` by ``C = prod(S[s:])``, and each of
its values is one of
- ``full``: varies with the row and the column (an elementwise op on S, or a broadcast into S),
- ``row``: one number per row (a reduction over the trailing dims, or an op on such values;
  its shape holds the row dims, perhaps with dims of size 1 among them),
- ``col``: one number per column (a reduction over the leading dims).
Reductions over the trailing dims (softmax, layer norm, logsumexp) give ``row`` values that later
ops of the group may use; reductions over the leading dims give ``col`` results that end the
group. Ops join in program order; a group closes (is emitted) as soon as an op outside it reads
one of its values, so no op ever runs before a value it needs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from meshjit.ir import Op, Value

REDUCERS = ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or")
_NUMBERS = ("f32", "f64", "i32", "i64")
_REDUCED_DTYPES = {"reduce_sum": _NUMBERS, "reduce_max": _NUMBERS, "reduce_min": _NUMBERS,
                   "reduce_prod": _NUMBERS, "reduce_and": ("bool",), "reduce_or": ("bool",)}
_RESHAPES = ("reshape", "expand_dims", "squeeze")
# NOTE: a reduction fuses only over at least this many columns: shorter inner loops run slower
# than numpy's reductions, which are vectorised over the outer dims.
MIN_REDUCED_COLUMNS = 16


@dataclass
class Group:
    """Ops fused into one kernel (see the module docstring for ``split`` and the kinds)."""

    shape: tuple[int, ...]
    split: int | None = None
    leading: bool = False               # reductions over the leading dims (col results)
    reduces: bool = False               # holds a reduction
    ops: list[Op] = field(default_factory=list)
    kind: dict[int, str] = field(default_factory=dict)    # value id -> "full" | "row" | "col"
    # values read from outside, in first-use order: value id -> (Value, "full" | "row" | "col" |
    # "scalar")
    inputs: dict[int, tuple[Value, str]] = field(default_factory=dict)
    # a scalar broadcast left out of the program is read as its rank-0 operand: id -> operand
    aliases: dict[int, Value] = field(default_factory=dict)

    def inputs_read(self) -> list[Value]:
        return [value for value, _ in self.inputs.values()]

    @property
    def rows(self) -> int:
        return math.prod(self.shape[:self.split])

    @property
    def columns(self) -> int:
        return math.prod(self.shape[self.split:])


def is_scalar_broadcast(op: Op) -> bool:
    return op.name == "broadcast_in_dim" and op.operands[0].type.rank == 0


def is_scalar_like(shape) -> bool:
    return all(size == 1 for size in shape)


def _squeezed(shape) -> tuple[int, ...]:
    return tuple(size for size in shape if size != 1)


def _row_shaped(shape, group: Group) -> bool:
    """One number per row of ``group`` in row order (size-1 dims may come and go)."""
    return group.split is not None and _squeezed(shape) == _squeezed(group.shape[:group.split])


def _broadcast_role(op: Op, group: Group) -> tuple[str, int] | None:
    """("row" | "col" | "scalar", split) when ``op`` broadcasts one number per row, per column,
    or a single number into ``group``'s shape; the split it needs (or the group's)."""
    operand, dims = op.operands[0].type.shape, op.attrs["broadcast_dimensions"]
    shape = group.shape
    if op.result.type.shape != shape:
        return None
    if is_scalar_like(operand):
        return "scalar", group.split
    used = [dim for size, dim in zip(operand, dims) if size != 1]
    varying = [dim for dim, size in enumerate(shape) if size != 1]
    # the operand's dims of size > 1 must be the target's dims of size > 1 up to (row) or
    # from (col) some split, so that its flat index is the row (or column) index
    for role, candidates in (("row", [s for s in range(len(shape) + 1) if [d for d in varying if d < s] == used]),
                             ("col", [s for s in range(len(shape) + 1) if [d for d in varying if d >= s] == used])):
        if group.split in candidates:
            return role, group.split
        if group.split is None and candidates:
            return role, candidates[-1] if role == "row" else candidates[0]
    return None


def _reduction_split(op: Op) -> tuple[str, int] | None:
    """("trailing" | "leading", split) for a reduction over the last or the first dims."""
    rank = op.operands[0].type.rank
    axes = sorted(op.attrs["axes"])
    if axes == list(range(rank - len(axes), rank)):
        return "trailing", rank - len(axes)
    if axes == list(range(len(axes))):
        return "leading", len(axes)
    return None


class _Grouper:
    def __init__(self, expression_of):
        self.expression_of = expression_of  # op -> source expression or None (fusion.expression)
        self.items: list = []               # ops and groups, in the order they run
        self.open: dict[tuple, Group] = {}
        self.owner: dict[int, Group] = {}
        # scalar broadcasts: groups read their rank-0 operand instead, so a broadcast is emitted
        # only before the first op outside a group that reads it
        self.scalar_broadcasts: dict[int, Op] = {}

    def close(self, group: Group) -> None:
        if self.open.get(group.shape) is not group:
            return
        del self.open[group.shape]
        for value_id in group.kind:
            self.owner.pop(value_id, None)
        self.items.append(group)

    def emit(self, op: Op) -> None:
        self.items.append(op)

    def add(self, op: Op) -> None:
        if isinstance(op, Op) and is_scalar_broadcast(op):
            # NOTE: whoever reads the broadcast (or its operand, in a group) runs after this
            # point, so a group computing the operand must be emitted first
            producer = self.owner.get(op.operands[0].id)
            if producer is not None:
                self.close(producer)
            self.scalar_broadcasts[op.result.id] = op
            return
        # NOTE: a deferred scalar broadcast reads a scalar another open group may compute: that
        # group must run first, so it closes before this op finds its place
        for operand in op.operands:
            broadcast = self.scalar_broadcasts.get(operand.id)
            source = None if broadcast is None else self.owner.get(broadcast.operands[0].id)
            if source is not None:
                self.close(source)
        owners = []
        for operand in op.operands:
            group = self.owner.get(operand.id)
            if group is not None and group not in owners:
                owners.append(group)
        target = None
        if len(owners) == 1 and self.join(owners[0], op):
            target = owners[0]
        for group in owners:
            if group is not target:
                self.close(group)
        if target is not None:
            return
        shape = self.natural_shape(op)
        if shape is None:
            self.emit(op)
            return
        group = self.open.get(shape)
        if group is not None and self.join(group, op):
            return
        if group is not None:
            self.close(group)
        fresh = Group(shape)
        if self.join(fresh, op):
            self.open[shape] = fresh
        else:
            self.emit(op)

    def natural_shape(self, op) -> tuple | None:
        if not isinstance(op, Op) or len(op.results) != 1 or op.regions:
            return None
        if op.name in REDUCERS:
            return op.operands[0].type.shape
        if any(value.type.dtype in ("c64", "c128") for value in op.operands + op.results):
            return None  # NOTE: complex values run through their numpy kernels, never fused
        if op.name == "broadcast_in_dim" or self.expression_of(op) is not None:
            return op.result.type.shape
        return None

    def operand_kind(self, group: Group, value: Value) -> str:
        """How ``group`` would read ``value``: its own kind, or as an input."""
        if value.id in group.kind:
            return group.kind[value.id]
        if value.id in self.scalar_broadcasts or is_scalar_like(value.type.shape):
            return "scalar"
        if value.type.shape == group.shape:
            return "full"
        if _row_shaped(value.type.shape, group):
            return "row"
        return "other"

    def join(self, group: Group, op: Op) -> bool:
        """Add ``op`` to ``group`` if the group can run it; say whether it did."""
        saved = (group.split, group.leading, group.reduces)
        role = self.role(group, op)
        if role is None:
            group.split, group.leading, group.reduces = saved
            return False
        kind, split = role
        if split is not None:
            group.split = split
        inputs = self.input_kinds(group, op)
        if inputs is None:
            group.split, group.leading, group.reduces = saved
            return False
        group.inputs.update(inputs)
        for operand in op.operands:
            broadcast = self.scalar_broadcasts.get(operand.id)
            if broadcast is not None:
                group.aliases[operand.id] = broadcast.operands[0]
        group.ops.append(op)
        group.kind[op.result.id] = kind
        self.owner[op.result.id] = group
        return True

    def input_kinds(self, group: Group, op: Op) -> dict | None:
        """How ``op`` reads each operand that ``group`` does not define; None on a conflict."""
        found = {}
        for operand in op.operands:
            if operand.id in group.kind:
                continue
            broadcast = self.scalar_broadcasts.get(operand.id)
            if broadcast is not None:
                source, kind = broadcast.operands[0], "scalar"
            elif op.name == "broadcast_in_dim":
                source, kind = operand, _broadcast_role(op, group)[0]
            else:
                source, kind = operand, self.operand_kind(group, operand)
            if kind == "other":
                return None
            known = group.inputs.get(source.id, found.get(source.id))
            if known is not None and known[1] != kind:
                return None
            found[source.id] = (source, kind)
        return found

    def role(self, group: Group, op: Op) -> tuple[str, int | None] | None:
        if not isinstance(op, Op) or len(op.results) != 1 or op.regions:
            return None
        if op.name in REDUCERS:
            return self.reduction_role(group, op)
        if op.name == "broadcast_in_dim":
            role = _broadcast_role(op, group)
            operand = op.operands[0]
            if role is None or (operand.id in group.kind and group.kind[operand.id] != role[0]):
                return None
            # NOTE: a col value is complete only when the group's loop ends: nothing in the group reads it
            if group.kind.get(operand.id) == "col":
                return None
            return ("full", role[1])
        kinds = [self.operand_kind(group, operand) for operand in op.operands]
        if op.name in _RESHAPES:
            return ("row", None) if kinds == ["row"] and _row_shaped(op.result.type.shape, group) else None
        if self.expression_of(op) is None:
            return None
        if op.result.type.shape == group.shape and all(kind in ("full", "scalar") for kind in kinds):
            return ("full", None)
        if (not group.leading and _row_shaped(op.result.type.shape, group)
                and all(kind in ("row", "scalar") for kind in kinds) and "row" in kinds):
            return ("row", None)
        return None

    def reduction_role(self, group: Group, op: Op) -> tuple[str, int] | None:
        operand = op.operands[0]
        found = _reduction_split(op)
        if found is None or operand.type.shape != group.shape or self.operand_kind(group, operand) != "full":
            return None
        direction, split = found
        leading = direction == "leading"
        if group.split is not None and group.split != split:
            return None
        if group.reduces and leading != group.leading:
            return None
        if leading and any(kind == "row" for kind in group.kind.values()):
            return None
        if math.prod(group.shape) == 0 or math.prod(group.shape[split:]) < MIN_REDUCED_COLUMNS:
            return None
        if op.result.type.dtype not in _REDUCED_DTYPES[op.name]:
            return None
        group.leading = leading
        group.reduces = True
        return ("col" if leading else "row", split)


def group_ops(ops, returns, expression_of, worth_fusing) -> list:
    """``ops`` as a list of ops and Groups in an order that runs correctly (see the module
    docstring). ``expression_of(op)`` says whether an op can run inside a kernel;
    ``worth_fusing(group)`` whether a group becomes a kernel (else its ops run one by one)."""
    grouper = _Grouper(expression_of)
    for op in ops:
        grouper.add(op)
    for group in list(grouper.open.values()):
        grouper.close(group)
    placed: list = []
    pending = dict(grouper.scalar_broadcasts)

    def place_pending(value_id: int) -> None:
        # a deferred broadcast goes in before its first reader, after whatever it reads (which
        # may be a deferred broadcast itself: a rank-0 to rank-0 broadcast)
        broadcast = pending.pop(value_id, None)
        if broadcast is not None:
            for operand in broadcast.operands:
                place_pending(operand.id)
            placed.append(broadcast)

    def place(op) -> None:
        for operand in op.operands:
            place_pending(operand.id)
        placed.append(op)

    for item in grouper.items:
        if not isinstance(item, Group):
            place(item)
        elif worth_fusing(item):
            for value in item.inputs_read():
                place_pending(value.id)
            placed.append(item)
        else:
            for op in item.ops:
                place(op)
    # NOTE: a returned broadcast may read another deferred one (a constant gradient broadcast
    # twice): place_pending puts that in first
    for value in returns:
        place_pending(value.id)
    return placed
