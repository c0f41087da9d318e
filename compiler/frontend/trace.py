"""Tracing: running a Python function on abstract Tracers and recording the ops it binds.

``bind`` is the one entry point every lax/numpy function uses. Under a trace it appends an op
and returns Tracers; on concrete values it hands the op to the eager executor, which by
default runs a one-op program through the reference interpreter (the facade installs one that
returns device Arrays).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
from meshjit.ir import Block, DenseAttr, Func, MeshAttr, Module, Op, TensorType, Value
from meshjit.ir.abstract_mesh import EMPTY_ABSTRACT_MESH
from meshjit.ir.dtypes import from_numpy, to_numpy
from meshjit.ir.shape_rules import ShapeError, infer_result_types
from meshjit.ir.sharding import TensorSharding

from .explicit_closures import check_explicit_closure
from .op_types import ir_sharding, mesh_attr_for, seeds_propagation, type_results
from .mesh_translation import translated
from ..sharding.sharding_types import ShardingType, context_abstract_mesh, format_type, type_of_concrete


class JAXTypeError(TypeError):
    """The base of the type errors tracing raises (``jax.errors.JAXTypeError``)."""


class ConcretizationTypeError(JAXTypeError):
    """A traced (abstract) value was used where Python needs a concrete one."""


class JAXIndexError(IndexError):
    """The base of the index errors tracing raises (``jax.errors.JAXIndexError``)."""


class TracerArrayConversionError(JAXTypeError):
    """A traced value was converted to a numpy array."""


class TracerIntegerConversionError(JAXTypeError):
    """A traced value was used as a Python int or index."""


class TracerBoolConversionError(ConcretizationTypeError):
    """A traced value was used in a Python condition."""


class UnexpectedTracerError(JAXTypeError):
    """A Tracer escaped the function being traced and was used later."""


# NOTE: a module of meshjit's that is a user program (``meshjit demo``'s model) sets this global
# to True, so that its ops are located at its own lines.
USER_PROGRAM = "__meshjit_user_program__"


def is_meshjit_frame(frame) -> bool:
    """Whether ``frame`` runs meshjit's own code, known by its module name (``meshjit`` and its
    submodules), so it holds wherever meshjit is installed; a module marked ``USER_PROGRAM`` is
    the user's."""
    module = frame.f_globals.get("__name__", "")
    if frame.f_globals.get(USER_PROGRAM, False):
        return False
    return module == "meshjit" or module.startswith("meshjit.")


def user_location() -> str | None:
    """``file:line`` of the innermost caller outside meshjit's own modules (or the location a
    transformation set with ``located_at``), after the ``named_scope`` names it runs in:
    ``outer/inner @ file:line``."""
    if trace_stack.location is not None:
        return trace_stack.location
    frame = sys._getframe(1)
    while frame is not None:
        if not is_meshjit_frame(frame):
            scope = "/".join(trace_stack.name_stack)
            return f"{scope}{SCOPE_SEPARATOR if scope else ''}{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return None


# NOTE: between an op location's name scope and its ``file:line`` (``source_of`` strips it)
SCOPE_SEPARATOR = " @ "


def source_of(location: str) -> str:
    """The ``file:line`` part of an op's location (without its name scope)."""
    return location.rpartition(SCOPE_SEPARATOR)[2]


@contextmanager
def name_scope(name: str) -> Iterator[None]:
    """Ops recorded inside carry ``name`` (after the enclosing scopes' names) in their location,
    as ``jax.named_scope`` puts it in JAX's name stack."""
    saved = trace_stack.name_stack
    trace_stack.name_stack = (*saved, name)
    try:
        yield
    finally:
        trace_stack.name_stack = saved


def _at(location: str | None) -> str:
    return f" (at {location})" if location else ""


