"""meshjit.make_jaxpr: the traced program of a function as JAX's ClosedJaxpr.

meshjit's traced program is an IR module (docs/ir.md); ``make_jaxpr(f)(*args)`` returns it as
JAX's jaxpr objects (meshjit/_jaxpr.py), printed as JAX prints a jaxpr, with the IR module
still at hand (``.module``, ``.as_text()``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import optree

from ._arguments import ShapeDtypeStruct
from ._jaxpr import ClosedJaxpr, Literal, ShapedArray
from ._jaxpr_from_ir import closed_jaxpr
from .jit_api import Jitted


class TracedProgram(ClosedJaxpr):
    """What ``make_jaxpr`` returns: JAX's ClosedJaxpr of the traced program (``.jaxpr``,
    ``.eqns``, ``.consts``, ``in_avals``, printed as JAX prints it), over meshjit's traced IR
    module (``.module``, whose text ``as_text()`` gives)."""

    __slots__ = ("_lowered",)

    def __init__(self, lowered):
        self._lowered = lowered
        weak = [spec.weak_type for spec in lowered._arg_specs]
        closed = closed_jaxpr(lowered.module.main, weak, lowered._traced.sharding_types)
        super().__init__(closed.jaxpr, closed.consts)
        for var, flag in zip(self.jaxpr.outvars, lowered._traced.out_weak_types):
            var.aval = ShapedArray(var.aval.shape, var.aval.dtype, flag, var.aval.sharding) \
                if not isinstance(var, Literal) \
                else var.aval

    @property
    def module(self):
        return self._lowered.module

    def as_text(self) -> str:
        """meshjit's IR text of the traced program (docs/ir.md)."""
        return self._lowered.as_text()


def make_jaxpr(fun: Callable, static_argnums=(), return_shape: bool = False):
    """A function returning the traced program of ``fun`` for its arguments (and, with
    ``return_shape``, the output's pytree of ShapeDtypeStructs), as ``jax.make_jaxpr``."""
    if not callable(fun):
        raise TypeError(f"make_jaxpr expects a callable, got {type(fun).__name__}: {fun!r}")
    jitted = Jitted(fun, static_argnums=static_argnums)

    @functools.wraps(fun)
    def make(*args, **kwargs):
        program = TracedProgram(jitted.lower(*args, **kwargs))
        if not return_shape:
            return program
        return program, optree.tree_unflatten(program._lowered._out_tree, _shapes(program))

    return make


def _shapes(program: TracedProgram) -> list[ShapeDtypeStruct]:
    return [ShapeDtypeStruct(aval.shape, aval.dtype, weak_type=aval.weak_type) for aval in program.out_avals]
