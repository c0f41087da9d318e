"""meshjit's autodiff API (jax.grad, value_and_grad, vjp, jvp, linearize, stop_gradient, and the
custom_jvp / custom_vjp decorators): pytrees, argnums, has_aux and argument checks over the
flat transformations in ``meshjit.compiler.frontend.autodiff``.

A function is traced before it is differentiated. Called on concrete arrays (outside jit), a
transformation runs as one jitted program whose trace knows the arguments' values, so Python
control flow may depend on them as in JAX; its results are Arrays.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np
import optree

from meshjit.compiler.frontend import autodiff, lax_ops
from meshjit.compiler.frontend.concrete_values import attach_concrete
from meshjit.compiler.frontend.operands import dtype_of, is_array_like, is_python_scalar, shape_of
from meshjit.compiler.frontend.trace import Tracer, current_trace
from meshjit.ir.dtypes import to_numpy

from ._float0 import as_float0, from_float0, has_tangent_space
from .jit_api import Jitted
from ._pytreedef import PyTreeDef
from .tree_util import NAMESPACE
from .tree_util import _flatten as flatten_tree
from ._pytreedef import jax_ordered


def _flatten(tree):
    return flatten_tree(tree)


def _run(compute: Callable, leaves: Sequence, name: str) -> list:
    """``compute(*leaves)`` (which emits ops) in the current trace, or as one jitted program
    named ``name`` when there is none (autodiff always works inside a trace)."""
    if current_trace() is not None or any(isinstance(leaf, Tracer) for leaf in leaves):
        return list(compute(*leaves))

    def program(*values):
        # NOTE: the traced function sees the caller's values, so Python control flow may
        # branch on them, as under JAX's grad outside jit (concrete_values.py)
        attach_concrete(values, leaves)
        return list(compute(*values))

    program.__name__ = program.__qualname__ = name
    return list(Jitted(program)(*leaves))


def _name(transformation: str, fun: Callable) -> str:
    return f"{transformation}_of_{getattr(fun, '__name__', type(fun).__name__)}"


class _Call:
    """One call's arguments split into the leaves traced (the differentiated arguments' leaves
    and other arrays) and everything else, kept as is: as with JAX's grad, a Python scalar
    passed as a non-differentiated argument stays a Python value the function can branch on."""

    def __init__(self, args: tuple, kwargs: dict, differentiated: tuple[int, ...]):
        paths, self.leaves, treedef = optree.tree_flatten_with_path((args, kwargs), namespace=NAMESPACE)
        self.treedef = jax_ordered(treedef)
        positions = {number % len(args) for number in differentiated}
        self.dynamic = [
            index
            for index, (path, leaf) in enumerate(zip(paths, self.leaves))
            if (path[0] == 0 and path[1] in positions)
            or (is_array_like(leaf) and not is_python_scalar(leaf))
        ]

    @property
    def dynamic_leaves(self) -> list:
        return [self.leaves[index] for index in self.dynamic]

    def rebuild(self, values: Sequence) -> tuple[tuple, dict]:
        leaves = list(self.leaves)
        for index, value in zip(self.dynamic, values):
            leaves[index] = value
        return optree.tree_unflatten(self.treedef, leaves)


def _argnums(argnums, function: str) -> tuple[tuple[int, ...], bool]:
    """``argnums`` as a tuple, and whether the caller asked for a single one (an int)."""
    single = isinstance(argnums, int) and not isinstance(argnums, bool)
    numbers = (argnums,) if single else argnums
    if not isinstance(numbers, (tuple, list)) or not all(
        isinstance(number, int) and not isinstance(number, bool) for number in numbers
    ):
        raise TypeError(f"{function} argnums must be an int or a tuple of ints, got {argnums!r}")
    return tuple(numbers), single


def _split_aux(output, has_aux: bool, function: str):
    if not has_aux:
        return output, ()
    if not isinstance(output, (tuple, list)) or len(output) != 2:
        raise TypeError(
            f"{function} with has_aux=True needs the function to return a pair (tuple or list of "
            f"length two) of (output, auxiliary data), got {type(output).__name__}"
        )
    return output[0], output[1]


def _check_callable(fun, function: str) -> None:
    if not callable(fun):
        raise TypeError(
            f"{function} expects a callable as its first argument, got {type(fun).__name__}: {fun!r}"
        )


# --- grad and value_and_grad -------------------------------------------------------------------


_REAL = ("f32", "f64", "f16", "bf16")
_COMPLEX = ("c64", "c128")


def _check_inputs(leaves, allow_int: bool, function: str, holomorphic: bool = False) -> None:
    for leaf in leaves:
        if not is_array_like(leaf):
            raise TypeError(
                f"{function} differentiates arrays, got an argument of type {type(leaf).__name__}: "
                f"{leaf!r}"
            )
        name = dtype_of(leaf).name
        if holomorphic and name not in _COMPLEX:
            raise TypeError(f"{function} with holomorphic=True requires inputs with complex dtype, "
                            f"but got {_numpy_name(name)}.")
        if not has_tangent_space(name) and not allow_int:
            raise TypeError(
                f"{function} requires real- or complex-valued inputs (input dtype that is a sub-dtype "
                f"of np.inexact), but got {_numpy_name(name)}. If you want to use Boolean- or "
                f"integer-valued inputs, use vjp or set allow_int to True."
            )


def _numpy_name(ir_dtype: str) -> str:
    return to_numpy(ir_dtype).name


def _check_array_output(output, function: str) -> None:
    if not is_array_like(output):
        raise TypeError(
            f"{function} needs the function to return an array, got {type(output).__name__}"
        )


def _check_scalar_output(output, function: str, holomorphic: bool = False) -> None:
    _check_array_output(output, function)
    if shape_of(output) != ():
        raise TypeError(
            f"Gradient only defined for scalar-output functions. Output had shape: {shape_of(output)}."
        )
    name = dtype_of(output).name
    if holomorphic and name not in _COMPLEX:
        raise TypeError(f"{function} with holomorphic=True requires outputs with complex dtype, "
                        f"but got {_numpy_name(name)}.")
    if not holomorphic and name not in _REAL:
        hint = (" For holomorphic differentiation, pass holomorphic=True. For differentiation of "
                "non-holomorphic functions involving complex outputs, use jax.vjp directly."
                if name in _COMPLEX else "")
        raise TypeError(
            f"{function} requires real-valued outputs (output dtype that is a sub-dtype of "
            f"np.floating), but got {_numpy_name(name)}.{hint}"
        )


def value_and_grad(
    fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False, allow_int: bool = False
) -> Callable:
    """A function returning ``fun``'s value and its gradient with respect to the positional
    arguments ``argnums`` (``((value, aux), grad)`` with ``has_aux``), as ``jax.value_and_grad``.
    ``holomorphic=True`` differentiates a complex function of complex inputs (its derivative
    ``f'(z)``); without it the output must be real, and the gradient with respect to a complex
    input is JAX's (the conjugate of twice the Wirtinger derivative)."""
    _check_callable(fun, "value_and_grad")
    numbers, single = _argnums(argnums, "value_and_grad")

    @functools.wraps(fun)
    def value_and_grad_fun(*args, **kwargs):
        if any(number >= len(args) or number < -len(args) for number in numbers):
            raise TypeError(
                f"differentiating with respect to argnums={argnums} requires at least "
                f"{max(number + 1 if number >= 0 else -number for number in numbers)} positional "
                f"arguments to be passed by the caller, but got only {len(args)}"
            )
        call = _Call(args, kwargs, numbers)
        boxes: dict = {}
        outputs = _run(
            functools.partial(_value_and_grad_flat, fun, numbers, (has_aux, holomorphic), allow_int, call, boxes),
            call.dynamic_leaves,
            _name("value_and_grad", fun),
        )
        return _assemble(outputs, boxes, single, has_aux)

    return value_and_grad_fun


def _value_and_grad_flat(
    fun, numbers, flags, allow_int, call: _Call, boxes: dict, *values
) -> list:
    has_aux, holomorphic = flags
    args, kwargs = call.rebuild(values)
    differentiated = tuple(args[number] for number in numbers)
    leaves, in_tree = _flatten(differentiated)
    _check_inputs(leaves, allow_int, "grad", holomorphic)

    def flat_fun(*new_leaves):
        new_args = list(args)
        for number, value in zip(numbers, optree.tree_unflatten(in_tree, list(new_leaves))):
            new_args[number] = value
        output, aux = _split_aux(fun(*new_args, **kwargs), has_aux, "grad")
        _check_array_output(output, "grad")
        return [output] + _traced_aux(aux, boxes)

    linearized = autodiff.linearize(flat_fun, leaves)
    # NOTE: after differentiating, as JAX checks: an op without a derivative raises first
    _check_scalar_output(linearized.outputs[0], "grad", holomorphic)
    gradients = autodiff.transpose_linear(
        linearized,
        [np.ones((), _numpy_name(dtype_of(linearized.outputs[0]).name))]
        + [None] * (len(linearized.outputs) - 1),
    )
    boxes["in_tree"] = in_tree
    if not holomorphic:
        # NOTE: a complex input's gradient comes from the real output through complex(...) of
        # real parts, a strongly typed value in JAX even for a weak (Python) complex input
        gradients = [_strong(gradient) if dtype_of(leaf).name in _COMPLEX else gradient
                     for gradient, leaf in zip(gradients, leaves)]
    return linearized.outputs + gradients


def _strong(value):
    return lax_ops._convert_element_type(value, dtype_of(value).name, weak_type=False)


def _traced_aux(aux, boxes: dict) -> list:
    """The traced leaves of a function's aux data, which become outputs; the others (Python
    values, numpy arrays, strings) are kept in ``boxes`` and come back as they are, as JAX's."""
    leaves, boxes["aux_tree"] = _flatten(aux)
    boxes["aux_leaves"] = [(isinstance(leaf, Tracer), leaf) for leaf in leaves]
    return [leaf for traced, leaf in boxes["aux_leaves"] if traced]


def _aux(outputs: list, boxes: dict):
    """The aux data from its traced leaves' results and the kept leaves."""
    results = iter(outputs)
    leaves = [next(results) if traced else leaf for traced, leaf in boxes["aux_leaves"]]
    return optree.tree_unflatten(boxes["aux_tree"], leaves)


def _aux_count(boxes: dict) -> int:
    return sum(traced for traced, _ in boxes["aux_leaves"])


def _assemble(outputs: list, boxes: dict, single: bool, has_aux: bool):
    in_tree = boxes["in_tree"]
    aux_count = _aux_count(boxes)
    value, aux = outputs[0], _aux(outputs[1 : 1 + aux_count], boxes)
    gradients = optree.tree_unflatten(in_tree, as_float0(outputs[1 + aux_count :]))
    gradient = gradients[0] if single else gradients
    return ((value, aux), gradient) if has_aux else (value, gradient)


def grad(
    fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False, allow_int: bool = False
) -> Callable:
    """A function returning the gradient of scalar-valued ``fun`` with respect to the positional
    arguments ``argnums`` (``(grad, aux)`` with ``has_aux``), as ``jax.grad`` (``holomorphic``
    as in ``value_and_grad``)."""
    _check_callable(fun, "grad")
    value_and_grad_fun = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

    @functools.wraps(fun)
    def grad_fun(*args, **kwargs):
        value, gradient = value_and_grad_fun(*args, **kwargs)
        return (gradient, value[1]) if has_aux else gradient

    return grad_fun


# --- vjp, jvp, linearize -----------------------------------------------------------------------


def _check_primals(leaves, function: str) -> None:
    for leaf in leaves:
        if not is_array_like(leaf):
            raise TypeError(
                f"{function}: primal arguments must be arrays or scalars, got {type(leaf).__name__}: "
                f"{leaf!r}"
            )


def _flat_function(fun: Callable, in_tree, has_aux: bool, function: str, trees: dict) -> Callable:
    """``fun`` over the flat leaves of its positional arguments, returning its output's leaves
    then its aux data's leaves; ``trees`` receives both structures ("out" and "aux")."""

    def flat_fun(*new_leaves):
        output = fun(*optree.tree_unflatten(in_tree, list(new_leaves)))
        output, aux = _split_aux(output, has_aux, function)
        output_leaves, trees["out"] = _flatten(output)
        return output_leaves + _traced_aux(aux, trees)

    return flat_fun


def _linearize_tree(fun: Callable, primals: tuple, has_aux: bool, function: str):
    """Linearize ``fun`` at the pytree ``primals``; returns (Linearized with concrete or traced
    residuals, input tree, output tree, aux tree)."""
    _check_callable(fun, function)
    leaves, in_tree = _flatten(tuple(primals))
    _check_primals(leaves, function)
    trees: dict = {}
    flat_fun = _flat_function(fun, in_tree, has_aux, function, trees)

    def forward(*values):
        trees["linearized"] = autodiff.linearize(flat_fun, values)
        return trees["linearized"].outputs + trees["linearized"].linear.residuals

    results = _run(forward, leaves, _name(function, fun))
    count = len(trees["linearized"].outputs)
    linearized = trees["linearized"].with_residuals(results[count:])
    linearized.outputs = results[:count]
    return linearized, in_tree, trees["out"], trees


def _outputs(linearized, out_tree, trees: dict):
    count = out_tree.num_leaves
    output = optree.tree_unflatten(out_tree, linearized.outputs[:count])
    return output, _aux(linearized.outputs[count:], trees)


def _check_like(given, expected, what: str, function: str) -> None:
    """``given`` leaves have the shapes and dtypes of ``expected`` leaves."""
    for index, (leaf, reference) in enumerate(zip(given, expected)):
        if not is_array_like(leaf):
            raise TypeError(
                f"{function}: {what} {index} must be an array, got {type(leaf).__name__}"
            )
        if shape_of(leaf) != shape_of(reference) or dtype_of(leaf).name != dtype_of(reference).name:
            raise ValueError(
                f"{function}: {what} {index} has type {_numpy_name(dtype_of(leaf).name)}"
                f"{list(shape_of(leaf))}, but the corresponding primal has type "
                f"{_numpy_name(dtype_of(reference).name)}{list(shape_of(reference))}"
            )


def vjp(fun: Callable, *primals, has_aux: bool = False):
    """``(fun(*primals), vjp_fun)`` (and aux with ``has_aux``), where ``vjp_fun(cotangent)``
    returns one cotangent per primal, as ``jax.vjp``. Integer primals get zero cotangents of
    float0 (``meshjit.dtypes.float0``) cotangents, as in JAX."""
    linearized, in_tree, out_tree, trees = _linearize_tree(fun, primals, has_aux, "vjp")
    output, aux = _outputs(linearized, out_tree, trees)
    residual_count = len(linearized.linear.residuals)

    def vjp_fun(cotangent):
        leaves, tree = _flatten(cotangent)
        if tree != out_tree:
            raise TypeError(
                f"vjp: the cotangent has tree structure {PyTreeDef(tree)}, but the primal output has {PyTreeDef(out_tree)}"
            )
        outputs = linearized.outputs[: out_tree.num_leaves]
        leaves = from_float0(leaves, outputs, "cotangent", "vjp")
        _check_like(leaves, outputs, "cotangent", "vjp")
        extra = [None] * _aux_count(trees)

        def backward(*values):
            current = linearized.with_residuals(values[:residual_count])
            return autodiff.transpose_linear(current, list(values[residual_count:]) + extra)

        results = _run(
            backward, list(linearized.linear.residuals) + leaves, _name("vjp_backward", fun)
        )
        return optree.tree_unflatten(in_tree, as_float0(results))

    return (output, vjp_fun, aux) if has_aux else (output, vjp_fun)


def linearize(fun: Callable, *primals, has_aux: bool = False):
    """``(fun(*primals), f_jvp)`` (and aux with ``has_aux``), where ``f_jvp(*tangents)`` is the
    linear map from input to output tangents, as ``jax.linearize``."""
    linearized, in_tree, out_tree, trees = _linearize_tree(fun, primals, has_aux, "linearize")
    output, aux = _outputs(linearized, out_tree, trees)
    residual_count = len(linearized.linear.residuals)

    def f_jvp(*tangents):
        leaves, tree = _flatten(tuple(tangents))
        if tree != in_tree:
            raise TypeError(
                f"linearize: the tangents have tree structure {PyTreeDef(tree)}, but the primals have {PyTreeDef(in_tree)}"
            )
        primal_leaves = _flatten(tuple(primals))[0]
        leaves = from_float0(leaves, primal_leaves, "tangent", "linearize")
        _check_like(leaves, primal_leaves, "tangent", "linearize")

        def forward(*values):
            current = linearized.with_residuals(values[:residual_count])
            return autodiff.apply_linear(current, values[residual_count:])[: out_tree.num_leaves]

        results = _run(forward, list(linearized.linear.residuals) + leaves, _name("linear", fun))
        return optree.tree_unflatten(out_tree, as_float0(results))

    return (output, f_jvp, aux) if has_aux else (output, f_jvp)


def _jvp_leaves(primals, tangents):
    """The flat primals and tangents of ``jvp``, checked to match; and the primals' tree."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError(
            f"primal and tangent arguments to jvp must be tuples or lists; found "
            f"{type(primals).__name__} and {type(tangents).__name__}"
        )
    primal_leaves, in_tree = _flatten(tuple(primals))
    tangent_leaves, tangent_tree = _flatten(tuple(tangents))
    if tangent_tree != in_tree:
        raise TypeError(
            f"primal and tangent arguments to jvp must have the same tree structure; primals "
            f"have {PyTreeDef(in_tree)} and tangents have {PyTreeDef(tangent_tree)}"
        )
    _check_primals(primal_leaves, "jvp")
    tangent_leaves = from_float0(tangent_leaves, primal_leaves, "tangent", "jax.jvp")
    _check_like(tangent_leaves, primal_leaves, "tangent", "jvp")
    return primal_leaves, tangent_leaves, in_tree


def jvp(fun: Callable, primals, tangents, has_aux: bool = False):
    """``(fun(*primals), tangent_out)`` (and aux with ``has_aux``): the output and its tangent
    along ``tangents``, as ``jax.jvp``."""
    _check_callable(fun, "jvp")
    primal_leaves, tangent_leaves, in_tree = _jvp_leaves(primals, tangents)
    trees: dict = {}
    flat_fun = _flat_function(fun, in_tree, has_aux, "jvp", trees)

    def compute(*values):
        count = len(primal_leaves)
        outputs, output_tangents = autodiff.jvp(flat_fun, values[:count], values[count:])
        return outputs + output_tangents[: trees["out"].num_leaves]

    results = _run(compute, primal_leaves + tangent_leaves, _name("jvp", fun))
    output_count = trees["out"].num_leaves
    count = output_count + _aux_count(trees)
    output = optree.tree_unflatten(trees["out"], results[:output_count])
    tangent = optree.tree_unflatten(trees["out"], as_float0(results[count:]))
    if not has_aux:
        return output, tangent
    return output, tangent, _aux(results[output_count:count], trees)


def stop_gradient(x):
    """``x`` (a pytree), through which no derivative flows, as ``jax.lax.stop_gradient``."""
    return optree.tree_map(autodiff.stop_gradient, x, namespace=NAMESPACE)


# NOTE: imported last; the decorators live in their own file.
from .custom_derivatives import custom_jvp as custom_jvp  # noqa: E402
from .custom_derivatives import custom_vjp as custom_vjp  # noqa: E402
