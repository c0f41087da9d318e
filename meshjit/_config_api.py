"""Top-level settings and small utilities of ``jax``: ``disable_jit``, ``enable_x64``,
``default_backend``, ``clear_caches`` and ``linear_transpose``."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import numpy as np
import optree

from meshjit.ir.config import config

from .ad_api import vjp
from .jit_api import clear_jit_caches
from .tree_util import NAMESPACE


@contextlib.contextmanager
def _setting(name: str, value):
    previous = config.read(name)
    config.update(name, value)
    try:
        yield
    finally:
        config.update(name, previous)


def disable_jit(disable: bool = True):
    """A context in which ``jit``-decorated functions run their Python op by op on concrete
    arrays instead of compiling (prints show values; ``grad``, ``vmap`` and the like still work)."""
    return _setting("jax_disable_jit", bool(disable))


def enable_x64(new_val: bool = True):
    """A context in which 64-bit dtypes are kept (``jax_enable_x64``)."""
    return _setting("jax_enable_x64", bool(new_val))


def default_backend() -> str:
    """The platform of the default devices: always ``"cpu"`` (meshjit's devices)."""
    return "cpu"


def clear_caches() -> None:
    """Forget every traced and compiled program, so the next call of each jitted function traces
    again (compiled kernels stay in the on-disk cache)."""
    clear_jit_caches()


def _zeros_like_primal(primal):
    shape, dtype = getattr(primal, "shape", None), getattr(primal, "dtype", None)
    if shape is None or dtype is None:
        raise TypeError(f"linear_transpose: primals must be arrays or ShapeDtypeStructs, got {primal!r}")
    return np.zeros(shape, dtype)


def linear_transpose(fun: Callable, *primals, reduce_axes=()) -> Callable:
    """The transpose of the linear function ``fun`` at inputs shaped as ``primals`` (arrays or
    ShapeDtypeStructs): ``transpose(cotangent)`` returns a tuple with one cotangent per primal.
    ``fun`` must be linear; its transpose is its vector-Jacobian product at any point."""
    if not callable(fun):
        raise TypeError(f"linear_transpose expects a callable, got {type(fun).__name__}: {fun!r}")
    if reduce_axes:
        raise ValueError("reduce_axes argument to transpose is deprecated and must be empty")
    points = optree.tree_map(_zeros_like_primal, primals, namespace=NAMESPACE)
    _, pullback = vjp(fun, *points)

    def transposed(cotangent):
        return pullback(cotangent)

    return transposed
