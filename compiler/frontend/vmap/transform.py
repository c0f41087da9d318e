"""vmap as a transformation of traced IR: the function is traced once on one example's types,
then its ops are re-emitted batched, each through its family's batching rule.

Values carry a batch dim or none (``None``: the same for every example, as the captured values
and the ops on them only); ops none of whose operands is batched are re-emitted as they are.
Named axes (``axis_name``) are bound while the function is traced, so collectives naming them
are recorded (``named_axes``) and rewritten here over the batch dim.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from meshjit.ir import Block, Op, TensorType

from ..autodiff.evaluate import emit
from ..autodiff.markers import stop_gradient
from ..operands import as_operand, dtype_of, shape_of
from ..trace import Trace, Tracer, located_at
from ..trace_functions import trace_region
from . import named_axes
from .custom_rules import batch_custom_call


@dataclass
class BatchAxis:
    """One vmap in progress: its size, its axis name (or None), the mesh axes its dim is sharded
    over (``spmd_axis_name``), and the trace its function is recorded in."""

    size: int
    name: object = None
    spmd_axes: tuple[str, ...] = ()
    traces: list[Trace] = field(default_factory=list)


class _AxisStack(threading.local):
    def __init__(self):
        self.axes: list[BatchAxis] = []
        self.applying: list[BatchAxis] = []


_stack = _AxisStack()


@contextmanager
def _pushed(stack: list, axis: BatchAxis) -> Iterator[None]:
    stack.append(axis)
    try:
        yield
    finally:
        stack.pop()


def named_axis(name) -> BatchAxis | None:
    """The vmap in progress whose axis is called ``name`` (the innermost), if any."""
    for axis in reversed(_stack.axes):
        if axis.name is not None and axis.name == name:
            return axis
    return None


def traced_batch_size() -> int:
    """The product of the sizes of the vmaps whose functions are being traced (1 outside vmap):
    how many examples an op traced now will run for once batched."""
    return math.prod(axis.size for axis in _stack.axes)


def current_batch_axis() -> BatchAxis:
    """The vmap whose batching rules are running (for rules that batch regions)."""
    return _stack.applying[-1]


def spmd_axes_of_current_batch() -> tuple[str, ...]:
    """The mesh axes the batch dim being added now is sharded over (its vmap's spmd_axis_name)."""
    return _stack.applying[-1].spmd_axes if _stack.applying else ()


def per_example_type(value, dim: int | None) -> TensorType:
    shape = tuple(shape_of(value))
    if dim is not None:
        shape = shape[:dim] + shape[dim + 1:]
    return TensorType(shape, dtype_of(value).name)


def vmap_flat(fun: Callable, args: Sequence, dims: Sequence[int | None], size: int, *,
              axis_name=None, spmd_axes: tuple[str, ...] = ()) -> tuple[list, list]:
    """``fun`` (flat arguments to a flat list of outputs) on every example of ``args`` batched
    along ``dims``; the outputs and their batch dims (``None`` where an output does not depend
    on the example). Must run inside a trace (the facade jits eager calls)."""
    args = [as_operand(arg) for arg in args]
    axis = BatchAxis(size, axis_name, tuple(spmd_axes))

    def make_trace(name, *, meshes, parent):
        trace = Trace(name, meshes=meshes, parent=parent)
        axis.traces.append(trace)
        return trace

    types = [per_example_type(arg, dim) for arg, dim in zip(args, dims)]
    weak = [dtype_of(arg).weak for arg in args]
    with _pushed(_stack.axes, axis):
        traced = trace_region(fun, types, weak, name="vmap", trace_type=make_trace)
    inputs = list(args) + list(traced.captured)
    input_dims = list(dims) + [None] * len(traced.captured)
    with _pushed(_stack.applying, axis):
        outputs, out_dims = batch_block(traced.block, inputs, input_dims, axis)
    out_weak = [dtype_of(output).weak for output in traced.outputs]
    outputs = [Tracer(output.trace, output.value, flag) if isinstance(output, Tracer) else output
               for output, flag in zip(outputs, out_weak)]
    return outputs, out_dims


def batch_block(block: Block, inputs: Sequence, dims: Sequence[int | None], axis: BatchAxis):
    """Emit ``block``'s ops batched: the returned values and their batch dims."""
    from meshjit.compiler.tables import batching_rules

    values = {argument.id: (value, dim) for argument, value, dim in zip(block.args, inputs, dims, strict=True)}
    for op in block.ops:
        operands = [values[operand.id][0] for operand in op.operands]
        operand_dims = [values[operand.id][1] for operand in op.operands]
        with located_at(op.location):
            outputs, output_dims = _batch_op(op, operands, operand_dims, axis, batching_rules)
        values.update((value.id, (output, dim)) for value, output, dim in zip(op.results, outputs, output_dims))
    returned = [values[value.id] for value in block.returns]
    return [value for value, _ in returned], [dim for _, dim in returned]


def _batch_op(op: Op, operands, dims, axis: BatchAxis, rules):
    owned = op.name == named_axes.MARKER and op.attrs["axis_name"] == axis.name and axis.name is not None
    if owned:
        return named_axes.rewrite(op, operands, dims, axis.size)
    if all(dim is None for dim in dims):
        return emit(op, operands), [None] * len(op.results)
    if op.name == named_axes.MARKER:
        return named_axes.restage(op, operands[0], dims[0])
    if op.name == "stop_gradient":
        return [stop_gradient(operands[0])], dims
    if op.name in ("custom_jvp_call", "custom_vjp_call"):
        return batch_custom_call(op, operands, dims, axis, batch_block, vmap_flat)
    return rules[op.name](op, operands, dims, axis.size)