@dataclass
class Trace:
    """The ops recorded so far for one function, plus its arguments and captured values.

    A region trace (``parent`` set, see ``trace_region``) records an op's body: it is isolated
    from above, so concrete arrays and the parent's Tracers it uses become extra arguments too.
    ``captured`` maps a capture key to (the argument inside, the object outside). ``types`` holds
    every value's sharding type by value id and ``known_meshes`` the concrete meshes types may
    name; a region trace shares both with its parent. ``known``, ``arg_sources`` and
    ``concrete_done`` are the concrete values behind Tracers (concrete_values.py).
    """

    name: str
    args: list[Value] = field(default_factory=list)
    ops: list[Op] = field(default_factory=list)
    meshes: dict[str, MeshAttr] = field(default_factory=dict)
    captured: dict[object, tuple[Value, object]] = field(default_factory=dict)
    active: bool = True
    parent: Trace | None = None
    types: dict[int, ShardingType] = field(default_factory=dict)
    known_meshes: list[MeshAttr] = field(default_factory=list)
    known: dict[int, object] = field(default_factory=dict)
    arg_sources: list | None = None
    concrete_done: int = 0

    def add_mesh(self, mesh: MeshAttr) -> str:
        """The module-level name of ``mesh``, adding it when new ("mesh", "mesh_1", ...)."""
        for name, existing in self.meshes.items():
            if existing == mesh:
                return name
        name = "mesh" if not self.meshes else f"mesh_{len(self.meshes)}"
        self.meshes[name] = mesh
        return name

    def capture(self, array) -> Value:
        """A concrete device array used inside the function becomes an extra argument."""
        array_type = TensorType(tuple(array.shape), from_numpy(array.dtype))
        return self._capture(("array", id(array)), array_type, array)

    def capture_outer(self, tracer: Tracer) -> Value:
        """A Tracer of the parent trace used inside a region becomes an extra argument, of the
        outer value's sharding type when it lives on the mesh in context (else unsplit on it)."""
        value = self._capture(("outer", tracer.value.id), tracer.value.type, tracer)
        if value.id not in self.types:
            outer = tracer.sharding_type
            context = context_abstract_mesh()
            if context is not None and not outer.mesh.empty and outer.mesh != context:
                outer = ShardingType.replicated(context, outer.rank)
            self.types[value.id] = outer
        return value

    def mesh_name_for(self, sharding: ShardingType) -> str:
        """The module-level name of the concrete mesh of a type's abstract mesh."""
        return self.add_mesh(mesh_attr_for(sharding.mesh, [*self.meshes.values(), *self.known_meshes]))

    def ir_sharding_of(self, sharding: ShardingType) -> TensorSharding:
        """The IR sharding a type pins; a type on a second mesh of the same devices (JAX's
        use_abstract_mesh inside jit) is written over the first mesh (mesh_translation.py)."""
        name = self.mesh_name_for(sharding)
        seeded = ir_sharding(sharding, name)
        first = next(iter(self.meshes))
        if name == first:
            return seeded
        return translated(seeded, self.meshes[name], self.meshes[first], first) or seeded

    def _capture(self, key, value_type: TensorType, outside) -> Value:
        # NOTE: the entry keeps ``outside`` alive, so the id in an array's key stays unique.
        entry = self.captured.get(key)
        if entry is None:
            entry = self.captured[key] = (Value.fresh(value_type, "captured"), outside)
        return entry[0]


class _TraceStack(threading.local):
    def __init__(self):
        self.traces: list[Trace] = []
        self.location: str | None = None
        self.compile_time_eval = False
        self.name_stack: tuple[str, ...] = ()


trace_stack = _TraceStack()


@contextmanager
def ensure_compile_time_eval() -> Iterator[None]:
    """Inside the block, ops whose operands are all concrete run at once, even inside a trace
    (``jax.ensure_compile_time_eval``): their results are concrete arrays Python can branch on."""
    saved, trace_stack.compile_time_eval = trace_stack.compile_time_eval, True
    try:
        yield
    finally:
        trace_stack.compile_time_eval = saved


@contextmanager
def located_at(location: str | None) -> Iterator[None]:
    """Attribute the ops recorded inside to ``location`` when it is given: a transformation
    re-emitting an op (its derivative, its transpose) keeps the op's Python source line."""
    if location is None:
        yield
        return
    saved, trace_stack.location = trace_stack.location, location
    try:
        yield
    finally:
        trace_stack.location = saved


def current_trace() -> Trace | None:
    return trace_stack.traces[-1] if trace_stack.traces else None


_describers: list[Callable] = []


