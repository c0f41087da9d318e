"""``custom_jvp`` and ``custom_vjp``: functions whose derivatives the user defines, with JAX's
calling conventions (``defjvp``/``defjvps``, ``defvjp``, ``nondiff_argnums``).

Outside differentiation a decorated function is an ordinary call. Inside, its call becomes one
marker op whose rules call back into the user's functions (``compiler/frontend/autodiff/markers.py``).
The rules must not close over values traced in the function being differentiated; pass such
values as arguments.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

import optree

from meshjit.compiler.frontend import autodiff

from ._pytreedef import PyTreeDef
from .tree_util import NAMESPACE
from .tree_util import _flatten as flatten_tree, _structure as structure_spec


def _flatten(tree):
    return flatten_tree(tree)


def _positional(fun: Callable, name: str, args: tuple, kwargs: dict) -> tuple:
    """``args`` and ``kwargs`` as positional arguments of ``fun`` (as JAX resolves them)."""
    if not kwargs:
        return args
    try:
        bound = inspect.signature(fun).bind(*args, **kwargs)
    except (TypeError, ValueError) as error:
        raise TypeError(
            f"{name}: keyword arguments could not be resolved to positions: {error}"
        ) from None
    bound.apply_defaults()
    if bound.kwargs:
        raise TypeError(
            f"{name}: keyword-only arguments {sorted(bound.kwargs)} are not supported by custom "
            f"derivative functions; pass them positionally"
        )
    return tuple(bound.args)


class _CustomFunction:
    """What custom_jvp and custom_vjp share: the function, its static arguments, and splitting a
    call into static (nondiff) arguments and the flat leaves of the others."""

    def __init__(self, fun: Callable, nondiff_argnums=()):
        if not callable(fun):
            raise TypeError(
                f"{type(self).__name__} expects a callable, got {type(fun).__name__}: {fun!r}"
            )
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self._name = getattr(fun, "__name__", type(fun).__name__)

    def _split(self, args: tuple):
        count = len(args)
        static = {number % count for number in self.nondiff_argnums if -count <= number < count}
        nondiff = [args[index] for index in sorted(static)]
        differentiated = tuple(arg for index, arg in enumerate(args) if index not in static)
        leaves, in_tree = _flatten(differentiated)

        def full_args(new_leaves) -> list:
            values = iter(optree.tree_unflatten(in_tree, list(new_leaves)))
            return [args[index] if index in static else next(values) for index in range(count)]

        return nondiff, leaves, in_tree, full_args

    def _call(self, marker_rule_factory, args, kwargs):
        args = _positional(self.fun, self._name, args, kwargs)
        if not autodiff.differentiating():
            return self.fun(*args)
        nondiff, leaves, in_tree, full_args = self._split(args)
        trees: dict = {}

        def flat_fun(*new_leaves):
            output_leaves, trees["out"] = _flatten(self.fun(*full_args(new_leaves)))
            return output_leaves

        rule = marker_rule_factory(nondiff, in_tree, full_args, trees)
        outputs = autodiff.call_with_custom_rule(self._name, flat_fun, leaves, rule)
        return optree.tree_unflatten(trees["out"], outputs)


class custom_jvp(_CustomFunction):
    """A function with a user-defined JVP, as ``jax.custom_jvp``:

    ``@custom_jvp def f(x): ...`` then ``@f.defjvp def f_jvp(primals, tangents): return out, tangent``.
    Reverse mode transposes the user's JVP, which must be linear in the tangents.
    """

    def __init__(self, fun: Callable, nondiff_argnums=()):
        super().__init__(fun, nondiff_argnums)
        self.jvp: Callable | None = None

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
        """Set ``jvp(*nondiff_args, primals, tangents) -> (primal_out, tangent_out)``."""
        if symbolic_zeros:
            raise ValueError(
                "custom_jvp.defjvp: symbolic_zeros=True is not supported; zero tangents are "
                "passed as arrays of zeros"
            )
        self.jvp = jvp
        return jvp

    def defjvps(self, *jvps: Callable | None) -> None:
        """Set one JVP per argument, ``jvp_i(tangent_i, primal_out, *primals)``; outputs add up."""

        if self.nondiff_argnums:
            raise TypeError("custom_jvp.defjvps does not support nondiff_argnums; use defjvp")

        def jvp(primals, tangents):
            output = self(*primals)
            terms = [
                rule(tangent, output, *primals)
                for rule, tangent in zip(jvps, tangents)
                if rule is not None
            ]
            total = functools.reduce(
                lambda first, second: optree.tree_map(
                    lambda a, b: a + b, first, second, namespace=NAMESPACE
                ),
                terms,
            )
            return output, total

        self.defjvp(jvp)

    def __call__(self, *args, **kwargs):
        if self.jvp is None:
            raise AttributeError(
                f"No JVP defined for custom_jvp function {self._name} using defjvp."
            )
        return self._call(self._rule, args, kwargs)

    def _rule(self, nondiff, in_tree, full_args, trees):
        def flat_jvp(primal_leaves, tangent_leaves):
            primals = optree.tree_unflatten(in_tree, list(primal_leaves))
            tangents = optree.tree_unflatten(in_tree, list(tangent_leaves))
            result = self.jvp(*nondiff, tuple(primals), tuple(tangents))
            if not isinstance(result, (tuple, list)) or len(result) != 2:
                raise TypeError(
                    f"custom_jvp rule of {self._name} must return a pair (primal_out, tangent_out)"
                )
            output_leaves, output_tree = _flatten(result[0])
            tangent_leaves_out, tangent_tree = _flatten(result[1])
            # NOTE: the rule may run without the function (traced_rules.py): it gives the tree
            if output_tree != trees.setdefault("out", output_tree) or tangent_tree != trees["out"]:
                raise TypeError(
                    f"Custom JVP rule of {self._name} must produce primal and tangent outputs with "
                    f"the container (pytree) structure of the function's output {PyTreeDef(trees['out'])}, got "
                    f"{PyTreeDef(output_tree)} and {PyTreeDef(tangent_tree)}"
                )
            return output_leaves, tangent_leaves_out

        return autodiff.CustomJVPRule(flat_jvp)


class custom_vjp(_CustomFunction):
    """A function with a user-defined VJP, as ``jax.custom_vjp``: ``f.defvjp(fwd, bwd)`` with
    ``fwd(*args) -> (out, residuals)`` and ``bwd(*nondiff_args, residuals, cotangent) -> tuple``
    of one cotangent (or None) per differentiated argument. Reverse mode only."""

    def __init__(self, fun: Callable, nondiff_argnums=()):
        super().__init__(fun, nondiff_argnums)
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None

    def defvjp(
        self,
        fwd: Callable,
        bwd: Callable,
        symbolic_zeros: bool = False,
        optimize_remat: bool = False,
    ) -> None:
        if symbolic_zeros:
            raise ValueError(
                "custom_vjp.defvjp: symbolic_zeros=True is not supported; zero cotangents are "
                "passed as arrays of zeros"
            )
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args, **kwargs):
        if self.fwd is None:
            raise AttributeError(
                f"No VJP defined for custom_vjp function {self._name} using defvjp."
            )
        return self._call(self._rule, args, kwargs)

    def _rule(self, nondiff, in_tree, full_args, trees):
        def flat_forward(primal_leaves):
            result = self.fwd(*full_args(primal_leaves))
            if not isinstance(result, (tuple, list)) or len(result) != 2:
                raise TypeError(
                    f"Custom VJP fwd rule of {self._name} must produce a pair (list or tuple of length "
                    f"two) of the primal output and the residuals"
                )
            output_leaves, output_tree = _flatten(result[0])
            if output_tree != trees.setdefault("out", output_tree):
                raise TypeError(
                    f"Custom VJP fwd rule of {self._name} must produce a primal output with the "
                    f"structure of the function's output {PyTreeDef(trees['out'])}, got {PyTreeDef(output_tree)}"
                )
            residual_leaves, trees["residuals"] = _flatten(result[1])
            return output_leaves, residual_leaves

        def flat_backward(residual_leaves, cotangent_leaves):
            residuals = optree.tree_unflatten(trees["residuals"], list(residual_leaves))
            cotangent = optree.tree_unflatten(trees["out"], list(cotangent_leaves))
            results = self.bwd(*nondiff, residuals, cotangent)
            return _flat_cotangents(self._name, results, in_tree)

        return autodiff.CustomVJPRule(flat_forward, flat_backward)


def _flat_cotangents(name: str, results, in_tree) -> list:
    """The bwd rule's tuple of per-argument cotangents as flat leaves (None for zero)."""
    arguments = optree.tree_unflatten(in_tree, [0] * in_tree.num_leaves)
    if not isinstance(results, (tuple, list)) or len(results) != len(arguments):
        raise TypeError(
            f"Custom VJP bwd rule of {name} must produce a tuple of length equal to the number of "
            f"differentiated arguments ({len(arguments)}), got {results!r:.200}"
        )
    leaves = []
    for index, (result, argument) in enumerate(zip(results, arguments)):
        argument_tree = structure_spec(argument)
        if result is None:
            leaves.extend([None] * argument_tree.num_leaves)
            continue
        result_leaves, result_tree = _flatten(result)
        if result_tree != argument_tree:
            raise TypeError(
                f"Custom VJP bwd rule of {name} must produce, for argument {index}, a cotangent with "
                f"the argument's structure {PyTreeDef(argument_tree)}, got {PyTreeDef(result_tree)}"
            )
        leaves.extend(result_leaves)
    return leaves
