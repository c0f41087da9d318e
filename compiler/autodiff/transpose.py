"""Reverse mode: the backward pass over a block that is linear in some of its arguments.

Ops that do not depend on a linear argument are emitted forward first (their values are what the
linear ops multiply by); then the linear ops are walked in reverse, each transpose rule turning
its results' cotangents into its linear operands' cotangents, summed per value.

Inside a manual_computation body a value may be the same on every device along some manual axes
(invariant) while a use of it varies along them. Its cotangent is then the sum of every device's
contribution, so contributions are all-reduced over the axes they vary along and the value does
not: the transpose of JAX's implicit ``pvary`` under check_vma. (A ``psum``'s own transpose is
therefore a plain copy of the invariant cotangent.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from meshjit.ir import Block, MeshAttr, Op, SymbolRef
from meshjit.ir.shape_rules import COLLECTIVE_OPS

from ..trace import located_at
from .evaluate import emit
from .registries import LinearInput, add_tangents, single, transpose_rules, type_of


@dataclass(frozen=True)
class VaryingAxes:
    """What the varying-axes analysis of a manual body says, for its backward pass:
    ``returns`` holds the axes along which each returned value's cotangent varies (the manual
    axes its out_sharding splits it over)."""

    by_value: dict[int, frozenset[str]]
    mesh_name: str
    mesh: MeshAttr
    returns: tuple[frozenset[str], ...]

    def excess(self, op: Op, operand_id: int) -> tuple[str, ...]:
        """The axes a cotangent contribution from ``op`` varies along but its operand does not."""
        produced = frozenset().union(*(self.by_value[result.id] for result in op.results))
        if op.name in COLLECTIVE_OPS:
            produced |= frozenset(op.attrs.get("axes", ()))
        return self._ordered(produced - self.by_value[operand_id])

    def _ordered(self, axes: frozenset[str]) -> tuple[str, ...]:
        return tuple(name for name in self.mesh.axis_names if name in axes)

    def seed(self, index: int, value_id: int, cotangent):
        """The cotangent of returned value ``index``, summed over the axes it varies along and
        the value does not (an invariant value returned split over an axis)."""
        axes = self._ordered(self.returns[index] - self.by_value[value_id])
        return self.reduce(cotangent, axes) if axes else cotangent

    def reduce(self, cotangent, axes: tuple[str, ...]):
        attrs = {"mesh": SymbolRef(self.mesh_name), "axes": axes, "reduction": "sum"}
        return single("all_reduce", [cotangent], attrs)


def backward_pass(block: Block, linear: Sequence[bool], inputs: Sequence, cotangents: Sequence,
                  varying: VaryingAxes | None = None) -> list:
    """The cotangents of ``block``'s linear arguments (``None`` where zero; ``None`` for the
    others) given ``inputs`` for its other arguments and one cotangent per returned value."""
    linear_ids = {argument.id for argument, flag in zip(block.args, linear, strict=True) if flag}
    environment = {argument.id: value for argument, value, flag in zip(block.args, inputs, linear) if not flag}
    linear_ops = []
    for op in block.ops:
        if any(operand.id in linear_ids for operand in op.operands):
            linear_ops.append(op)
            linear_ids.update(result.id for result in op.results)
            continue
        results = emit(op, [environment[operand.id] for operand in op.operands])
        environment.update((value.id, result) for value, result in zip(op.results, results))
    cotangent_of: dict[int, object] = {}
    for index, (value, cotangent) in enumerate(zip(block.returns, cotangents, strict=True)):
        if cotangent is None or value.id not in linear_ids:
            continue
        cotangent = cotangent if varying is None else varying.seed(index, value.id, cotangent)
        cotangent_of[value.id] = add_tangents(cotangent_of.get(value.id), cotangent)
    for op in reversed(linear_ops):
        _transpose_op(op, cotangent_of, environment, linear_ids, varying)
    return [cotangent_of.get(argument.id) if flag else None for argument, flag in zip(block.args, linear)]


def _transpose_op(op: Op, cotangent_of: dict, environment: dict, linear_ids: set[int],
                  varying: VaryingAxes | None) -> None:
    cotangents = [cotangent_of.pop(result.id, None) for result in op.results]
    if all(cotangent is None for cotangent in cotangents):
        return
    operands = [LinearInput(operand.type) if operand.id in linear_ids else environment[operand.id]
                for operand in op.operands]
    with located_at(op.location):
        operand_cotangents = transpose_rules[op.name](op, cotangents, operands)
        _accumulate(op, operand_cotangents, cotangent_of, linear_ids, varying)


def _accumulate(op: Op, operand_cotangents, cotangent_of: dict, linear_ids: set[int],
                varying: VaryingAxes | None) -> None:
    """Add each linear operand's cotangent from ``op`` to what it has received so far."""
    for operand, cotangent in zip(op.operands, operand_cotangents, strict=True):
        if cotangent is None or operand.id not in linear_ids:
            continue
        if type_of(cotangent) != operand.type:
            raise AssertionError(f"autodiff internal error: the transpose rule of {op.name} gave a cotangent "
                                 f"of type {type_of(cotangent)} for an operand of type {operand.type}")
        if varying is not None:
            axes = varying.excess(op, operand.id)
            cotangent = varying.reduce(cotangent, axes) if axes else cotangent
        cotangent_of[operand.id] = add_tangents(cotangent_of.get(operand.id), cotangent)
