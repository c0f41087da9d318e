"""Shape rules: the checked result types of every op, in one registry keyed by op name. The shared
checks and the elementwise and creation rules live here; the other families register from
``shape_rules_structural`` and ``shape_rules_spmd``."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import NoReturn

from .core import Attrs, Block, DenseAttr
from .dtypes import DTYPES, to_numpy
from .registry import Registry
from .sharding import MeshAttr
from .types import TensorType


class ShapeError(TypeError):
    """An op's operands, attributes or regions do not fit its shape rule."""


shape_rules = Registry("shape rule")

FLOATS = ("f32", "f64")
INTS = ("i32", "i64")
NUMERIC = INTS + FLOATS
BOOL_OR_INT = ("bool",) + INTS

# fmt: off
UNARY_FLOAT_OPS = (
    "exp", "exp2", "log", "log1p", "expm1", "tanh", "logistic", "sin", "cos", "tan", "sqrt",
    "rsqrt", "cbrt", "erf", "floor", "ceil",
)
UNARY_NUMERIC_OPS = ("neg", "abs", "sign")
BINARY_NUMERIC_OPS = ("add", "sub", "mul", "div", "rem", "max", "min")
BINARY_FLOAT_OPS = ("pow", "atan2")
BINARY_BOOL_OR_INT_OPS = ("and", "or", "xor")
SHIFT_OPS = ("shift_left", "shift_right_arithmetic", "shift_right_logical")
COLLECTIVE_OPS = (
    "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "collective_permute",
    "axis_index", "partition_id", "pvary",
)
COMPARE_DIRECTIONS = ("eq", "ne", "lt", "le", "gt", "ge")
ROUNDING_METHODS = ("away_from_zero", "to_nearest_even")

# NOTE: this is the op table itself, kept apart from the registrations so that a test can check
# that every registry covers it.
ALL_OPS: tuple[str, ...] = tuple(sorted(
    UNARY_FLOAT_OPS + UNARY_NUMERIC_OPS + BINARY_NUMERIC_OPS + BINARY_FLOAT_OPS
    + BINARY_BOOL_OR_INT_OPS + SHIFT_OPS + COLLECTIVE_OPS + (
        "round", "is_finite", "not", "compare", "select", "clamp", "convert", "integer_pow",
        "iota", "constant",
        "broadcast_in_dim", "reshape", "transpose", "slice", "dynamic_slice",
        "dynamic_update_slice", "pad", "concatenate", "rev", "squeeze", "expand_dims",
        "dot_general",
        "reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or",
        "argmax", "argmin", "cumsum", "cumprod", "cummax", "cummin", "sort", "gather",
        "sharding_constraint", "manual_computation",
    )
))
# fmt: on

# Ops that own regions; every other op must come without them.
REGION_OPS = ("manual_computation",)

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
    if regions and name not in REGION_OPS:
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


# --- elementwise -----------------------------------------------------------------------------


def expect_equal_types(op: str, operands: Sequence[TensorType]) -> None:
    for index, operand in enumerate(operands[1:], start=1):
        if operand != operands[0]:
            fail(
                op,
                f"operands must have equal shapes and dtypes, but operand 0 is {operands[0]} "
                f"and operand {index} is {operand}",
            )


def _elementwise_rule(arity: int, allowed: tuple[str, ...], result_dtype: str | None = None):
    def rule(op, operands, attrs, regions, meshes):
        expect_operand_count(op, operands, arity)
        expect_equal_types(op, operands)
        expect_dtype(op, "operand 0", operands[0], allowed)
        return (operands[0] if result_dtype is None else operands[0].with_dtype(result_dtype),)

    return rule


# (op names, operand count, allowed dtypes, result dtype or None for the operands' dtype)
_ELEMENTWISE_FAMILIES = (
    (UNARY_FLOAT_OPS, 1, FLOATS, None),
    (UNARY_NUMERIC_OPS, 1, NUMERIC, None),
    (("is_finite",), 1, FLOATS, "bool"),
    (("not",), 1, BOOL_OR_INT, None),
    (BINARY_NUMERIC_OPS, 2, NUMERIC, None),
    (BINARY_FLOAT_OPS, 2, FLOATS, None),
    (BINARY_BOOL_OR_INT_OPS, 2, BOOL_OR_INT, None),
    (SHIFT_OPS, 2, INTS, None),
)
for _names, _arity, _allowed, _result_dtype in _ELEMENTWISE_FAMILIES:
    shape_rules.register(*_names)(_elementwise_rule(_arity, _allowed, _result_dtype))

_unary_float = _elementwise_rule(1, FLOATS)


@shape_rules.register("round")
def _round(op, operands, attrs, regions, meshes):
    choice_attr(op, attrs, "rounding_method", ROUNDING_METHODS, default="away_from_zero")
    return _unary_float(op, operands, attrs, regions, meshes)


@shape_rules.register("compare")
def _compare(op, operands, attrs, regions, meshes):
    choice_attr(op, attrs, "direction", COMPARE_DIRECTIONS)
    expect_operand_count(op, operands, 2)
    expect_equal_types(op, operands)
    return (operands[0].with_dtype("bool"),)


@shape_rules.register("select")
def _select(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 3)
    predicate, on_true, on_false = operands
    expect_dtype(op, "predicate", predicate, ("bool",))
    if on_true != on_false:
        fail(op, f"on_true and on_false must have equal types, got {on_true} and {on_false}")
    if predicate.rank != 0 and predicate.shape != on_true.shape:
        fail(op, f"predicate must be 0-d or have shape {on_true.shape}, got {predicate}")
    return (on_true,)


@shape_rules.register("clamp")
def _clamp(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 3)
    minimum, operand, maximum = operands
    expect_dtype(op, "operand", operand, NUMERIC)
    for what, bound in (("min", minimum), ("max", maximum)):
        if bound != operand and bound != TensorType((), operand.dtype):
            fail(op, f"{what} must be {operand} or {operand.dtype}[], got {bound}")
    return (operand,)


@shape_rules.register("convert")
def _convert(op, operands, attrs, regions, meshes):
    new_dtype = choice_attr(op, attrs, "new_dtype", DTYPES)
    expect_operand_count(op, operands, 1)
    return (operands[0].with_dtype(new_dtype),)


@shape_rules.register("integer_pow")
def _integer_pow(op, operands, attrs, regions, meshes):
    exponent = int_attr(op, attrs, "y")
    expect_operand_count(op, operands, 1)
    expect_dtype(op, "operand 0", operands[0], NUMERIC)
    if exponent < 0 and operands[0].dtype not in FLOATS:
        fail(op, f"negative exponent {exponent} needs a float operand, got {operands[0]}")
    return (operands[0],)


# --- creation --------------------------------------------------------------------------------


@shape_rules.register("iota")
def _iota(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 0)
    dtype = choice_attr(op, attrs, "dtype", NUMERIC)
    shape = ints_attr(op, attrs, "shape", minimum=0)
    check_dim(op, "dimension", int_attr(op, attrs, "dimension"), len(shape))
    return (TensorType(shape, dtype),)


@shape_rules.register("constant")
def _constant(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 0)
    value = typed_attr(op, attrs, "value", DenseAttr, "a DenseAttr")
    expected_bytes = math.prod(value.type.shape) * to_numpy(value.type.dtype).itemsize
    if len(value.data) != expected_bytes:
        fail(op, f"value holds {len(value.data)} bytes but {value.type} needs {expected_bytes}")
    return (value.type,)


# NOTE: imported last because these modules register into ``shape_rules`` defined above.
from . import shape_rules_spmd, shape_rules_structural  # noqa: F401
