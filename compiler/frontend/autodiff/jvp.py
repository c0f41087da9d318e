"""Forward mode: run a traced block on primal values and tangents, emitting both through the JVP
rules into the current trace. Tangents are ``None`` for symbolic zeros; integer and boolean
values never carry one."""

from __future__ import annotations

from collections.abc import Sequence

from meshjit.ir import Block

from ..trace import located_at
from .evaluate import emit
from ...tables import jvp_rules
from .registries import instantiate, is_float, type_of
from .sharding import as_primal_type, deriving


def jvp_block(block: Block, primals: Sequence, tangents: Sequence) -> tuple[list, list]:
    """The outputs of ``block`` on ``primals`` and their tangents (``None`` where zero)."""
    values = {argument.id: primal for argument, primal in zip(block.args, primals, strict=True)}
    tangent_of = {
        argument.id: tangent
        for argument, tangent in zip(block.args, tangents, strict=True)
        if tangent is not None and is_float(argument.type.dtype)
    }
    for op in block.ops:
        op_primals = [values[operand.id] for operand in op.operands]
        op_tangents = [tangent_of.get(operand.id) for operand in op.operands]
        if all(tangent is None for tangent in op_tangents):
            outputs, output_tangents = emit(op, op_primals), [None] * len(op.results)
        else:
            with located_at(op.location), deriving():
                outputs, output_tangents = jvp_rules[op.name](op, op_primals, op_tangents)
            output_tangents = [None if tangent is None else as_primal_type(tangent, value)
                               for value, tangent in zip(op.results, output_tangents)]
        values.update((value.id, output) for value, output in zip(op.results, outputs))
        for value, tangent in zip(op.results, output_tangents):
            if tangent is not None and is_float(value.type.dtype):
                tangent_of[value.id] = tangent
    return [values[value.id] for value in block.returns], [
        tangent_of.get(value.id) for value in block.returns
    ]


def linear_jvp(op, primals, tangents) -> tuple[list, list]:
    """The JVP rule of an op linear in its float operands jointly: the op itself applied to the
    tangents (zeros filled in); integer operands (indices) keep their primal values."""
    filled = [
        instantiate(tangent, type_of(primal)) if is_float(type_of(primal).dtype) else primal
        for primal, tangent in zip(primals, tangents)
    ]
    return emit(op, primals), emit(op, filled)


def no_tangent(op, primals, tangents) -> tuple[list, list]:
    """The JVP rule of an op whose results carry no tangent: integer or boolean results
    (compare, argmax, iota, ...). Registering it names the op non-differentiable."""
    return emit(op, primals), [None] * len(op.results)
