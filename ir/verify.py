"""The IR verifier: SSA scoping, result types against the shape rules, shardings that fit their
meshes, and per-device ops only where they may run. ``verify(module)`` returns None or raises
VerifyError naming the function, the printed op line and what is wrong."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NoReturn

from .core import Attrs, Block, DenseAttr, Func, Module, Op, SymbolRef, Value
from .printer import format_attribute, format_axis, name_values, op_lines
from .registry import MissingRuleError
from .ops import COLLECTIVE_OPS
from .shape_rules import ShapeError, infer_result_types
from .sharding import MeshAttr, TensorSharding
from .types import TensorType

__all__ = ["VerifyError", "verify"]

_ATTRIBUTE_KINDS = (bool, int, float, str, SymbolRef, TensorType, TensorSharding, DenseAttr, tuple)


class VerifyError(ValueError):
    """A module breaks an IR invariant; ``func`` and ``op`` locate it when they apply."""

    def __init__(self, message: str, func: str | None = None, op: Op | None = None):
        super().__init__(message)
        self.func = func
        self.op = op


def verify(module: Module) -> None:
    """Check every invariant of ``module``; raise VerifyError at the first one broken."""
    _check_unique([name for name, _ in module.meshes], "mesh")
    _check_unique([func.name for func in module.funcs], "function")
    for name, mesh in module.meshes:
        if not isinstance(mesh, MeshAttr):
            raise VerifyError(f"mesh @{name} is a {type(mesh).__name__}, not a MeshAttr")
    for func in module.funcs:
        _FunctionVerifier(module, func).run()


def _check_unique(names: list[str], what: str) -> None:
    seen = set()
    for name in names:
        if name in seen:
            raise VerifyError(f"the module defines {what} @{name} twice")
        seen.add(name)


@dataclass(frozen=True)
class _DeviceContext:
    """Where per-device ops may run: on ``mesh``, naming only ``axes``; ``manual`` inside a
    manual_computation body."""

    mesh: str | None = None
    axes: frozenset[str] = frozenset()
    manual: bool = False


class _FunctionVerifier:
    def __init__(self, module: Module, func: Func):
        self.func = func
        self.meshes = module.mesh_table
        self.names = name_values(func)
        self.all_definitions = {value.id for value in _definitions(func.body)}
        self.defined: set[int] = set()

    def fail(self, message: str, op: Op | None = None) -> NoReturn:
        where = f"@{self.func.name}"
        if op is not None:
            where += f": {self.op_line(op)}"
        raise VerifyError(f"{where}\n  {message}", self.func.name, op)

    def op_line(self, op: Op) -> str:
        attrs = {name: _printable(value) for name, value in op.attrs.items()}
        return op_lines(replace(op, attrs=Attrs(attrs)), self.names)[0].strip()

    def run(self) -> None:
        func = self.func
        context = self.function_context()
        scope = self.define(func.args, None)
        self.check_block(func.body, [scope], context)
        self.check_signature_shardings()

    def function_context(self) -> _DeviceContext:
        func = self.func
        for name, value in func.attrs.items():
            self.check_attribute_kind(name, value, None)
        if "spmd_mesh" in func.attrs:
            mesh = func.attrs["spmd_mesh"]
            if not isinstance(mesh, SymbolRef) or mesh.name not in self.meshes:
                known = ", ".join(f"@{name}" for name in self.meshes) or "none"
                self.fail(f"spmd_mesh must name a mesh of the module ({known}), got {mesh!r}")
            return _DeviceContext(mesh.name, frozenset(self.meshes[mesh.name].axis_names))
        return _DeviceContext()

    def check_signature_shardings(self) -> None:
        func = self.func
        for what, shardings, values in (
            ("argument", func.arg_shardings, func.args),
            ("result", func.result_shardings, func.returns),
        ):
            if len(shardings) != len(values):
                self.fail(
                    f"the function has {len(values)} {what}s but {len(shardings)} {what} shardings"
                )
            for index, (sharding, value) in enumerate(zip(shardings, values)):
                if sharding is not None:
                    self.check_sharding(sharding, value.type.rank, f"{what} {index}", None)

    # --- SSA ---------------------------------------------------------------------------------

    def check_value_types(self, values: tuple[Value, ...], op: Op | None) -> None:
        for value in values:
            if not isinstance(value.type, TensorType):
                self.fail(
                    f"{self.names.get(value.id)} has type {value.type!r}, not a TensorType", op
                )

    def define(self, values: tuple[Value, ...], op: Op | None) -> set[int]:
        self.check_value_types(values, op)
        for value in values:
            if value.id in self.defined:
                self.fail(f"{self.names.get(value.id)} is defined more than once", op)
            self.defined.add(value.id)
        return {value.id for value in values}

    def check_use(self, value: Value, scopes: list[set[int]], what: str, op: Op | None) -> None:
        if value.id in scopes[-1]:
            return
        name = self.names.get(value.id, f"%undefined_{value.id}")
        if any(value.id in scope for scope in scopes[:-1]):
            self.fail(
                f"{what} {name} is defined outside this region body; bodies are isolated from "
                "above and see only their own arguments",
                op,
            )
        if value.id in self.all_definitions and value.id not in self.defined:
            self.fail(f"{what} {name} is used before it is defined", op)
        self.fail(f"{what} {name} is not defined in this scope", op)

    def check_block(self, block: Block, scopes: list[set[int]], context: _DeviceContext) -> None:
        for op in block.ops:
            self.check_op(op, scopes, context)
            scopes[-1].update(self.define(op.results, op))
        for index, value in enumerate(block.returns):
            self.check_use(value, scopes, f"returned value {index}", None)

    def check_op(self, op: Op, scopes: list[set[int]], context: _DeviceContext) -> None:
        self.check_value_types(op.results, op)
        for index, operand in enumerate(op.operands):
            self.check_use(operand, scopes, f"operand {index}", op)
        for name, value in op.attrs.items():
            self.check_attribute_kind(name, value, op)
        for region in op.regions:
            region_scope = self.define(region.args, op)
            self.check_region_arg_shardings(op, region)
            self.check_block(region, scopes + [region_scope], self.region_context(op, context))
        self.check_per_device(op, context)
        self.check_result_types(op)
        self.check_op_shardings(op)

    # --- types -------------------------------------------------------------------------------

    def check_result_types(self, op: Op) -> None:
        operand_types = [operand.type for operand in op.operands]
        try:
            expected = infer_result_types(op.name, operand_types, op.attrs, op.regions, self.meshes)
        except MissingRuleError:
            self.fail(f"unknown op {op.name!r}: it has no shape rule", op)
        except ShapeError as error:
            self.fail(str(error), op)
        except Exception as error:  # noqa: BLE001 - a rule tripping on bad attributes is a bad op
            self.fail(f"the shape rule of {op.name} failed: {type(error).__name__}: {error}", op)
        actual = tuple(result.type for result in op.results)
        if len(actual) != len(expected):
            self.fail(
                f"{op.name} has {len(actual)} results but its shape rule gives {len(expected)}", op
            )
        for index, (got, want) in enumerate(zip(actual, expected)):
            if got != want:
                self.fail(f"result {index} has type {got} but the shape rule gives {want}", op)

    def check_attribute_kind(self, name: str, value, op: Op | None) -> None:
        if not isinstance(value, _ATTRIBUTE_KINDS):
            self.fail(
                f"attribute {name!r} holds {value!r} of type {type(value).__name__}; "
                "attributes hold ints, floats, bools, strings, symbols, types, shardings, "
                "dense constants and tuples",
                op,
            )
        if isinstance(value, tuple):
            for item in value:
                self.check_attribute_kind(name, item, op)

    # --- shardings ---------------------------------------------------------------------------

    def check_op_shardings(self, op: Op) -> None:
        for index, sharding in enumerate(op.shardings):
            if sharding is not None:
                self.check_sharding(sharding, op.results[index].type.rank, f"result {index}", op)
        for name, value in op.attrs.items():
            for sharding in _shardings_in(value):
                self.check_sharding(sharding, None, f"attribute {name!r}", op)

    def check_region_arg_shardings(self, op: Op, region: Block) -> None:
        if region.arg_shardings and op.name == "manual_computation":
            self.fail("a manual_computation body's arguments take no sharding: its in_shardings "
                      "give their layout", op)
        for index, sharding in enumerate(region.arg_shardings):
            if sharding is not None:
                self.check_sharding(sharding, region.args[index].type.rank,
                                    f"region argument {index}", op)

    def check_sharding(self, sharding, rank: int | None, what: str, op: Op | None) -> None:
        if not isinstance(sharding, TensorSharding):
            self.fail(
                f"the sharding of {what} is a {type(sharding).__name__}, not a TensorSharding", op
            )
        mesh = self.meshes.get(sharding.mesh_name)
        if mesh is None:
            self.fail(
                f"the sharding of {what} names mesh @{sharding.mesh_name}, which is not defined", op
            )
        if rank is not None and sharding.rank != rank:
            self.fail(
                f"the sharding of {what} has {sharding.rank} dims for a rank-{rank} tensor", op
            )
        problem = sharding_problem(sharding, mesh)
        if problem:
            self.fail(
                f"the sharding of {what} does not fit mesh @{sharding.mesh_name}: {problem}", op
            )

    # --- per-device ops ----------------------------------------------------------------------

    def region_context(self, op: Op, outer: _DeviceContext) -> _DeviceContext:
        if op.name != "manual_computation":
            return outer
        shardings = [
            sharding
            for name in ("in_shardings", "out_shardings")
            for sharding in _shardings_in(op.attrs.get(name, ()))
        ]
        manual_axes = op.attrs.get("manual_axes", ())
        if not isinstance(manual_axes, tuple):
            self.fail(f"attribute 'manual_axes' must be a list of mesh axis names, got "
                      f"{_printable(manual_axes)!r}", op)
        mesh = shardings[0].mesh_name if shardings else outer.mesh
        axes = frozenset(axis for axis in manual_axes if isinstance(axis, str))
        return _DeviceContext(mesh, axes | outer.axes if mesh == outer.mesh else axes, True)

    def check_per_device(self, op: Op, context: _DeviceContext) -> None:
        if op.name not in COLLECTIVE_OPS:
            return
        if context.mesh is None:
            self.fail(
                f"{op.name} runs per device: it may appear only in functions with "
                "attributes {spmd_mesh = @mesh} or inside manual_computation bodies",
                op,
            )
        mesh = op.attrs.get("mesh")
        if not isinstance(mesh, SymbolRef) or mesh.name != context.mesh:
            self.fail(f"{op.name} must name mesh = @{context.mesh}, the mesh this code runs on", op)
        named = op.attrs.get("axes", ())
        named = (named,) if isinstance(named, str) else named
        if not isinstance(named, tuple):
            self.fail(f"attribute 'axes' must be a list of mesh axis names, got {_printable(named)!r}", op)
        if "axis" in op.attrs:
            named = tuple(named) + (op.attrs["axis"],)
        for axis in named:
            if axis not in context.axes:
                where = "manual axes of this manual_computation body" if context.manual else "axes"
                known = ", ".join(repr(name) for name in sorted(context.axes)) or "none"
                self.fail(f"{op.name} names axis {axis!r}, not one of the {where} ({known})", op)


def _printable(value):
    """``value``, or a string naming its type when it has no text form."""
    try:
        format_attribute(value)
    except TypeError:
        return f"<{type(value).__name__}>"
    return value


def _definitions(block: Block):
    yield from block.args
    for op in block.ops:
        for region in op.regions:
            yield from _definitions(region)
        yield from op.results


def _shardings_in(value):
    if isinstance(value, TensorSharding):
        yield value
    elif isinstance(value, tuple):
        for item in value:
            yield from _shardings_in(item)


def sharding_problem(sharding: TensorSharding, mesh: MeshAttr) -> str | None:
    """What keeps ``sharding`` from fitting ``mesh``, or None when it fits."""
    used = []
    for axis in sharding.used_axes():
        if axis.name not in mesh.axis_names:
            return f"{format_axis(axis)} is not an axis of the mesh ({', '.join(mesh.axis_names)})"
        problem = _sub_axis_problem(axis, mesh.axis_size(axis.name))
        if problem:
            return problem
        for other in used:
            if other.overlaps(axis, mesh):
                if other == axis:
                    return f"axis {format_axis(axis)} is used twice"
                return f"{format_axis(other)} and {format_axis(axis)} overlap"
        used.append(axis)
    for index, dim in enumerate(sharding.dims):
        if dim.priority is not None and (not isinstance(dim.priority, int) or dim.priority < 0):
            return f"dim {index} has priority {dim.priority!r}; priorities are non-negative ints"
    return None


def _sub_axis_problem(axis, axis_size: int) -> str | None:
    if axis.size is None:
        return None if axis.pre_size == 1 else f"{format_axis(axis)} has a pre-size but no size"
    if axis.pre_size < 1 or axis.size < 1:
        return f"{format_axis(axis)} needs a positive pre-size and size"
    if axis_size % axis.size or axis_size % (axis.pre_size * axis.size):
        return (
            f"sub-axis {format_axis(axis)} does not divide axis {axis.name!r} of size {axis_size}: "
            "its size and pre-size * size must divide the axis size"
        )
    return None
