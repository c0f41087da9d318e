"""meshjit.test_util.check_grads, as ``jax.test_util.check_grads``: a function's forward- and
reverse-mode derivatives, up to ``order``, checked against central finite differences along
random directions (AssertionError naming the mode and the values when they differ). Complex
arguments and results are compared as JAX does: random complex directions, the inner product
``Re(sum(conj(x) y))``, and the VJP's cotangents conjugated around the pullback."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import optree

from .ad_api import jvp, vjp
from .tree_util import NAMESPACE

__all__ = ["check_grads", "check_jvp", "check_vjp"]

EPS = 1e-4
# NOTE: the default tolerances per dtype, as JAX's test utilities use them
_TOLERANCE = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 2e-3, np.dtype(np.float64): 1e-5}


def _leaves(tree) -> list:
    return optree.tree_leaves(tree, namespace=NAMESPACE)


def _tolerance(values, given) -> float:
    if given is not None:
        return given
    dtypes = [np.asarray(value).dtype for value in _leaves(values)]
    return max((_TOLERANCE.get(dtype, 1e-5) for dtype in dtypes), default=1e-5)


def _random_like(tree, generator: np.random.Generator):
    def draw(leaf):
        dtype = _dtype(leaf)
        values = generator.standard_normal(np.shape(leaf))
        if dtype.kind == "c":
            values = values + 1j * generator.standard_normal(np.shape(leaf))
        return values.astype(dtype)

    return optree.tree_map(draw, tree, namespace=NAMESPACE)


def _wide(value) -> np.ndarray:
    """``value`` in float64, or complex128 when it is complex."""
    value = np.asarray(value)
    return value.astype(np.complex128 if value.dtype.kind == "c" else np.float64)


def _conjugate(tree):
    return optree.tree_map(np.conj, tree, namespace=NAMESPACE)


def _dtype(leaf) -> np.dtype:
    dtype = getattr(leaf, "dtype", None)
    return np.dtype(dtype) if dtype is not None else np.asarray(leaf).dtype


def _combine(tree, other, scale: float):
    """``tree + scale * other`` computed in each leaf's own dtype."""
    def step(a, b):
        dtype = _dtype(a)
        return np.asarray(np.asarray(a, dtype) + np.asarray(scale, dtype) * np.asarray(b, dtype), dtype)

    return optree.tree_map(step, tree, other, namespace=NAMESPACE)


def _inner(first, second) -> float:
    """``Re(sum(conj(x) y))`` over the leaves."""
    return float(sum(np.real(np.vdot(_wide(a), _wide(b))) for a, b in zip(_leaves(first), _leaves(second))))


def _assert_close(what: str, actual, expected, atol: float, rtol: float) -> None:
    for have, want in zip(_leaves(actual), _leaves(expected)):
        have, want = _wide(have), _wide(want)
        # NOTE: as JAX's check_grads, the tolerances grow with the number of elements compared
        if not np.allclose(have, want, atol=atol * have.size, rtol=rtol * have.size):
            raise AssertionError(f"check_grads: {what} differs from finite differences:\n{have}\nvs\n{want}")


def _central_difference(f: Callable, args: tuple, tangents, eps: float):
    """``(f(args + eps t) - f(args - eps t)) / (2 eps)``, in float64."""
    forward = f(*_combine(args, tangents, eps))
    backward = f(*_combine(args, tangents, -eps))
    return optree.tree_map(lambda a, b: (_wide(a) - _wide(b)) / (2 * eps), forward, backward, namespace=NAMESPACE)


def check_jvp(f: Callable, f_jvp: Callable, args: Sequence, atol=None, rtol=None, eps=EPS) -> None:
    """``f_jvp(args, tangents)`` against the central difference of ``f`` along random tangents."""
    generator = np.random.default_rng(0)
    tangents = _random_like(tuple(args), generator)
    outputs, output_tangents = f_jvp(tuple(args), tangents)
    numeric = _central_difference(f, tuple(args), tangents, eps)
    tolerance = _tolerance(outputs, None)
    _assert_close("the JVP", output_tangents, numeric, atol or tolerance, rtol or tolerance)



def check_vjp(f: Callable, f_vjp: Callable, args: Sequence, atol=None, rtol=None, eps=EPS) -> None:
    """``<vjp(cotangent), tangent>`` against ``<cotangent, finite-difference JVP>``."""
    generator = np.random.default_rng(1)
    tangents = _random_like(tuple(args), generator)
    outputs, pullback = f_vjp(*args)
    cotangents = _random_like(outputs, generator)
    numeric = _central_difference(f, tuple(args), tangents, eps)
    tolerance = _tolerance(outputs, None)
    pulled = _conjugate(pullback(_conjugate(cotangents)))
    _assert_close("the VJP", _inner(tangents, pulled), _inner(numeric, cotangents), atol or tolerance, rtol or tolerance)


def check_grads(f: Callable, args: Sequence, order: int, modes=("fwd", "rev"), atol=None, rtol=None,
                eps=None) -> None:
    """Check ``f``'s derivatives at ``args`` up to ``order`` in the ``modes`` ("fwd", "rev")."""
    args = tuple(args)
    eps = eps or EPS
    for mode in modes:
        if mode not in ("fwd", "rev"):
            raise ValueError(f"check_grads: unknown mode {mode!r}; expected 'fwd' or 'rev'")
    _check(f, args, order, tuple(modes), atol, rtol, eps)


def _check(f, args, order, modes, atol, rtol, eps) -> None:
    if order == 0:
        return
    if "fwd" in modes:
        check_jvp(f, lambda primals, tangents: jvp(f, primals, tangents), args, atol, rtol, eps)
        if order > 1:
            directions = _random_like(args, np.random.default_rng(2))
            _check(lambda *primals: jvp(f, primals, directions)[1], args, order - 1, ("fwd",), atol, rtol, eps)
    if "rev" in modes:
        check_vjp(f, lambda *primals: vjp(f, *primals), args, atol, rtol, eps)
        if order > 1:
            cotangents = _random_like(f(*args), np.random.default_rng(3))

            def pulled(*primals):
                return vjp(f, *primals)[1](cotangents)

            _check(pulled, args, order - 1, ("rev",), atol, rtol, eps)
