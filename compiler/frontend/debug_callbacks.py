"""Staging ``jax.debug.callback`` and ``jax.debug.print`` into a traced program: one
debug_callback op (``ir/ops/debug.py``) whose operands are the traced values the callback
receives when the program runs. The facade (``meshjit/debug.py``) builds the callback and
calls it at once when nothing is traced."""

from __future__ import annotations

from collections.abc import Callable

from meshjit.ir.ops.debug import register_callback

from .axis_environment import in_body, innermost_environment
from .numpy_api.creation import asarray
from .trace import Tracer, bind, current_trace


def is_traced(values) -> bool:
    """Whether a callback on ``values`` is staged (inside a trace, or on a traced value) rather
    than called at once."""
    return current_trace() is not None or any(isinstance(value, Tracer) for value in values)


def stage_debug_callback(callback: Callable, operands, *, partitioned: bool = False) -> None:
    """Record a call of ``callback`` on the run-time values of ``operands`` (traced values,
    arrays or Python numbers) at this point of the traced program. With ``partitioned`` the
    callback gets each device's shard instead of the whole value."""
    values = [operand if isinstance(operand, Tracer) else asarray(operand) for operand in operands]
    attrs = {"callback": register_callback(callback), "partitioned": bool(partitioned)}
    environment = innermost_environment()
    if in_body(environment, current_trace()):
        # NOTE: a shard_map body runs per device: the callback runs on every device along the
        # body's manual axes, as JAX's (JAX's order among devices is unspecified; this is theirs)
        attrs["devices"] = tuple(size if name in environment.manual_axes else 1
                                 for name, size in environment.mesh.axes)
    bind("debug_callback", values, attrs)
