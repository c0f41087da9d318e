"""The transformations on flat functions: ``jvp``, ``linearize`` and ``vjp``.

Each traces the function into a block inside the current trace (so it must be called inside
one: the facade runs them under jit when called on concrete arrays), then emits the result of
the transformation into that same trace. Functions take and return flat lists of arrays; the
facade handles pytrees, argnums and has_aux.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ..operands import as_operand, dtype_of
from ..trace import Tracer, operand_sharding_type
from ..trace_functions import TracedRegion
from .evaluate import evaluate_block
from .jvp import jvp_block
from .linearize import LinearFunction, linearize_block
from .registries import instantiate, is_float, type_of, zeros
from .tracing import trace_for_differentiation
from .transpose import backward_pass


def _operands(primals: Sequence) -> list:
    """Tracers and device arrays as they are; Python scalars and numpy values as canonical numpy
    arrays (what ``bind`` accepts and what the block's argument types say)."""
    return [as_operand(primal) for primal in primals]


def _trace(fun: Callable, primals: Sequence, name: str) -> TracedRegion:
    operands = _operands(primals)
    types = [type_of(primal) for primal in operands]
    weak = [dtype_of(primal).weak for primal in primals]
    shardings = [operand_sharding_type(primal) for primal in operands]
    return trace_for_differentiation(fun, types, weak, name=name, arg_sharding_types=shardings,
                                     arg_sources=operands)


def _weak(values, flags) -> list:
    """``values`` with JAX's weak-type flags ``flags`` (a derivative is as weak as its primal)."""
    return [
        Tracer(value.trace, value.value, flag) if isinstance(value, Tracer) else value
        for value, flag in zip(values, flags)
    ]


def _with_weak_types(outputs: list, traced: TracedRegion) -> list:
    """The outputs with the weak types the traced function gave them."""
    return _weak(outputs, [bool(getattr(output, "weak_type", False)) for output in traced.outputs])


def jvp(fun: Callable, primals: Sequence, tangents: Sequence) -> tuple[list, list]:
    """``fun``'s outputs on ``primals`` and their tangents along ``tangents`` (one per primal;
    ``None`` for zero). Outputs without a tangent get zeros of their own type."""
    traced = _trace(fun, primals, "jvp")
    inputs = _operands(primals) + list(traced.captured)
    tangents = [None if tangent is None else as_operand(tangent) for tangent in tangents]
    outputs, output_tangents = jvp_block(
        traced.block, inputs, tangents + [None] * len(traced.captured)
    )
    output_tangents = [
        instantiate(tangent, type_of(output)) for output, tangent in zip(outputs, output_tangents)
    ]
    outputs = _with_weak_types(outputs, traced)
    return outputs, _weak(
        output_tangents, [getattr(output, "weak_type", False) for output in outputs]
    )


@dataclass
class Linearized:
    """A function linearized at a point: its outputs there and its linear part, with which of
    its inputs the linear part takes tangents for."""

    outputs: list
    linear: LinearFunction
    differentiable: list[bool]
    input_types: list
    input_weak_types: list[bool]

    def with_residuals(self, residuals: Sequence) -> Linearized:
        """The same linear part reading its residuals from ``residuals`` (e.g. after they came
        back from a jitted forward pass as arrays)."""
        return replace(self, linear=replace(self.linear, residuals=list(residuals)))


def linearize(fun: Callable, primals: Sequence) -> Linearized:
    """Run ``fun`` on ``primals`` and keep its linear part in the float inputs."""
    traced = _trace(fun, primals, "linearize")
    inputs = _operands(primals) + list(traced.captured)
    differentiable = [is_float(type_of(primal).dtype) for primal in inputs[: len(primals)]]
    outputs, linear = linearize_block(
        traced.block, inputs, differentiable + [False] * len(traced.captured)
    )
    return Linearized(
        _with_weak_types(outputs, traced),
        linear,
        differentiable,
        [type_of(primal) for primal in inputs[: len(primals)]],
        [dtype_of(primal).weak for primal in primals],
    )


def apply_linear(linearized: Linearized, tangents: Sequence) -> list:
    """The output tangents for one tangent per input (integer inputs' tangents are ignored)."""
    moving = [
        None if tangent is None else as_operand(tangent)
        for tangent, flag in zip(tangents, linearized.differentiable)
        if flag
    ]
    linear = linearized.linear
    moving = [
        instantiate(tangent, value_type)
        for tangent, value_type in zip(moving, linear.tangent_types)
    ]
    return evaluate_block(linear.block_for_current_trace(), list(linear.residuals) + moving)


def transpose_linear(linearized: Linearized, cotangents: Sequence) -> list:
    """One cotangent per input (zeros of their own type for integer inputs), for one cotangent
    per output (``None`` for zero)."""
    linear = linearized.linear
    count = len(linear.residuals)
    flags = [False] * count + [True] * len(linear.tangent_types)
    inputs = list(linear.residuals) + [None] * len(linear.tangent_types)
    cotangents = [None if cotangent is None else as_operand(cotangent) for cotangent in cotangents]
    block = linear.block_for_current_trace()
    results = iter(backward_pass(block, flags, inputs, cotangents)[count:])
    cotangents_in = []
    for flag, input_type in zip(linearized.differentiable, linearized.input_types):
        cotangent = next(results) if flag else None
        cotangents_in.append(zeros(input_type) if cotangent is None else cotangent)
    return _weak(cotangents_in, linearized.input_weak_types)
