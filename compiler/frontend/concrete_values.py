"""The concrete values behind Tracers, where they are known: grad, vjp and jvp called outside
jit trace the function on values the caller gave, so (as in JAX, whose JVP tracers carry their
primal values) Python control flow may branch on them: ``if x < 3:`` under ``grad``.

A trace knows the values of some of its values (``Trace.known``) and, for a region traced for
autodiff, the outside objects its arguments stand for (``Trace.arg_sources``). The value a
Tracer asks for is computed lazily: the trace's ops run once, in order, with the reference
interpreter, up to the producer. Values that depend on an unknown one (a tangent, a loop body)
stay unknown, and the Tracer raises its concretization error as under jit.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from meshjit.ir import Block, Func, Module, Op, Value
from meshjit.ir.dtypes import to_numpy
from meshjit.ir.ops.debug import EFFECT_OPS, has_effect_with_results, without_effects

# NOTE: marker ops (autodiff's, see autodiff/markers.py) mean their region's body
_REGION_MEANING = ("stop_gradient", "custom_jvp_call", "custom_vjp_call", "checkpoint")


def attach_concrete(tracers: Sequence, arrays: Sequence) -> None:
    """Record that each Tracer of ``tracers`` stands for the matching concrete array."""
    for tracer, array in zip(tracers, arrays):
        trace = getattr(tracer, "trace", None)
        if trace is not None:
            trace.known[tracer.value.id] = np.asarray(array, dtype=tracer.dtype)


def concrete_value(tracer) -> np.ndarray | None:
    """The value ``tracer`` stands for, or None when its trace cannot know it."""
    return _value_in(tracer.trace, tracer.value)


def _value_in(trace, value: Value) -> np.ndarray | None:
    if value.id in trace.known:
        return trace.known[value.id]
    if not _has_roots(trace):
        return None
    source = _source_of(trace, value)
    if source is not _NOT_AN_INPUT:
        array = _source_value(source)
        if array is not None:
            array = trace.known[value.id] = np.asarray(array, dtype=to_numpy(value.type.dtype))
        return array
    _evaluate_ops(trace, value)
    return trace.known.get(value.id)


_NOT_AN_INPUT = object()


def _has_roots(trace) -> bool:
    """Whether anything in this trace or the traces it nests in is known (else skip the work)."""
    while trace is not None:
        if trace.known or trace.arg_sources is not None:
            return True
        trace = trace.parent
    return False


def _source_of(trace, value: Value):
    """The outside object an argument or a captured value of ``trace`` stands for."""
    if trace.arg_sources is not None:
        for argument, source in zip(trace.args, trace.arg_sources):
            if argument.id == value.id:
                return source
    for captured, outside in trace.captured.values():
        if captured.id == value.id:
            return outside
    return _NOT_AN_INPUT


def _source_value(source) -> np.ndarray | None:
    if source is None:
        return None
    if getattr(source, "is_traced_value", False):
        return _value_in(source.trace, source.value)
    return np.asarray(source)


def _evaluate_ops(trace, wanted: Value) -> None:
    """Run the trace's not yet evaluated ops in order until ``wanted`` is produced."""
    ops = trace.ops
    while trace.concrete_done < len(ops):
        # NOTE: computing values for Python must not run the program's effects (a debug print
        # runs when the staged program does, once)
        op = ops[trace.concrete_done]
        trace.concrete_done += 1
        if op.name in EFFECT_OPS or has_effect_with_results(op):
            # NOTE: an io_callback's results stay unknown: they exist once the program runs
            if any(result.id == wanted.id for result in op.results):
                return
            continue
        op = without_effects(op)
        operands = [_value_in(trace, operand) for operand in op.operands]
        if all(operand is not None for operand in operands):
            results = _run(op, operands, trace.meshes)
            if results is not None:
                trace.known.update((result.id, array) for result, array in zip(op.results, results))
        if any(result.id == wanted.id for result in op.results):
            return


def _run(op: Op, operands: list, meshes) -> tuple | None:
    """``op`` on concrete operands with the reference interpreter; None if it cannot run there
    (an op only the compiler or autodiff understands leaves its results unknown)."""
    if op.name in _REGION_MEANING:
        body = op.regions[0]
    else:
        arguments = tuple(Value.fresh(operand.type) for operand in op.operands)
        local = Op(op.name, arguments, op.results, op.attrs, op.regions)
        body = Block(arguments, (local,), op.results)
    from meshjit.ir import interpret

    module = Module(tuple(meshes.items()), (Func("main", body),))
    try:
        return interpret(module, *operands)
    except Exception:  # noqa: BLE001 - an op the interpreter cannot run stays unknown
        return None