def add_tracer_describer(describe: Callable) -> None:
    """``describe(tracer)`` gives the text a Tracer prints as (``print(x)``) when it knows the
    value (shard_map_eager.py: a body of an eager shard_map), else None: ``JitTracer(type)``."""
    _describers.append(describe)


class Tracer:
    """An abstract array inside a traced function: a shape, a dtype and an IR value."""

    __slots__ = ("trace", "value", "weak_type")
    __array_priority__ = 1000
    is_traced_value = True  # NOTE: how the runtime recognises Tracers without importing compiler

    def __init__(self, trace: Trace, value: Value, weak_type: bool = False):
        self.trace = trace
        self.value = value
        self.weak_type = weak_type

    @property
    def sharding_type(self) -> ShardingType:
        """The sharding part of the value's type (unsplit on no mesh when nothing is known)."""
        known = self.trace.types.get(self.value.id)
        return known if known is not None else ShardingType.replicated(EMPTY_ABSTRACT_MESH, self.ndim)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.value.type.shape

    @property
    def ir_dtype(self) -> str:
        return self.value.type.dtype

    @property
    def dtype(self) -> np.dtype:
        return to_numpy(self.value.type.dtype)

    @property
    def ndim(self) -> int:
        return len(self.value.type.shape)

    @property
    def size(self) -> int:
        return self.value.type.size

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __repr__(self) -> str:
        for describe in _describers:
            text = describe(self)
            if text is not None:
                return text
        # NOTE: JAX 0.10's text for a value traced by jit: its type as jax.typeof prints it
        weak = "~" if self.weak_type else ""
        return f"JitTracer({weak}{format_type(self.shape, self.dtype, self.sharding_type)})"

    def _concrete_error(self, error_type, what: str):
        location = user_location()
        return error_type(
            f"{what} was called on a traced value {self.value.type}{_at(location)}. The value "
            f"depends on the function's arguments, so it is not known while jit traces the "
            f"function. Use meshjit.numpy.where / lax ops instead of Python control flow on it, "
            f"or mark the argument static with static_argnums/static_argnames."
        )

    def known_value(self):
        """The concrete value behind this Tracer where its trace knows it (grad outside jit)."""
        from .concrete_values import concrete_value

        return concrete_value(self)

    def __bool__(self):
        known = self.known_value()
        if known is None:
            raise self._concrete_error(TracerBoolConversionError, "bool()")
        return bool(known)

    def __int__(self):
        known = self.known_value()
        if known is None:
            raise self._concrete_error(ConcretizationTypeError, "int()")
        return int(known)

    def __index__(self):
        known = self.known_value()
        if known is None or not np.issubdtype(known.dtype, np.integer):
            raise self._concrete_error(TracerIntegerConversionError, "__index__()")
        return int(known)

    def __float__(self):
        raise self._concrete_error(ConcretizationTypeError, "float()")

    def __complex__(self):
        raise self._concrete_error(ConcretizationTypeError, "complex()")

    def __array__(self, dtype=None, copy=None):
        raise self._concrete_error(TracerArrayConversionError, "numpy.asarray()")

    def item(self):
        known = self.known_value()
        if known is None:
            raise self._concrete_error(ConcretizationTypeError, "item()")
        return known.item()

    def tolist(self):
        raise self._concrete_error(ConcretizationTypeError, "tolist()")

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d traced array")
        return (self[index] for index in range(self.shape[0]))

    def __hash__(self):
        raise TypeError(f"unhashable type: traced array {self.value.type}")


def _default_eager(name: str, operands, attrs, weak_type: bool, out_sharding=None):
    """Run one op on concrete operands with the reference interpreter; returns numpy arrays."""
    from meshjit.ir import interpret

    arrays = [np.asarray(operand) for operand in operands]
    args = tuple(Value.fresh(TensorType(array.shape, from_numpy(array.dtype))) for array in arrays)
    types = infer_result_types(name, tuple(arg.type for arg in args), attrs)
    results = tuple(Value.fresh(result_type) for result_type in types)
    op = Op(name, args, results, attrs)
    module = Module((), (Func("main", Block(args, (op,), results)),))
    return list(interpret(module, *arrays))


_eager_executor: list[Callable] = [_default_eager]


