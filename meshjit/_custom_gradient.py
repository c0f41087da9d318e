"""``jax.closure_convert`` and ``jax.custom_gradient``.

closure_convert traces a function on example arguments and returns it with the traced values it
closes over as extra arguments (compiler/frontend/closure_conversion.py), so a custom_vjp rule
can receive them. custom_gradient is a custom_vjp whose forward pass is the user's function
(returning the value and its VJP function) and whose backward pass replays the VJP function,
closure-converted in the forward pass so its closed-over values travel as residuals.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import optree

from meshjit.compiler.frontend import autodiff
from meshjit.compiler.frontend.closure_conversion import convert_closure, tracing
from meshjit.compiler.frontend.control_flow_tracing import operand_leaf, type_of, weak_of

from .custom_derivatives import _flat_cotangents, custom_vjp
from ._pytreedef import PyTreeDef
from .tree_util import _flatten as flatten_tree, _structure as structure_spec


def closure_convert(fun: Callable, *example_args) -> tuple[Callable, list]:
    """``(converted, hoisted)``: ``converted(*args, *hoisted)`` computes ``fun(*args)`` for
    arguments with the structure of ``example_args``, the traced float values ``fun`` closes
    over passed explicitly as ``hoisted`` (as ``jax.closure_convert``; outside a trace nothing
    is traced, so nothing is hoisted)."""
    leaves, in_tree = flatten_tree(example_args)
    if not tracing():
        return functools.partial(_call_directly, fun, in_tree), []
    converted, hoisted, out = _convert(fun, in_tree, leaves, hoist_all=False)

    def converted_fun(*args_and_hoisted):
        count = len(args_and_hoisted) - len(hoisted)
        arguments = [operand_leaf(leaf, "closure_convert argument")
                     for leaf in _checked_leaves(in_tree, args_and_hoisted[:count])]
        return optree.tree_unflatten(out["tree"], converted(arguments, args_and_hoisted[count:]))

    return converted_fun, hoisted


def _call_directly(fun: Callable, in_tree, *args):
    _checked_leaves(in_tree, args)
    return fun(*args)


def _checked_leaves(in_tree, args) -> list:
    leaves, tree = flatten_tree(tuple(args))
    if tree != in_tree:
        raise TypeError("The inputs to the closure produced by closure_convert must have the same Pytree structure "
                        "as the example arguments passed when closure_convert was called. Expected "
                        f"{PyTreeDef(in_tree)}, but got {PyTreeDef(tree)}")
    return leaves


def _convert(fun: Callable, in_tree, leaves, *, hoist_all: bool):
    """``fun`` (taking the pytree ``in_tree`` of ``leaves``) closure-converted, its hoisted
    values, and its output tree (in ``out["tree"]``)."""
    operands = [operand_leaf(leaf, "closure_convert argument") for leaf in leaves]
    out = {}

    def flat_fun(*tracers):
        outputs = fun(*optree.tree_unflatten(in_tree, list(tracers)))
        output_leaves, out["tree"] = flatten_tree(outputs)
        return [operand_leaf(leaf, "closure_convert output") for leaf in output_leaves]

    converted, hoisted = convert_closure(flat_fun, [type_of(operand) for operand in operands],
                                         [weak_of(leaf) for leaf in leaves], hoist_all=hoist_all)
    return converted, hoisted, out


class _CustomGradient(custom_vjp):
    """``fun(*args) -> (value, vjp)``: differentiated with ``vjp(cotangent) -> tuple`` of one
    cotangent per argument (a lone cotangent for a one-argument function is accepted, as JAX)."""

    def __init__(self, fun: Callable):
        if not callable(fun):
            raise TypeError(f"custom_gradient expects a callable, got {type(fun).__name__}: {fun!r}")

        @functools.wraps(fun)
        def value_of(*args, **kwargs):
            return fun(*args, **kwargs)[0]

        super().__init__(value_of)
        self.gradient_fun = fun
        self.fwd = self.bwd = fun  # NOTE: marks the VJP as defined; _rule below replaces both

    def _rule(self, nondiff, in_tree, full_args, trees):
        def flat_forward(primal_leaves):
            value, vjp = self.gradient_fun(*full_args(primal_leaves))
            output_leaves, trees["out"] = flatten_tree(value)
            cotangent_tree = structure_spec((value,))
            trees["vjp"], hoisted, trees["vjp_out"] = _convert(lambda cotangent: vjp(cotangent), cotangent_tree,
                                                output_leaves, hoist_all=True)
            return output_leaves, hoisted

        def flat_backward(residual_leaves, cotangent_leaves):
            converted = trees["vjp"]
            results = optree.tree_unflatten(trees["vjp_out"]["tree"],
                                            converted(list(cotangent_leaves), residual_leaves))
            if not isinstance(results, (tuple, list)):
                results = (results,)
            return _flat_cotangents(self._name, results, in_tree)

        return autodiff.CustomVJPRule(flat_forward, flat_backward)


def custom_gradient(fun: Callable) -> Callable:
    """A function differentiated by the VJP function it returns, as ``jax.custom_gradient``:
    ``fun(*args)`` returns ``(value, vjp)`` and the decorated function returns ``value``."""
    return _CustomGradient(fun)
