"""A custom_jvp / custom_vjp call met while differentiating calls the user's rule, not the
function: JAX runs a custom_jvp function's ``jvp`` (or a custom_vjp function's ``fwd``) once
and never the function itself, and programs that count calls (a print in each) see that.

The rule is traced once into a block where the call happens; the call marker's region (its plain
meaning) is that block replayed with zero tangents, and the marker's derivative replays the
block. A custom call inside a rule is an ordinary marker (its function traced, its rule run
only if that part is differentiated again) unless an outer differentiation level encloses the
rule (``grad(grad(f))``): that level differentiates the call, so its rule is traced instead, as
JAX's outer-level tracer runs the rule; ``f``'s and its rule's prints then count as JAX's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from meshjit.ir import Block

from ..trace import Tracer, operand_sharding_type, stage
from ..trace_functions import trace_region
from .evaluate import evaluate_block
from .registries import type_of, zeros
from .tracing import DifferentiationTrace


@dataclass
class RuleTrace(DifferentiationTrace):
    """The trace of a custom derivative rule: custom calls inside it stay lazy markers."""


def levels_outside_rules() -> int:
    """How many differentiation levels enclose the ops recorded now beyond the ones whose
    custom rules are being traced: a custom call there is differentiated by such a level too,
    so JAX runs its rule there (an outer level's tracer meets the call), not the function."""
    from ..trace import current_trace

    levels = 0
    trace = current_trace()
    while trace is not None:
        if isinstance(trace, RuleTrace):
            levels -= 1
        elif isinstance(trace, DifferentiationTrace):
            levels += 1
        trace = trace.parent
    return levels


@dataclass(eq=False)
class TracedJVPRule:
    """A custom_jvp rule traced into ``block``: (primals, tangents, captured) -> (outputs,
    output tangents); ``explicit_count`` primals, then the captured values."""

    block: Block
    explicit_count: int
    output_count: int

    def jvp(self, primals: Sequence, tangents: Sequence) -> tuple[list, list]:
        count = self.explicit_count
        results = evaluate_block(self.block, list(primals[:count]) + list(tangents) + list(primals[count:]))
        return results[: self.output_count], results[self.output_count :]


@dataclass(eq=False)
class TracedVJPRule:
    """A custom_vjp fwd traced into ``block``: (primals, captured) -> (outputs, residuals); the
    bwd rule stays the user's function, called when the derivative is transposed."""

    block: Block
    backward: Callable
    explicit_count: int
    output_count: int

    def forward(self, primals: Sequence) -> tuple[list, list]:
        results = evaluate_block(self.block, list(primals))
        return results[: self.output_count], results[self.output_count :]


def _trace_rule(name: str, rule: Callable, operands: list, extra_types: list) -> tuple:
    """Trace ``rule(*operands, *extra)`` where ``extra`` are fresh arguments of ``extra_types``."""
    weak = [bool(getattr(operand, "weak_type", False)) for operand in operands] + [False] * len(extra_types)
    types = [type_of(operand) for operand in operands] + list(extra_types)
    shardings = [operand_sharding_type(operand) for operand in operands]
    shardings += shardings[: len(extra_types)]

    def make_trace(trace_name, *, meshes, parent):
        return RuleTrace(trace_name, meshes=meshes, parent=parent, transposable=True)

    return trace_region(rule, types, weak, name=name, trace_type=make_trace, arg_sharding_types=shardings,
                        arg_sources=list(operands) + [None] * len(extra_types))


def _primal_region(block: Block, count: int, tangent_types: list, output_count: int) -> Block:
    """The rule's block as the marker's plain meaning: primals and captured values in, outputs
    out, every tangent zero (replayed, so no user function runs again)."""

    def primal(*values):
        tangents = [zeros(value_type) for value_type in tangent_types]
        return evaluate_block(block, list(values[:count]) + tangents + list(values[count:]))[:output_count]

    types = [argument.type for index, argument in enumerate(block.args)
             if not count <= index < count + len(tangent_types)]
    return trace_region(primal, types, [False] * len(types), name="custom_call").block


def call_jvp_rule(name: str, flat_jvp: Callable, operands: list) -> list:
    """A custom_jvp call while differentiating: ``flat_jvp(primals, tangents) -> (outputs,
    tangents)`` traced once, staged as a custom_jvp_call marker whose rule replays it."""
    count = len(operands)
    tangent_types = [type_of(operand) for operand in operands]
    boxes: dict = {}

    def rule(*values):
        outputs, tangents = flat_jvp(list(values[:count]), list(values[count:]))
        boxes["output_count"] = len(outputs)
        boxes["weak"] = [bool(getattr(output, "weak_type", False)) for output in outputs]
        return list(outputs) + list(tangents)

    traced = _trace_rule(name, rule, operands, tangent_types)
    output_count = boxes["output_count"]
    region = _primal_region(traced.block, count, tangent_types, output_count)
    marker_rule = TracedJVPRule(traced.block, count, output_count)
    types = [value.type for value in traced.block.returns[:output_count]]
    return stage("custom_jvp_call", operands + traced.captured, types, {"rule": marker_rule},
                 regions=(region,), weak_types=boxes["weak"])


def call_vjp_rule(name: str, flat_forward: Callable, flat_backward: Callable, operands: list) -> list:
    """A custom_vjp call while differentiating: ``flat_forward(primals) -> (outputs,
    residuals)`` traced once, staged as a custom_vjp_call marker; ``flat_backward`` runs at
    transposition."""
    boxes: dict = {}

    def rule(*values):
        outputs, residuals = flat_forward(list(values))
        boxes["output_count"] = len(outputs)
        boxes["weak"] = [bool(getattr(output, "weak_type", False)) for output in outputs]
        return list(outputs) + list(residuals)

    traced = _trace_rule(name, rule, operands, [])
    output_count = boxes["output_count"]
    region = _primal_region(traced.block, len(operands), [], output_count)
    marker_rule = TracedVJPRule(traced.block, flat_backward, len(operands), output_count)
    types = [value.type for value in traced.block.returns[:output_count]]
    return stage("custom_vjp_call", operands + traced.captured, types, {"rule": marker_rule},
                 regions=(region,), weak_types=boxes["weak"])


def has_tracer(operands: Sequence) -> bool:
    return any(isinstance(operand, Tracer) for operand in operands)
