"""Shape rules: the checked result types of every op, in one registry keyed by op name, and the
checks the families share. Each op family (``ir/ops/<family>.py``) registers its own rules."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NoReturn

from .core import Attrs, Block
from .registry import Registry
from .sharding import MeshAttr, TensorSharding
from .types import TensorType


class ShapeError(TypeError):
    """An op's operands, attributes or regions do not fit its shape rule."""


shape_rules = Registry("shape rule")

FLOATS = ("f32", "f64", "f16", "bf16")
# The floats complex numbers, transforms and LAPACK work in (the 16-bit ones have none, as in JAX).
WIDE_FLOATS = ("f32", "f64")
SIGNED_INTS = ("i8", "i16", "i32", "i64")
UNSIGNED_INTS = ("u8", "u16", "u32", "u64")
INTS = SIGNED_INTS + UNSIGNED_INTS
NUMERIC = INTS + FLOATS
BOOL_OR_INT = ("bool",) + INTS
# complex64/complex128, and the types that take them besides the real numbers
COMPLEX = ("c64", "c128")
INEXACT = FLOATS + COMPLEX
NUMERIC_OR_COMPLEX = NUMERIC + COMPLEX

_MISSING = object()


def infer_result_types(
    name: str,
    operand_types: Sequence[TensorType],
    attrs: Mapping = Attrs(),
    regions: Sequence[Block] = (),
    meshes: Mapping[str, MeshAttr] | None = None,
) -> tuple[TensorType, ...]:
    """The result types of op ``name`` applied to operands of ``operand_types``.

    ``meshes`` maps mesh names to meshes; the collectives and ``manual_computation`` need it.
    """
    rule = shape_rules[name]
    attrs = attrs if isinstance(attrs, Attrs) else Attrs(attrs)
    operand_types = tuple(operand_types)
    for index, operand in enumerate(operand_types):
        if not isinstance(operand, TensorType):
            fail(name, f"operand {index} must be a TensorType, got {operand!r}")
    if regions and name not in ops.REGION_OPS:
        fail(name, f"takes no regions, got {len(regions)}")
    return rule(name, operand_types, attrs, tuple(regions), meshes)


# --- checks shared by every family -----------------------------------------------------------


def fail(op: str, message: str) -> NoReturn:
    raise ShapeError(f"{op}: {message}")


def expect_operand_count(op: str, operands, count: int) -> None:
    if len(operands) != count:
        fail(op, f"expected {count} operand{'' if count == 1 else 's'}, got {len(operands)}")


def expect_dtype(op: str, what: str, operand: TensorType, allowed: Sequence[str]) -> None:
    if operand.dtype not in allowed:
        fail(op, f"{what} has dtype {operand.dtype}, expected {' or '.join(allowed)}")


def expect_scalar(op: str, what: str, operand: TensorType) -> None:
    if operand.rank != 0:
        fail(op, f"{what} must be 0-d, got {operand}")


def is_int(value) -> bool:
    """An int attribute value; bools are not ints here."""
    return isinstance(value, int) and not isinstance(value, bool)


def _lookup(op: str, attrs: Attrs, name: str, default):
    value = attrs.get(name, _MISSING)
    if value is _MISSING and default is _MISSING:
        fail(op, f"missing attribute {name!r}")
    return default if value is _MISSING else value


def required_attr(op: str, attrs: Attrs, name: str):
    """The value of attribute ``name``; its absence is a ShapeError."""
    return _lookup(op, attrs, name, _MISSING)


def _attr_type_error(op: str, name: str, expected: str, value) -> NoReturn:
    fail(op, f"attribute {name!r} must be {expected}, got {value!r}")


def int_attr(op: str, attrs: Attrs, name: str) -> int:
    value = _lookup(op, attrs, name, _MISSING)
    if not is_int(value):
        _attr_type_error(op, name, "an int", value)
    return value


def bool_attr(op: str, attrs: Attrs, name: str) -> bool:
    value = _lookup(op, attrs, name, _MISSING)
    if not isinstance(value, bool):
        _attr_type_error(op, name, "a bool", value)
    return value


def ints_attr(op: str, attrs: Attrs, name: str, *, minimum: int | None = None) -> tuple[int, ...]:
    value = _lookup(op, attrs, name, _MISSING)
    if not isinstance(value, tuple) or not all(is_int(item) for item in value):
        _attr_type_error(op, name, "a tuple of ints", value)
    if minimum is not None and any(item < minimum for item in value):
        _attr_type_error(op, name, f"a tuple of ints >= {minimum}", value)
    return value


def strings_attr(op: str, attrs: Attrs, name: str) -> tuple[str, ...]:
    value = _lookup(op, attrs, name, _MISSING)
    if not isinstance(value, tuple) or not all(isinstance(item, str) for item in value):
        _attr_type_error(op, name, "a tuple of strings", value)
    return value


def choice_attr(op: str, attrs: Attrs, name: str, choices, default=_MISSING) -> str:
    value = _lookup(op, attrs, name, default)
    if value not in choices:
        _attr_type_error(op, name, f"one of {', '.join(map(repr, choices))}", value)
    return value


def typed_attr(op: str, attrs: Attrs, name: str, kind: type, description: str):
    value = _lookup(op, attrs, name, _MISSING)
    if not isinstance(value, kind):
        _attr_type_error(op, name, description, value)
    return value


def check_dim(op: str, what: str, dim: int, rank: int) -> None:
    if not 0 <= dim < rank:
        fail(op, f"{what} {dim} is out of range for rank {rank}")


def check_dims(op: str, what: str, dims: Sequence[int], rank: int) -> None:
    """Every dim in ``dims`` is in range and none repeats."""
    for dim in dims:
        if not 0 <= dim < rank:
            fail(op, f"{what} {tuple(dims)} has {dim}, out of range for rank {rank}")
    if len(set(dims)) != len(dims):
        fail(op, f"{what} {tuple(dims)} has duplicates")



def per_dim_attr(op: str, attrs, name: str, rank: int, **limits) -> tuple[int, ...]:
    values = ints_attr(op, attrs, name, **limits)
    if len(values) != rank:
        fail(op, f"{name} {values} must have one entry per dim (rank {rank})")
    return values




def find_mesh(op: str, name: str, meshes: Mapping[str, MeshAttr] | None) -> MeshAttr:
    if meshes is None:
        fail(op, f"needs the module's meshes to look up mesh @{name}")
    if name not in meshes:
        fail(op, f"mesh @{name} is not defined; the module has {sorted(meshes)}")
    return meshes[name]


def check_sharding(
    op: str, what: str, sharding: TensorSharding, operand: TensorType, mesh: MeshAttr | None
) -> None:
    """``sharding`` fits ``operand``'s rank and, given the mesh, names only its axes."""
    if sharding.rank != operand.rank:
        fail(op, f"{what} has {sharding.rank} dims but {operand} has rank {operand.rank}")
    if mesh is None:
        return
    for axis in sharding.used_axes():
        if axis.name not in mesh.axis_names:
            fail(op, f"{what} names axis {axis.name!r}, not in mesh @{sharding.mesh_name}")



# NOTE: imported last: the families register into ``shape_rules`` above, and ``ops`` names them.
from . import ops  # noqa: E402
