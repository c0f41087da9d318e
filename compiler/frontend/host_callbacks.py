"""Staging ``jax.pure_callback`` and ``jax.experimental.io_callback``: one pure_callback or
io_callback op (``ir/ops/callbacks.py``) whose operands are the values the host function
receives and whose results are the types it promises. The facade (``meshjit/_callbacks.py``)
builds the flat host function and calls it at once when nothing is traced."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from meshjit.ir import TensorType
from meshjit.ir.ops.debug import register_callback

from .axis_environment import in_body, innermost_environment
from .numpy_api.creation import asarray
from .trace import Tracer, bind, current_trace


def stage_host_callback(name: str, callback: Callable, operands, types: Sequence[TensorType],
                        attrs: dict) -> list:
    """The results of op ``name`` (pure_callback or io_callback) calling ``callback`` on the
    run-time values of ``operands`` (traced values, arrays or Python numbers). Inside a
    shard_map body it calls back on every device with that device's shard."""
    values = [operand if isinstance(operand, Tracer) else asarray(operand) for operand in operands]
    attrs = dict(attrs, callback=register_callback(callback),
                 result_shapes=tuple(tuple(kind.shape) for kind in types),
                 result_dtypes=tuple(kind.dtype for kind in types))
    environment = innermost_environment()
    if in_body(environment, current_trace()):
        attrs["devices"] = tuple(size if name in environment.manual_axes else 1
                                 for name, size in environment.mesh.axes)
    return bind(name, values, attrs)


def in_shard_map_body() -> bool:
    """Whether the code tracing now is a shard_map body (its values are per device)."""
    return in_body(innermost_environment(), current_trace())