def set_eager_executor(executor: Callable) -> None:
    """Install how ops on concrete values run outside any trace: ``executor(name, operands,
    attrs, weak_type, out_sharding)`` returns the results. The compiler cannot run programs on devices, so
    meshjit's facade registers its dispatcher here once, at import (meshjit/_dispatch.py)."""
    _eager_executor[0] = executor


def _default_program_runner(name: str, fun: Callable, operands) -> list:
    """Trace ``fun`` over ``operands`` and run it with the reference interpreter (numpy)."""
    from meshjit.ir import interpret

    arrays = [np.asarray(operand) for operand in operands]
    types = [TensorType(array.shape, from_numpy(array.dtype)) for array in arrays]
    from .trace_functions import trace_flat  # NOTE: it imports this module

    traced, _ = trace_flat(fun, types, [None] * len(types), name=name)
    return list(interpret(traced.module, *arrays, *(np.asarray(array) for array in traced.captured)))


_program_runner: list[Callable] = [_default_program_runner]


def set_program_runner(runner: Callable) -> None:
    """Install how a staged-only function runs on concrete values outside any trace:
    ``runner(name, fun, operands)`` traces ``fun`` (flat operands to a flat list of outputs) and
    runs it as one program. Control flow ops (their regions) are never run op by op, so
    ``lax.scan`` on concrete arrays runs this way; meshjit's facade registers jit here."""
    _program_runner[0] = runner


def run_as_program(name: str, fun: Callable, operands) -> list:
    """``fun(*operands)`` staged as one program named ``name`` and run (see set_program_runner)."""
    return _program_runner[0](name, fun, list(operands))


def is_concrete_array(value) -> bool:
    """A device array the trace should capture rather than embed (the runtime's Array marks
    its class with ``is_device_array``; the compiler never imports the runtime)."""
    return getattr(type(value), "is_device_array", False)


def operand_value(trace: Trace, operand, location) -> Value:
    if isinstance(operand, Tracer):
        if operand.trace is trace:
            return operand.value
        if not operand.trace.active:
            raise UnexpectedTracerError(
                f"a traced value {operand.value.type} from a finished trace of "
                f"{operand.trace.name!r} was used{_at(location)}; it escaped through a "
                f"global, a closure or a side effect"
            )
        check_explicit_closure(operand.sharding_type, operand.value.type.shape, operand.value.type.dtype,
                               _at(location))
        if operand.trace is trace.parent:
            return trace.capture_outer(operand)
        if trace.parent is not None and _is_ancestor(operand.trace, trace.parent):
            # NOTE: a value from further out is captured by every trace in between, so each
            # region stays isolated from above (nested autodiff inside jit needs this).
            outer_value = operand_value(trace.parent, operand, location)
            return trace.capture_outer(Tracer(trace.parent, outer_value, operand.weak_type))
        raise UnexpectedTracerError(f"a traced value of an outer function was used inside {trace.name!r}")
    if is_concrete_array(operand):
        check_explicit_closure(type_of_concrete(operand, len(operand.shape)), tuple(operand.shape),
                               from_numpy(operand.dtype), _at(location))
        return trace.capture(operand)
    array = np.asarray(operand)
    value = Value.fresh(TensorType(array.shape, from_numpy(array.dtype)))
    trace.ops.append(Op("constant", (), (value,), {"value": DenseAttr.from_array(array)}, location=location))
    return value


def _is_ancestor(candidate: Trace, trace: Trace) -> bool:
    while trace is not None:
        if trace is candidate:
            return True
        trace = trace.parent
    return False


def operand_sharding_type(operand) -> ShardingType:
    """The sharding type of anything an op accepts: a Tracer's, a device array's layout over the
    Explicit axes of its mesh, and nothing for numpy values and scalars."""
    if isinstance(operand, Tracer):
        return operand.sharding_type
    if is_concrete_array(operand):
        return type_of_concrete(operand, len(operand.shape))
    return ShardingType.replicated(EMPTY_ABSTRACT_MESH, np.ndim(operand))


