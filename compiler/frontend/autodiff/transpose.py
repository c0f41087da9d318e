"""Reverse mode: the backward pass over a block that is linear in some of its arguments.

Ops that do not depend on a linear argument are emitted forward first (their values are what the
linear ops multiply by); then the linear ops are walked in reverse, each transpose rule turning
its results' cotangents into its linear operands' cotangents, summed per value.

Inside a manual_computation body a value may be the same on every device along some manual axes
(invariant) while a use of it varies along them. Its cotangent is then the sum of every device's
contribution (the transpose of JAX's implicit ``pvary`` under check_vma; a ``psum``'s own
transpose is therefore a plain copy of its invariant cotangent). The sum is kept pending while
the cotangent flows back through ops that are the same on every device along those axes, and
all-reduced only before a collective or at the body's arguments: summing a bias's cotangent
after reduce_sum moves a vector, not the activations.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from meshjit.ir import Block, MeshAttr, Op, SymbolRef
from meshjit.ir.ops import COLLECTIVE_OPS

from ..trace import located_at, user_location
from .evaluate import emit
from .partial_eval import split_ops
from ...tables import transpose_rules
from .registries import LinearInput, add_tangents, single, type_of
from .sharding import as_primal_type, deriving

_NONE = frozenset()


@dataclass(frozen=True)
class VaryingAxes:
    """What the varying-axes analysis of a manual body says, for its backward pass:
    ``returns`` holds the axes along which each returned value's cotangent varies (the manual
    axes its out_sharding splits it over)."""

    by_value: dict[int, frozenset[str]]
    mesh_name: str
    mesh: MeshAttr
    returns: tuple[frozenset[str], ...]

    def excess(self, op: Op, operand_id: int) -> frozenset[str]:
        """The axes a cotangent contribution from ``op`` varies along but its operand does not."""
        produced = frozenset().union(*(self.by_value[result.id] for result in op.results))
        if op.name in COLLECTIVE_OPS:
            produced |= frozenset(op.attrs.get("axes", ()))
        return produced - self.by_value[operand_id]

    def reduce(self, cotangent, axes: frozenset[str]):
        """``cotangent`` summed over the devices along ``axes`` (itself when there are none)."""
        if not axes:
            return cotangent
        ordered = tuple(name for name in self.mesh.axis_names if name in axes)
        location = user_location()
        where = f" at {location}" if location else ""
        reason = f"autodiff: cotangent of a shard_map value replicated over {list(ordered)}{where}"
        attrs = {
            "mesh": SymbolRef(self.mesh_name),
            "axes": ordered,
            "reduction": "sum",
            "reason": reason,
        }
        return single("all_reduce", [cotangent], attrs)


class _Cotangents:
    """Cotangents received so far, per value id, each with the axes its sum is pending over."""

    def __init__(self, varying: VaryingAxes | None):
        self.varying = varying
        self.entries: dict[int, tuple[object, frozenset[str]]] = {}

    def add(self, value_id: int, cotangent, pending: frozenset[str] = _NONE) -> None:
        existing = self.entries.get(value_id)
        if existing is not None:
            common = existing[1] & pending
            cotangent = add_tangents(
                self.varying.reduce(existing[0], existing[1] - common)
                if existing[1]
                else existing[0],
                self.varying.reduce(cotangent, pending - common) if pending else cotangent,
            )
            pending = common
        self.entries[value_id] = (cotangent, pending)

    def pop(self, value_id: int) -> tuple[object, frozenset[str]]:
        return self.entries.pop(value_id, (None, _NONE))

    def resolved(self, value_id: int):
        """The value's cotangent with every pending sum done (``None`` if it received none)."""
        cotangent, pending = self.entries.get(value_id, (None, _NONE))
        return (
            cotangent
            if cotangent is None or not pending
            else self.varying.reduce(cotangent, pending)
        )


def backward_pass(
    block: Block,
    linear: Sequence[bool],
    inputs: Sequence,
    cotangents: Sequence,
    varying: VaryingAxes | None = None,
) -> list:
    """The cotangents of ``block``'s linear arguments (``None`` where zero; ``None`` for the
    others) given ``inputs`` for its other arguments and one cotangent per returned value."""
    linear_ids = {argument.id for argument, flag in zip(block.args, linear, strict=True) if flag}
    environment = {
        argument.id: value for argument, value, flag in zip(block.args, inputs, linear) if not flag
    }
    # NOTE: a control flow op mixing known and linear values (a JVP'd scan in a shard_map body)
    # is split by partial evaluation first; its known part runs forward with the rest.
    known_ops, linear_ops = split_ops(block.ops, linear_ids)
    for op in known_ops:
        results = emit(op, [environment[operand.id] for operand in op.operands])
        environment.update((value.id, result) for value, result in zip(op.results, results))
    received = _Cotangents(varying)
    for index, (value, cotangent) in enumerate(zip(block.returns, cotangents, strict=True)):
        if cotangent is not None and value.id in linear_ids:
            pending = (
                _NONE if varying is None else varying.returns[index] - varying.by_value[value.id]
            )
            received.add(value.id, cotangent, pending)
    for op in reversed(linear_ops):
        _transpose_op(op, received, environment, linear_ids)
    return [
        received.resolved(argument.id) if flag else None
        for argument, flag in zip(block.args, linear)
    ]


def _transpose_op(op: Op, received: _Cotangents, environment: dict, linear_ids: set[int]) -> None:
    entries = [received.pop(result.id) for result in op.results]
    if all(cotangent is None for cotangent, _ in entries):
        return
    pendings = {pending for cotangent, pending in entries if cotangent is not None}
    pending = next(iter(pendings))
    if len(pendings) > 1 or (pending and op.name in COLLECTIVE_OPS):
        # NOTE: a collective's transpose differs per device, so pending sums are done first.
        entries = [
            (None if cotangent is None else received.varying.reduce(cotangent, axes), _NONE)
            for cotangent, axes in entries
        ]
        pending = _NONE
    operands = [
        LinearInput(operand.type) if operand.id in linear_ids else environment[operand.id]
        for operand in op.operands
    ]
    with located_at(op.location):
        with deriving():
            operand_cotangents = transpose_rules[op.name](
                op, [cotangent for cotangent, _ in entries], operands
            )
        for operand, cotangent in zip(op.operands, operand_cotangents, strict=True):
            if cotangent is None or operand.id not in linear_ids:
                continue
            cotangent = as_primal_type(cotangent, operand)
            if type_of(cotangent) != operand.type:
                raise AssertionError(
                    f"autodiff internal error: the transpose rule of {op.name} gave a "
                    f"cotangent of type {type_of(cotangent)} for an operand of type {operand.type}"
                )
            excess = _NONE if received.varying is None else received.varying.excess(op, operand.id)
            received.add(operand.id, cotangent, pending | excess)
