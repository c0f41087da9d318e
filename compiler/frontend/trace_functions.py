"""Tracing a whole function: ``trace_flat`` runs it on Tracers of the given types into a Module's
entry function, ``trace_region`` into a region Block (a loop body, a branch, a shard_map body)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from meshjit.ir import Block, Func, Module, Value

from ..sharding.sharding_types import ShardingType

from .operands import canonical_numpy
from .trace import (
    Trace,
    Tracer,
    current_trace,
    is_concrete_array,
    operand_sharding_type,
    operand_value,
    trace_stack,
    user_location,
)


@dataclass
class TracedFunction:
    """A traced function: its module, and the concrete arrays it captured (extra arguments)."""

    module: Module
    captured: list
    out_weak_types: list[bool]
    out_sharding_types: list[ShardingType] = field(default_factory=list)
    # NOTE: every traced value's sharding type by value id (region bodies' too), for make_jaxpr
    sharding_types: dict = field(default_factory=dict)


def _canonical_output(output):
    """A function's output that it did not compute (a Python or numpy value) in the dtype JAX
    gives it: float32/int32 unless x64 is on."""
    if isinstance(output, Tracer) or is_concrete_array(output):
        return output
    try:
        return canonical_numpy(output)
    except TypeError:
        return output


def _run_in_trace(trace: Trace, fun: Callable, tracers) -> tuple[list, list[Value]]:
    """Call ``fun`` on ``tracers`` with ``trace`` innermost; its raw outputs and their values."""
    trace_stack.traces.append(trace)
    try:
        outputs = fun(*tracers)
        location = user_location()
        out_values = [operand_value(trace, _canonical_output(output), location) for output in outputs]
    finally:
        trace_stack.traces.pop()
        trace.active = False
    return outputs, out_values


def _body(trace: Trace, out_values: list[Value]) -> Block:
    """The traced block: the arguments, then one argument per captured value."""
    captured_values = tuple(value for value, _ in trace.captured.values())
    return Block(tuple(trace.args) + captured_values, tuple(trace.ops), tuple(out_values))


def trace_flat(fun: Callable, arg_types, arg_hints, *, name: str = "main", arg_weak_types=None,
               arg_shardings=None, meshes=None, arg_sharding_types=None,
               known_meshes=()) -> tuple[TracedFunction, object]:
    """Trace ``fun`` over flat abstract arguments; returns the traced function and fun's raw output.

    ``fun`` receives one Tracer per entry of ``arg_types`` and returns a flat list of outputs
    (Tracers, device arrays or numpy values); the caller handles pytrees. ``arg_sharding_types``
    gives the arguments' sharding types (explicit mode) and ``known_meshes`` the concrete meshes
    their abstract meshes stand for.
    """
    trace = Trace(name, meshes=dict(meshes or {}), known_meshes=list(known_meshes))
    weak_types = arg_weak_types or [False] * len(arg_types)
    trace.args = [Value.fresh(arg_type, hint) for arg_type, hint in zip(arg_types, arg_hints)]
    _record_arg_types(trace, arg_sharding_types)
    tracers = [Tracer(trace, value, weak) for value, weak in zip(trace.args, weak_types)]
    outputs, out_values = _run_in_trace(trace, fun, tracers)
    captured_arrays = [array for _, array in trace.captured.values()]
    body = _body(trace, out_values)
    arg_shardings = tuple(arg_shardings or ()) + (None,) * (len(body.args) - len(arg_shardings or ()))
    func = Func(name, body, arg_shardings=arg_shardings if arg_shardings else ())
    module = Module(tuple(trace.meshes.items()), (func,))
    out_weak = [bool(getattr(output, "weak_type", False)) for output in outputs]
    out_types = [trace.types.get(value.id) or operand_sharding_type(output)
                 for value, output in zip(out_values, outputs)]
    return TracedFunction(module, captured_arrays, out_weak, out_types, trace.types), outputs


def _record_arg_types(trace: Trace, arg_sharding_types) -> None:
    for value, sharding in zip(trace.args, arg_sharding_types or ()):
        if sharding is not None:
            trace.types[value.id] = sharding


@dataclass
class TracedRegion:
    """A traced region body: the block, the outside objects its captured arguments stand for
    (Tracers of the enclosing trace or concrete arrays, in block-argument order after the
    explicit arguments), and fun's raw flat outputs."""

    block: Block
    captured: list
    outputs: list


def trace_region(fun: Callable, arg_types, arg_weak_types, *, name: str,
                 trace_type: Callable[..., Trace] = Trace, arg_sharding_types=None,
                 arg_sources=None) -> TracedRegion:
    """Trace ``fun`` into a region body inside the current trace (an op's body, such as a
    manual_computation's), over fresh arguments of ``arg_types``.

    The body is isolated from above: whatever it uses from outside (the enclosing trace's
    Tracers, concrete arrays) becomes an extra block argument, listed in ``captured`` for the
    caller to pass as extra operands. The region shares the enclosing trace's mesh table.
    ``trace_type`` (a Trace subclass or a factory taking Trace's arguments) lets a transformation
    mark its traces, as autodiff's DifferentiationTrace does. ``arg_sources`` are the outside
    objects the arguments stand for, where the caller knows them (concrete_values.py).
    """
    parent = current_trace()
    if parent is None:
        raise ValueError(f"trace_region({name!r}) needs an enclosing trace to put the region in")
    trace = trace_type(name, meshes=parent.meshes, parent=parent)
    trace.types, trace.known_meshes = parent.types, parent.known_meshes
    trace.args = [Value.fresh(arg_type) for arg_type in arg_types]
    trace.arg_sources = None if arg_sources is None else list(arg_sources)
    _record_arg_types(trace, arg_sharding_types)
    tracers = [Tracer(trace, value, weak) for value, weak in zip(trace.args, arg_weak_types)]
    outputs, out_values = _run_in_trace(trace, fun, tracers)
    captured = [outside for _, outside in trace.captured.values()]
    return TracedRegion(_body(trace, out_values), captured, list(outputs))
