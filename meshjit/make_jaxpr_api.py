"""meshjit.make_jaxpr: the traced program of a function, as IR text.

meshjit's traced program is an IR module (docs/ir.md) rather than a jaxpr; ``make_jaxpr(f)(*args)``
returns it, printed by ``str``/``print`` like JAX's ClosedJaxpr, with its argument and result
types as ``in_avals``/``out_avals``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import optree

from meshjit.ir.dtypes import to_numpy

from ._arguments import ShapeDtypeStruct
from .jit_api import Jitted


class TracedProgram:
    """What ``make_jaxpr`` returns: the traced IR module of a function for some arguments."""

    def __init__(self, lowered):
        self._lowered = lowered

    @property
    def module(self):
        return self._lowered.module

    @property
    def in_avals(self) -> list[ShapeDtypeStruct]:
        return [ShapeDtypeStruct(spec.type.shape, to_numpy(spec.type.dtype), weak_type=spec.weak_type)
                for spec in self._lowered._arg_specs]

    @property
    def out_avals(self) -> list[ShapeDtypeStruct]:
        weak = self._lowered._traced.out_weak_types
        results = self.module.funcs[0].body.returns
        return [ShapeDtypeStruct(value.type.shape, to_numpy(value.type.dtype), weak_type=flag)
                for value, flag in zip(results, weak)]

    def pretty_print(self) -> str:
        return self._lowered.as_text()

    def __str__(self) -> str:
        return self._lowered.as_text()

    def __repr__(self) -> str:
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
        return program, optree.tree_unflatten(program._lowered.out_tree, program.out_avals)

    return make
