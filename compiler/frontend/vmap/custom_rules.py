"""vmap of autodiff's custom-derivative calls (custom_jvp / custom_vjp functions called while a
derivative is being taken): the call is re-made on the batched operands with the function's body
batched and its rules vmapped, so the batched function keeps its custom derivative."""

from __future__ import annotations

from ..autodiff.markers import CustomJVPRule, CustomVJPRule, call_with_custom_rule
from ..autodiff.traced_rules import TracedJVPRule, TracedVJPRule
from ..autodiff.registries import instantiate
from .batching import at_front


def batch_custom_call(op, operands, dims, axis, batch_block, vmap_flat):
    """``op`` (custom_jvp_call or custom_vjp_call) on operands batched at ``dims``: every
    operand enters batched first; results leave batched first."""
    size = axis.size
    ready = [at_front(operand, dim, size) for operand, dim in zip(operands, dims)]
    body, rule = op.regions[0], op.attrs["rule"]
    count = rule.explicit_count

    def batched_body(*values):
        outputs, output_dims = batch_block(body, values, [0] * len(values), axis)
        return [at_front(output, dim, size) for output, dim in zip(outputs, output_dims)]

    def mapped(function, values):
        outputs, output_dims = vmap_flat(function, values, [0] * len(values), size)
        return [at_front(output, dim, size) for output, dim in zip(outputs, output_dims)]

    # NOTE: a traced rule (autodiff/traced_rules.py) also reads the captured operands
    own = len(operands) if isinstance(rule, (TracedJVPRule, TracedVJPRule)) else count
    if isinstance(rule, (CustomJVPRule, TracedJVPRule)):
        new_rule = CustomJVPRule(_batched_jvp(rule.jvp, own, count, mapped))
        name = "custom_jvp"
    else:
        operand_types = [value.type for value in op.operands[:count]]
        extra = len(operands) - count  # captured operands: no cotangent, as before batching
        new_rule = CustomVJPRule(_batched_forward(rule.forward, own, mapped),
                                 _batched_backward(rule.backward, operand_types, extra, mapped))
        name = "custom_vjp"
    results = call_with_custom_rule(name, batched_body, ready, new_rule)
    return results, [0] * len(results)


def _batched_jvp(jvp, own: int, count: int, mapped):
    def rule(primals, tangents):
        total = len(primals)

        def per_example(*values):
            outputs, output_tangents = jvp(list(values[:own]), list(values[total:total + count]))
            return list(outputs) + list(output_tangents)

        results = mapped(per_example, list(primals) + list(tangents))
        half = len(results) // 2
        return results[:half], results[half:]

    return rule


def _batched_forward(forward, count: int, mapped):
    def rule(primals):
        sizes = {}

        def per_example(*values):
            outputs, residuals = forward(list(values[:count]))
            sizes["outputs"] = len(outputs)
            return list(outputs) + list(residuals)

        results = mapped(per_example, list(primals))
        return results[:sizes["outputs"]], results[sizes["outputs"]:]

    return rule


def _batched_backward(backward, operand_types, extra: int, mapped):
    def rule(residuals, cotangents):
        split = len(residuals)

        def per_example(*values):
            results = backward(list(values[:split]), list(values[split:]))
            return [instantiate(result, value_type) for result, value_type in zip(results, operand_types)]

        return mapped(per_example, list(residuals) + list(cotangents)) + [None] * extra

    return rule
