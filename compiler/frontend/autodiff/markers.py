"""Autodiff's marker ops: stop_gradient and the calls of functions with custom derivatives.

Inside a differentiation trace they are recorded as ops whose region holds their plain meaning
(the identity, or the function's body) and whose ``rule`` attribute holds the Python rules;
outside one they are not recorded at all, so they never reach the compiler. Their JVP and
transpose rules call the user's functions with JAX's conventions, on flat lists (the facade
handles pytrees).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from meshjit.ir import Block, TensorType, Value

from ..operands import as_operand, dtype_of
from ..trace import Tracer, operand_sharding_type, stage
from ..trace_functions import trace_region
from .evaluate import FORWARD_MODE_MESSAGE, ForwardModeError, emit
from ...tables import jvp_rules, transpose_rules
from .registries import instantiate, is_float, type_of
from .tracing import differentiating, linearizing
from .traced_rules import TracedJVPRule, TracedVJPRule, call_jvp_rule, call_vjp_rule, levels_outside_rules


def stop_gradient(x):
    """``x``, through which no derivative flows."""
    x = as_operand(x)
    if not isinstance(x, Tracer) or not differentiating():
        return x
    argument = Value.fresh(x.value.type)
    identity = Block((argument,), (), (argument,))
    return stage(
        "stop_gradient", [x], [x.value.type], regions=(identity,), weak_types=[x.weak_type]
    )[0]


@jvp_rules.register("stop_gradient")
def _stop_gradient(op, primals, tangents):
    return emit(op, primals), [None]


@dataclass(eq=False)
class CustomJVPRule:
    """``jvp(primals, tangents) -> (outputs, output_tangents)`` over the function's own flat
    operands (the first ``explicit_count``; the rest are values its body captured)."""

    jvp: Callable
    explicit_count: int = 0


@dataclass(eq=False)
class CustomVJPRule:
    """``forward(primals) -> (outputs, residuals)`` and ``backward(residuals, cotangents) ->
    operand_cotangents`` (``None`` for zero), over flat lists."""

    forward: Callable
    backward: Callable
    explicit_count: int = 0


@dataclass(eq=False)
class _LinearCall:
    """What custom_vjp_linear needs to call ``backward``: the residual count and which of the
    function's operands have tangent operands."""

    rule: CustomVJPRule
    residual_count: int
    moving: tuple[int, ...]
    operand_types: tuple[TensorType, ...]


def call_with_custom_rule(name: str, fun: Callable, operands: Sequence, rule) -> list:
    """Apply ``fun`` (flat operands to a flat list) with a custom derivative ``rule``: a call
    marker while differentiating, a plain call otherwise. Where a differentiation level is
    not yet served by a rule being traced, the marker comes from the rule alone
    (traced_rules.py: JAX calls the rule, not ``fun``)."""
    weak = [dtype_of(operand).weak for operand in operands]
    operands = [as_operand(operand) for operand in operands]
    if not differentiating():
        return list(fun(*operands))
    if levels_outside_rules() > 0:
        if isinstance(rule, CustomJVPRule):
            return call_jvp_rule(name, rule.jvp, operands)
        return call_vjp_rule(name, rule.forward, rule.backward, operands)
    types = [type_of(operand) for operand in operands]
    region = trace_region(fun, types, weak, name=name, arg_sources=operands,
                          arg_sharding_types=[operand_sharding_type(operand) for operand in operands])
    rule = replace(rule, explicit_count=len(operands))
    marker = "custom_jvp_call" if isinstance(rule, CustomJVPRule) else "custom_vjp_call"
    out_weak = [bool(getattr(output, "weak_type", False)) for output in region.outputs]
    result_types = [value.type for value in region.block.returns]
    return stage(
        marker,
        operands + region.captured,
        result_types,
        {"rule": rule},
        regions=(region.block,),
        weak_types=out_weak,
    )


def _own_tangents(primals, tangents, count: int) -> list:
    return [
        instantiate(tangent, type_of(primal))
        for primal, tangent in zip(primals[:count], tangents[:count])
    ]


def _check_outputs(what: str, values, expected: Sequence[TensorType]) -> list:
    values = [as_operand(value) for value in values]
    found = [type_of(value) for value in values]
    if found != list(expected):
        raise TypeError(
            f"{what} must produce outputs with the shapes and dtypes of the primal function's "
            f"outputs {[str(t) for t in expected]}, got {[str(t) for t in found]}"
        )
    return values


@jvp_rules.register("custom_jvp_call")
def _custom_jvp_call(op, primals, tangents):
    rule = op.attrs["rule"]
    count = rule.explicit_count
    # NOTE: a traced rule also reads the values its block captured (the operands after its own)
    own = primals if isinstance(rule, TracedJVPRule) else primals[:count]
    outputs, output_tangents = rule.jvp(list(own), _own_tangents(primals, tangents, count))
    expected = [value.type for value in op.results]
    outputs = _check_outputs("a custom_jvp rule", outputs, expected)
    output_tangents = _check_outputs("a custom_jvp rule's tangent", output_tangents, expected)
    return outputs, output_tangents


@jvp_rules.register("custom_vjp_call")
def _custom_vjp_call(op, primals, tangents):
    if not linearizing():
        raise ForwardModeError(FORWARD_MODE_MESSAGE)
    rule = op.attrs["rule"]
    count = rule.explicit_count
    outputs, residuals = rule.forward(list(primals if isinstance(rule, TracedVJPRule) else primals[:count]))
    outputs = _check_outputs("a custom_vjp fwd rule", outputs, [value.type for value in op.results])
    residuals = [as_operand(residual) for residual in residuals]
    operand_types = tuple(type_of(primal) for primal in primals[:count])
    moving = tuple(index for index in range(count) if is_float(operand_types[index].dtype))
    moving_tangents = [instantiate(tangents[index], operand_types[index]) for index in moving]
    float_outputs = [index for index, value in enumerate(op.results) if is_float(value.type.dtype)]
    call = _LinearCall(rule, len(residuals), moving, operand_types)
    linear = stage(
        "custom_vjp_linear",
        residuals + moving_tangents,
        [op.results[index].type for index in float_outputs],
        {"rule": call},
    )
    output_tangents = [None] * len(outputs)
    for index, tangent in zip(float_outputs, linear):
        output_tangents[index] = tangent
    return outputs, output_tangents


@transpose_rules.register("custom_vjp_linear")
def _custom_vjp_linear_transpose(op, cotangents, operands):
    call = op.attrs["rule"]
    residuals = operands[: call.residual_count]
    filled = [
        instantiate(cotangent, value.type) for cotangent, value in zip(cotangents, op.results)
    ]
    operand_cotangents = list(call.rule.backward(list(residuals), filled))
    if len(operand_cotangents) != len(call.operand_types):
        raise TypeError(
            f"a custom_vjp bwd rule must produce one cotangent per primal input "
            f"({len(call.operand_types)}), got {len(operand_cotangents)}"
        )
    results = [None] * call.residual_count
    for index in call.moving:
        cotangent = operand_cotangents[index]
        if cotangent is not None:
            cotangent = as_operand(cotangent)
            if type_of(cotangent) != call.operand_types[index]:
                raise TypeError(
                    f"a custom_vjp bwd rule produced a cotangent of type {type_of(cotangent)} for "
                    f"input {index} of type {call.operand_types[index]}; they must match"
                )
        results.append(cotangent)
    return results
