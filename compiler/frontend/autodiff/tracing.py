"""The traces autodiff records functions into, and the questions rules ask about the current one.

A ``DifferentiationTrace`` marks a function autodiff will transform: markers (stop_gradient,
custom derivative calls) are kept as ops inside it and inside regions nested in it, and replaced
by their plain meaning anywhere else. A linearizing trace (``transposable=True``) records a JVP
whose tangent part will be transposed, which custom_vjp functions require.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..trace import Trace, current_trace
from ..trace_functions import TracedRegion, trace_region


@dataclass
class DifferentiationTrace(Trace):
    """A trace whose ops autodiff will transform (see the module docstring)."""

    transposable: bool = False


def _enclosing_traces():
    trace = current_trace()
    while trace is not None:
        yield trace
        trace = trace.parent


def differentiating() -> bool:
    """Whether the ops recorded now will be transformed by autodiff (so markers must stay)."""
    return any(isinstance(trace, DifferentiationTrace) for trace in _enclosing_traces())


def linearizing() -> bool:
    """Whether the ops recorded now form a JVP whose tangent part will be transposed."""
    return any(
        isinstance(trace, DifferentiationTrace) and trace.transposable
        for trace in _enclosing_traces()
    )


def trace_for_differentiation(
    fun: Callable, arg_types, arg_weak_types, *, name: str, transposable: bool = False, arg_sharding_types=None,
    arg_sources=None,
) -> TracedRegion:
    """Trace ``fun`` over fresh arguments into a block inside the current trace.

    Values ``fun`` uses from outside (the current trace's Tracers, device arrays) become extra
    block arguments after the explicit ones; ``captured`` lists what they stand for.
    ``arg_sharding_types`` are the primals' sharding types (explicit mode); ``arg_sources``
    the objects the arguments stand for, so their concrete values can be known (outside jit).
    """

    def make_trace(trace_name, *, meshes, parent):
        return DifferentiationTrace(
            trace_name, meshes=meshes, parent=parent, transposable=transposable
        )

    return trace_region(fun, arg_types, arg_weak_types, name=name, trace_type=make_trace,
                        arg_sharding_types=arg_sharding_types, arg_sources=arg_sources)
