"""meshjit.test_util.check_grads, as ``jax.test_util.check_grads``: a function's forward- and
reverse-mode derivatives, up to ``order``, checked against central finite differences along
random directions (AssertionError naming the mode and the values when they differ).

The check is JAX's step for step, so a program that passes under JAX passes here: the
directions are ``np.random.RandomState(0)`` normals drawn per check in the arguments' dtypes,
the differences are taken in those dtypes, a higher order checks ``jvp(f)`` as a function of
(primals, tangents) (forward) and ``args -> vjp(f)(f(args))`` (reverse), and the tolerances
per dtype grow with the number of elements compared.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np
import optree

from .ad_api import jvp, vjp
from .dtypes import canonicalize_dtype
from .tree_util import NAMESPACE

__all__ = ["check_grads", "check_jvp", "check_vjp"]

EPS = 1e-4
# NOTE: the default gradient tolerances per dtype, as JAX's test utilities use them
_TOLERANCE = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 2e-3, np.dtype(np.float64): 1e-5,
              np.dtype(np.complex64): 1e-3, np.dtype(np.complex128): 1e-5}
_PYTHON_SCALARS = (bool, int, float, complex)


def _map(function, tree, *rest):
    return optree.tree_map(function, tree, *rest, namespace=NAMESPACE)


def _dtype(leaf) -> np.dtype:
    dtype = getattr(leaf, "dtype", None)
    if dtype is not None:
        return np.dtype(dtype)
    return np.dtype(type(leaf)) if isinstance(leaf, _PYTHON_SCALARS) else np.asarray(leaf).dtype


def _is_python_scalar(leaf) -> bool:
    return isinstance(leaf, _PYTHON_SCALARS) and not isinstance(leaf, np.generic)


def _random_like(generator: np.random.RandomState, leaf):
    """Standard normals shaped as ``leaf`` in its dtype (complex: both parts); a Python scalar
    for a Python scalar."""
    shape, dtype = np.shape(leaf), _dtype(leaf)
    result = np.asarray(generator.randn(*shape), dtype=dtype)
    if np.issubdtype(dtype, np.complexfloating):
        result = result + dtype.type(1j) * np.asarray(generator.randn(*shape), dtype=dtype)
    return result.item() if _is_python_scalar(leaf) else result


def _in_dtype_of_first(operation):
    def apply(first, second):
        result = np.array(operation(first, second), dtype=_dtype(first))
        return result.item() if _is_python_scalar(first) and _is_python_scalar(second) else result
    return apply


def _scaled(tree, scale: float):
    def multiply(leaf):
        dtype = _dtype(leaf)
        result = np.multiply(leaf, np.array(scale, dtype=dtype), dtype=dtype)
        return result.item() if _is_python_scalar(leaf) else result
    return _map(multiply, tree)


def _difference(first, second):
    """``first - second`` in ``first``'s dtype, with ``inf - inf`` (equal values) 0."""
    dtype = _dtype(first)
    with np.errstate(invalid="ignore"):
        return np.where(np.equal(first, second), np.array(0, dtype), np.subtract(first, second, dtype=dtype))


def numerical_jvp(f: Callable, primals, tangents, eps: float = EPS):
    """The central difference ``(f(x + eps t) - f(x - eps t)) / (2 eps)``, in the dtypes."""
    delta = _scaled(tangents, eps)
    forward = f(*_map(_in_dtype_of_first(np.add), primals, delta))
    backward = f(*_map(_in_dtype_of_first(np.subtract), primals, delta))
    return _scaled(_map(_difference, forward, backward), 0.5 / eps)


def _tolerance(dtype: np.dtype, given) -> float:
    if given is not None and not isinstance(given, dict):
        return given
    table = dict(_TOLERANCE, **{np.dtype(key): value for key, value in (given or {}).items()})
    return table.get(np.dtype(canonicalize_dtype(dtype)), 1e-6)


def _check_close(what: str, actual, expected, atol, rtol) -> None:
    def close(have, want):
        have, want = np.asarray(have), np.asarray(want)
        absolute = max(_tolerance(have.dtype, atol), _tolerance(want.dtype, atol)) * have.size
        relative = max(_tolerance(have.dtype, rtol), _tolerance(want.dtype, rtol)) * want.size
        with np.errstate(invalid="ignore"):
            if not np.allclose(have.astype(np.complex128 if have.dtype.kind == "c" else np.float64),
                               want, atol=absolute, rtol=relative, equal_nan=True):
                raise AssertionError(f"check_grads: {what} differs from finite differences:\n{have}\nvs\n{want}")
    _map(close, actual, expected)


def _inner(first, second) -> float:
    def contract(a, b):
        return np.real(np.dot(np.conj(np.asarray(a)).reshape(-1), np.asarray(b).reshape(-1)))
    return functools.reduce(np.add, optree.tree_leaves(_map(contract, first, second), namespace=NAMESPACE), 0.0)


def check_jvp(f: Callable, f_jvp: Callable, args: Sequence, atol=None, rtol=None, eps=EPS) -> None:
    """``f_jvp(args, tangents)`` against the central difference of ``f`` along a random tangent."""
    generator = np.random.RandomState(0)
    tangents = _map(functools.partial(_random_like, generator), tuple(args))
    outputs, output_tangents = f_jvp(tuple(args), tangents)
    _check_close("the primal output", outputs, f(*args), atol, rtol)
    _check_close("the JVP", output_tangents, numerical_jvp(f, tuple(args), tangents, eps), atol, rtol)


def check_vjp(f: Callable, f_vjp: Callable, args: Sequence, atol=None, rtol=None, eps=EPS) -> None:
    """``<vjp(cotangent), tangent>`` against ``<cotangent, finite-difference JVP>``."""
    random_like = functools.partial(_random_like, np.random.RandomState(0))
    outputs, pullback = f_vjp(*args)
    _check_close("the primal output", outputs, f(*args), atol, rtol)
    tangents = _map(random_like, tuple(args))
    numeric = numerical_jvp(f, tuple(args), tangents, eps)
    cotangents = _map(random_like, outputs)
    pulled = _map(np.conj, pullback(_map(np.conj, cotangents)))
    _check_close("the VJP", _inner(tangents, pulled), _inner(numeric, cotangents), atol, rtol)


def check_grads(f: Callable, args: Sequence, order: int, modes=("fwd", "rev"), atol=None, rtol=None,
                eps=None) -> None:
    """Check ``f``'s derivatives at ``args`` up to ``order`` in the ``modes`` ("fwd", "rev")."""
    for mode in modes:
        if mode not in ("fwd", "rev"):
            raise ValueError(f"check_grads: unknown mode {mode!r}; expected 'fwd' or 'rev'")
    _check(f, tuple(args), order, tuple(modes), atol, rtol, eps or EPS)


def _check(f, args, order, modes, atol, rtol, eps) -> None:
    if "fwd" in modes:
        check_jvp(f, functools.partial(jvp, f), args, atol, rtol, eps)
        if order > 1:
            _check(functools.partial(jvp, f), (args, args), order - 1, modes, atol, rtol, eps)
    if "rev" in modes:
        check_vjp(f, functools.partial(vjp, f), args, atol, rtol, eps)
        if order > 1:
            def pulled(*primals):
                outputs, pullback = vjp(f, *primals)
                return pullback(outputs)

            _check(pulled, args, order - 1, modes, atol, rtol, eps)