def _record_types(trace: Trace, op: Op, types) -> Op:
    """Remember the results' types; in the function being compiled (not a region), a type on a
    mesh with Explicit axes also pins the result's IR sharding for propagation."""
    for result, sharding in zip(op.results, types):
        trace.types[result.id] = sharding
    if trace.parent is not None or not any(seeds_propagation(sharding) for sharding in types):
        return op
    shardings = tuple(trace.ir_sharding_of(sharding) if seeds_propagation(sharding) else None for sharding in types)
    return Op(op.name, op.operands, op.results, op.attrs, op.regions, shardings, op.location)


def _evaluate_now(name: str, operands, attrs, weak_type: bool, out_sharding) -> list:
    """An op on concrete operands run eagerly inside a trace (``ensure_compile_time_eval``): the
    eager executor traces the op alone, where the flag is off again."""
    saved, trace_stack.compile_time_eval = trace_stack.compile_time_eval, False
    traces, trace_stack.traces = trace_stack.traces, []
    try:
        return _eager_executor[0](name, list(operands), attrs, weak_type, out_sharding)
    finally:
        trace_stack.compile_time_eval, trace_stack.traces = saved, traces


def bind(name: str, operands, attrs=None, *, weak_type: bool = False, regions=(), out_sharding=None) -> list:
    """Apply op ``name`` to ``operands`` (Tracers, device Arrays or numpy arrays of IR dtypes).

    ``regions`` are the op's bodies (Blocks from ``trace_region``); ops with regions are staged
    only, never run eagerly. ``out_sharding`` (one ShardingType per result) gives the results'
    sharding types instead of the op's rule (JAX's ``out_sharding=``); outside a trace the
    eager executor runs the op and places its results so.
    """
    attrs = dict(attrs or {})
    # NOTE: inside a trace every op is staged, even on constants (JAX's omnistaging); the
    # innermost trace wins, so a region body can use (capture) its parent's Tracers.
    trace = current_trace()
    concrete = not any(isinstance(operand, Tracer) for operand in operands)
    if trace is not None and trace_stack.compile_time_eval and concrete and not regions:
        return _evaluate_now(name, operands, attrs, weak_type, out_sharding)
    trace = trace or next((operand.trace for operand in operands if isinstance(operand, Tracer)), None)
    if trace is None:
        return _eager_executor[0](name, list(operands), attrs, weak_type, out_sharding)
    location = user_location()
    if name == "sharding_constraint" and "sharding" not in attrs and out_sharding:
        # NOTE: a reshard given only its result's type is constrained to that type's sharding
        attrs["sharding"] = trace.ir_sharding_of(out_sharding[0])
    values = tuple(operand_value(trace, operand, location) for operand in operands)
    try:
        result_types = infer_result_types(name, tuple(value.type for value in values), attrs,
                                          tuple(regions), meshes=trace.meshes)
    except ShapeError as error:
        raise TypeError(f"{error}{_at(location)}") from None
    results = tuple(Value.fresh(result_type) for result_type in result_types)
    op = Op(name, values, results, attrs, tuple(regions), location=location)
    operand_types = [trace.types.get(value.id) or operand_sharding_type(operand)
                     for value, operand in zip(values, operands)]
    types = type_results(op, operand_types, context_abstract_mesh(), out_sharding)
    trace.ops.append(_record_types(trace, op, types))
    return [Tracer(trace, result, weak_type) for result in results]


def stage(name: str, operands, result_types, attrs=None, *, regions=(), weak_types=None) -> list:
    """Record op ``name`` with the ``result_types`` the caller gives, skipping the shape rules.

    Only for ops that never leave the trace they are recorded in: autodiff's markers (custom
    derivative calls, stop_gradient), which it rewrites before any op reaches the compiler.
    """
    trace = current_trace()
    if trace is None:
        raise ValueError(f"stage({name!r}) records into a trace; there is none")
    location = user_location()
    values = tuple(operand_value(trace, operand, location) for operand in operands)
    results = tuple(Value.fresh(result_type) for result_type in result_types)
    op = Op(name, values, results, dict(attrs or {}), tuple(regions), location=location)
    returned = regions[0].returns if regions else ()
    for index, result in enumerate(results):
        known = trace.types.get(returned[index].id) if index < len(returned) else None
        if known is not None:
            trace.types[result.id] = known
    trace.ops.append(op)
    weak_types = weak_types or [False] * len(results)
    return [Tracer(trace, result, weak) for result, weak in zip(results, weak_types)]
