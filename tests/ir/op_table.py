"""The one op table behind the ir tests: per op, its dtypes, cases (attributes and operand
shapes), an operand generator, an independent oracle, and malformed uses with their errors.

A new op gets reference, shape-rule and interpreter tests by adding one record here.
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import op_oracles as oracles
from op_oracles import NUMPY_DTYPES, elementwise

from meshjit.ir import DenseAttr, MeshAttr, SymbolRef, TensorSharding, TensorType

ALL = ("bool", "i32", "i64", "f32", "f64")
FLOAT = ("f32", "f64")
INT = ("i32", "i64")
NUMERIC = INT + FLOAT
BOOL_INT = ("bool",) + INT
SHAPES = ((), (0,), (5,), (2, 3), (3, 1, 2))

MESH = SymbolRef("mesh")
MESHES = {"mesh": MeshAttr((("x", 2), ("y", 4)))}


@dataclass(frozen=True)
class Case:
    """Attributes (a dict, or a function of the dtype) and one shape per operand.

    ``expected`` gives result types (``"{dtype}[2,3]"``) for ops without an oracle; ``dtypes``
    overrides the record's dtypes for this case.
    """

    attrs: dict | Callable
    shapes: tuple = ()
    expected: tuple[str, ...] = ()
    dtypes: tuple[str, ...] | None = None

    def attrs_for(self, dtype: str) -> dict:
        return self.attrs(dtype) if callable(self.attrs) else self.attrs


@dataclass(frozen=True)
class Bad:
    """A malformed use: operand types as text (``"f32[2,3] i32[]"``), attributes, and a fragment
    of the ShapeError message it must raise."""

    operands: str
    attrs: dict
    message: str


def parse_types(text: str) -> list[TensorType]:
    types = []
    for dtype, dims in re.findall(r"(\w+)\[([\d,]*)\]", text):
        types.append(TensorType(tuple(int(d) for d in dims.split(",") if d), dtype))
    return types


def instances(records):
    """Every (record, case, dtype) to run, with a stable id."""
    for record in records:
        for number, case in enumerate(record.cases):
            for dtype in case.dtypes or record.dtypes:
                yield record, case, dtype, f"{record.name}-{number}-{dtype}"


def rng_for(test_id: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(test_id.encode()))


# --- operand generators ----------------------------------------------------------------------

SPECIAL_FLOATS = (math.nan, math.inf, -math.inf, -0.0, 0.0, 0.5, -0.5, 2.5, -1.5)


def random_array(rng, shape, dtype: str, specials: bool = True) -> np.ndarray:
    size = math.prod(shape)
    numpy_dtype = NUMPY_DTYPES[dtype]
    if dtype == "bool":
        return (rng.random(size) < 0.5).reshape(shape)
    if dtype in INT:
        info = np.iinfo(numpy_dtype)
        values = rng.integers(-6, 7, size).astype(numpy_dtype)
        choices = np.array([0, -1, 1, info.min, info.max], dtype=numpy_dtype)
    else:
        quarters = rng.integers(-12, 13, size) / 4
        values = np.where(rng.random(size) < 0.5, rng.normal(0, 2, size), quarters)
        values = values.astype(numpy_dtype)
        choices = np.array(SPECIAL_FLOATS, dtype=numpy_dtype)
    if specials:
        mask = rng.random(size) < 0.15
        values[mask] = rng.choice(choices, mask.sum())
    return values.reshape(shape)


def random_operands(rng, shapes, dtype, attrs=None):
    return [random_array(rng, shape, dtype) for shape in shapes]


def finite_operands(rng, shapes, dtype, attrs=None):
    return [random_array(rng, shape, dtype, specials=False) for shape in shapes]


def tied_operands(rng, shapes, dtype, attrs=None):
    """Few distinct values, so sorts and argmax meet ties (and NaNs for floats)."""
    pool = {"bool": [False, True], "i32": [-2, 0, 3], "i64": [-2, 0, 3]}
    values = np.array(pool.get(dtype, [-1.5, -0.0, 0.0, 2.0, math.nan]), NUMPY_DTYPES[dtype])
    return [np.asarray(values[rng.integers(0, len(values), shape)]) for shape in shapes]


def select_operands(rng, shapes, dtype, attrs=None):
    return [random_array(rng, shapes[0], "bool")] + random_operands(rng, shapes[1:], dtype)


def shift_operands(rng, shapes, dtype, attrs=None):
    bits = NUMPY_DTYPES[dtype].itemsize * 8
    amounts = np.asarray(rng.integers(-2, bits + 3, shapes[1]), NUMPY_DTYPES[dtype])
    return [random_array(rng, shapes[0], dtype), amounts]


def with_start_indices(count: int):
    """``count`` operands of the dtype, then 0-d i32 start indices around the first's bounds."""

    def make(rng, shapes, dtype, attrs=None):
        arrays = random_operands(rng, shapes[:count], dtype)
        starts = [np.array(rng.integers(-2, size + 3), np.int32) for size in shapes[0]]
        return arrays + starts

    return make


def gather_operands(rng, shapes, dtype, attrs):
    size = shapes[0][attrs["axis"]]
    indices = np.asarray(rng.integers(-2, size + 3, shapes[1]), np.int32)
    return [random_array(rng, shapes[0], dtype), indices]


@dataclass(frozen=True)
class OpRecord:
    name: str
    dtypes: tuple[str, ...]
    cases: tuple[Case, ...]
    oracle: Callable | None
    bad: tuple[Bad, ...]
    make: Callable = random_operands  # (rng, shapes, dtype, attrs) -> operands
    rtol: float | None = None  # None: 2e-6 for f32, 1e-12 for f64
    atol: float = 0.0
    signed_zeros: bool = False




def same_shapes(count: int, attrs=None, shapes=SHAPES) -> tuple[Case, ...]:
    return tuple(Case(attrs or {}, (shape,) * count) for shape in shapes)


def dtype_error(op: str, dtype: str, allowed, operand_text: str, attrs=None) -> Bad:
    return Bad(operand_text, attrs or {}, f"{op}: operand 0 has dtype {dtype}, expected {' or '.join(allowed)}")


# --- elementwise -----------------------------------------------------------------------------

UNARY_FLOAT = {
    "exp": oracles.guarded(math.exp),
    "exp2": oracles.guarded(lambda x: math.pow(2.0, x)),
    "log": oracles.log,
    "log1p": oracles.log1p,
    "expm1": oracles.guarded(math.expm1),
    "tanh": math.tanh,
    "logistic": oracles.logistic,
    "sin": oracles.guarded(math.sin),
    "cos": oracles.guarded(math.cos),
    "tan": oracles.guarded(math.tan),
    "sqrt": oracles.sqrt,
    "rsqrt": oracles.rsqrt,
    "cbrt": math.cbrt,
    "erf": oracles.erf,
    "floor": oracles.integral(math.floor),
    "ceil": oracles.integral(math.ceil),
}
UNARY_NUMERIC = {"neg": lambda x: -x, "abs": abs, "sign": oracles.sign}
BINARY = {
    "add": (NUMERIC, lambda x, y: x + y),
    "sub": (NUMERIC, lambda x, y: x - y),
    "mul": (NUMERIC, lambda x, y: x * y),
    "div": (NUMERIC, oracles.divide),
    "rem": (NUMERIC, oracles.remainder),
    "max": (NUMERIC, oracles.maximum),
    "min": (NUMERIC, oracles.minimum),
    "pow": (FLOAT, oracles.power),
    "atan2": (FLOAT, math.atan2),
    "and": (BOOL_INT, lambda x, y: x & y),
    "or": (BOOL_INT, lambda x, y: x | y),
    "xor": (BOOL_INT, lambda x, y: x ^ y),
}
COMPARISONS = {
    "eq": lambda x, y: x == y,
    "ne": lambda x, y: x != y,
    "lt": lambda x, y: x < y,
    "le": lambda x, y: x <= y,
    "gt": lambda x, y: x > y,
    "ge": lambda x, y: x >= y,
}


def _shift_oracle(which: int):
    def oracle(attrs, x, amount):
        return elementwise(oracles.shifts(x.dtype.itemsize * 8)[which])(attrs, x, amount)

    return oracle


def _rounding_oracle(attrs, x):
    method = attrs.get("rounding_method", "away_from_zero")
    scalar = oracles.ROUND_TO_NEAREST_EVEN if method == "to_nearest_even" else oracles.ROUND_AWAY_FROM_ZERO
    return elementwise(scalar)(attrs, x)


ELEMENTWISE_RECORDS = [
    *(
        OpRecord(name, FLOAT, same_shapes(1), elementwise(scalar), (dtype_error(name, "i32", FLOAT, "i32[2]"),),
                 atol=5e-7 if name == "erf" else 0.0, signed_zeros=name in ("floor", "ceil"))
        for name, scalar in UNARY_FLOAT.items()
    ),
    OpRecord(
        "round", FLOAT,
        same_shapes(1) + same_shapes(1, {"rounding_method": "to_nearest_even"}) + same_shapes(1, {"rounding_method": "away_from_zero"}, ((4,),)),
        _rounding_oracle,
        (Bad("f32[2]", {"rounding_method": "up"}, "round: attribute 'rounding_method' must be one of 'away_from_zero', 'to_nearest_even', got 'up'"),
         dtype_error("round", "i64", FLOAT, "i64[]")),
        signed_zeros=True,
    ),
    *(
        OpRecord(name, NUMERIC, same_shapes(1), elementwise(scalar), (dtype_error(name, "bool", NUMERIC, "bool[3]"),), signed_zeros=True)
        for name, scalar in UNARY_NUMERIC.items()
    ),
    OpRecord("is_finite", FLOAT, same_shapes(1), elementwise(math.isfinite, np.bool_), (dtype_error("is_finite", "i32", FLOAT, "i32[2]"),)),
    OpRecord("not", BOOL_INT, same_shapes(1), elementwise(lambda x: not x if isinstance(x, bool) else ~x),
             (dtype_error("not", "f32", BOOL_INT, "f32[2]"), Bad("i32[2] i32[2]", {}, "not: expected 1 operand, got 2"))),
    *(
        OpRecord(name, dtypes, same_shapes(2), elementwise(scalar), (
            Bad(f"{dtypes[-1]}[2] {dtypes[-1]}[3]", {}, f"{name}: operands must have equal shapes and dtypes, but operand 0 is {dtypes[-1]}[2] and operand 1 is {dtypes[-1]}[3]"),
            Bad(f"{dtypes[-1]}[2]", {}, f"{name}: expected 2 operands, got 1"),
            dtype_error(name, "bool" if "bool" not in dtypes else "f32", dtypes, "bool[2] bool[2]" if "bool" not in dtypes else "f32[2] f32[2]"),
        ))
        for name, (dtypes, scalar) in BINARY.items()
    ),
    *(
        OpRecord(name, INT, same_shapes(2), _shift_oracle(which), (dtype_error(name, "f32", INT, "f32[2] f32[2]"),), make=shift_operands)
        for which, name in enumerate(("shift_left", "shift_right_logical", "shift_right_arithmetic"))
    ),
    OpRecord(
        "compare", ALL,
        tuple(Case({"direction": direction}, (shape, shape)) for direction in COMPARISONS for shape in ((), (0,), (2, 3))),
        lambda attrs, x, y: elementwise(COMPARISONS[attrs["direction"]], np.bool_)(attrs, x, y),
        (Bad("f32[2] f32[2]", {}, "compare: missing attribute 'direction'"),
         Bad("f32[2] f32[2]", {"direction": "lesser"}, "compare: attribute 'direction' must be one of"),
         Bad("f32[2] i32[2]", {"direction": "eq"}, "compare: operands must have equal shapes and dtypes")),
    ),
    OpRecord(
        "select", ALL,
        tuple(Case({}, shapes) for shapes in (((2, 3),) * 3, ((), (2, 3), (2, 3)), ((),) * 3, ((0,),) * 3, ((), (0,), (0,)))),
        elementwise(lambda predicate, on_true, on_false: on_true if predicate else on_false, like=1),
        (Bad("f32[2] f32[2] f32[2]", {}, "select: predicate has dtype f32, expected bool"),
         Bad("bool[3] f32[2] f32[2]", {}, "select: predicate must be 0-d or have shape (2,), got bool[3]"),
         Bad("bool[] f32[2] i32[2]", {}, "select: on_true and on_false must have equal types, got f32[2] and i32[2]")),
        make=select_operands,
    ),
    OpRecord(
        "clamp", NUMERIC,
        tuple(Case({}, shapes) for shapes in (((2, 3),) * 3, ((), (2, 3), ()), ((), (2, 3), (2, 3)), ((),) * 3, ((), (0,), ()))),
        elementwise(oracles.clamp, like=1),
        (Bad("f32[3] f32[2,3] f32[]", {}, "clamp: min must be f32[2,3] or f32[], got f32[3]"),
         Bad("f32[] f32[2] i32[]", {}, "clamp: max must be f32[2] or f32[], got i32[]"),
         Bad("bool[] bool[2] bool[]", {}, "clamp: operand has dtype bool")),
    ),
    OpRecord(
        "convert", ALL,
        tuple(Case({"new_dtype": target}, (shape,)) for target in ALL for shape in ((), (0,), (7,))),
        lambda attrs, x: elementwise(oracles.convert(NUMPY_DTYPES[attrs["new_dtype"]]), NUMPY_DTYPES[attrs["new_dtype"]])(attrs, x),
        (Bad("f32[2]", {"new_dtype": "f16"}, "convert: attribute 'new_dtype' must be one of 'bool', 'i32', 'i64', 'f32', 'f64', got 'f16'"),
         Bad("f32[2]", {}, "convert: missing attribute 'new_dtype'")),
    ),
    OpRecord(
        "integer_pow", NUMERIC,
        tuple(Case({"y": y}, (shape,)) for y in (0, 1, 2, 3, 5) for shape in ((), (0,), (6,)))
        + tuple(Case({"y": y}, ((6,),), dtypes=FLOAT) for y in (-1, -2, -3)),
        lambda attrs, x: elementwise(oracles.integer_pow(attrs["y"]))(attrs, x),
        (Bad("i32[2]", {"y": -1}, "integer_pow: negative exponent -1 needs a float operand, got i32[2]"),
         Bad("f32[2]", {"y": 1.5}, "integer_pow: attribute 'y' must be an int, got 1.5"),
         Bad("f32[2]", {"y": True}, "integer_pow: attribute 'y' must be an int, got True")),
        rtol=1e-5,
    ),
]


# --- creation and shape ----------------------------------------------------------------------


def _constant_value(dtype: str, shape) -> DenseAttr:
    return DenseAttr.from_array(random_array(rng_for(f"constant-{dtype}-{shape}"), shape, dtype))


def _layout(name: str, rows, oracle, bad, **options) -> OpRecord:
    """A record over every dtype from rows of (attrs, operand shapes)."""
    return OpRecord(name, ALL, tuple(Case(attrs, shapes) for attrs, shapes in rows), oracle, bad, **options)


CREATION_AND_SHAPE_RECORDS = [
    OpRecord(
        "iota", NUMERIC,
        tuple(Case(lambda dtype, shape=shape, dim=dim: {"dtype": dtype, "shape": shape, "dimension": dim})
              for shape, dim in (((5,), 0), ((2, 3), 1), ((3, 1, 2), 0), ((0, 4), 1))),
        lambda attrs: (oracles.build(attrs["shape"], NUMPY_DTYPES[attrs["dtype"]], lambda index: index[attrs["dimension"]]),),
        (Bad("", {"dtype": "f32", "shape": (2, 3), "dimension": 2}, "iota: dimension 2 is out of range for rank 2"),
         Bad("", {"dtype": "bool", "shape": (2,), "dimension": 0}, "iota: attribute 'dtype' must be one of"),
         Bad("", {"dtype": "f32", "shape": (-1,), "dimension": 0}, "iota: attribute 'shape' must be a tuple of ints >= 0"),
         Bad("f32[2]", {"dtype": "f32", "shape": (2,), "dimension": 0}, "iota: expected 0 operands, got 1")),
    ),
    OpRecord(
        "constant", ALL,
        tuple(Case(lambda dtype, shape=shape: {"value": _constant_value(dtype, shape)}) for shape in SHAPES),
        lambda attrs: (np.frombuffer(attrs["value"].data, NUMPY_DTYPES[attrs["value"].type.dtype]).reshape(attrs["value"].type.shape),),
        (Bad("", {"value": 1.0}, "constant: attribute 'value' must be a DenseAttr, got 1.0"),
         Bad("", {"value": DenseAttr(TensorType((2,), "f32"), b"\0" * 4)}, "constant: value holds 4 bytes but f32[2] needs 8")),
    ),
    _layout(
        "broadcast_in_dim",
        [({"shape": (2, 3), "broadcast_dimensions": (1,)}, ((3,),)),
         ({"shape": (2, 3), "broadcast_dimensions": ()}, ((),)),
         ({"shape": (4, 2, 3), "broadcast_dimensions": (0, 2)}, ((1, 3),)),
         ({"shape": (0, 3), "broadcast_dimensions": (1,)}, ((3,),)),
         ({"shape": (2, 0), "broadcast_dimensions": (0, 1)}, ((2, 1),)),
         ({"shape": (), "broadcast_dimensions": ()}, ((),))],
        oracles.broadcast_in_dim,
        (Bad("f32[3]", {"shape": (2, 4), "broadcast_dimensions": (1,)}, "broadcast_in_dim: operand dim 0 of size 3 cannot broadcast to size 4"),
         Bad("f32[2,3]", {"shape": (2, 3), "broadcast_dimensions": (1, 0)}, "broadcast_in_dim: broadcast_dimensions (1, 0) must be strictly increasing"),
         Bad("f32[3]", {"shape": (3,), "broadcast_dimensions": ()}, "broadcast_in_dim: broadcast_dimensions () needs one entry per dim"),
         Bad("f32[3]", {"shape": (3,), "broadcast_dimensions": (1,)}, "broadcast_in_dim: broadcast_dimensions (1,) has 1, out of range for rank 1")),
    ),
    _layout(
        "reshape",
        [({"new_sizes": (3, 2)}, ((2, 3),)), ({"new_sizes": (6,)}, ((2, 3),)), ({"new_sizes": (1, 1)}, ((),)),
         ({"new_sizes": (3, 0)}, ((0, 3),)), ({"new_sizes": ()}, ((1, 1),)), ({"new_sizes": (2, 1, 3)}, ((3, 1, 2),))],
        oracles.reshape_to(lambda attrs, x: attrs["new_sizes"]),
        (Bad("f32[2,3]", {"new_sizes": (4,)}, "reshape: new_sizes (4,) hold 4 elements, f32[2,3] holds 6"),
         Bad("f32[2,3]", {"new_sizes": [6]}, "reshape: new_sizes (6,)") if False else Bad("f32[2,3]", {"new_sizes": "6"}, "reshape: attribute 'new_sizes' must be a tuple of ints")),
    ),
    _layout(
        "transpose",
        [({"permutation": (1, 0)}, ((2, 3),)), ({"permutation": (2, 0, 1)}, ((3, 1, 2),)), ({"permutation": ()}, ((),)),
         ({"permutation": (1, 0)}, ((0, 3),))],
        oracles.transpose,
        (Bad("f32[2,3]", {"permutation": (0, 0)}, "transpose: permutation (0, 0) is not a permutation of the 2 dims"),
         Bad("f32[2,3]", {}, "transpose: missing attribute 'permutation'")),
    ),
    _layout(
        "slice",
        [({"start_indices": (1,), "limit_indices": (5,), "strides": (2,)}, ((5,),)),
         ({"start_indices": (0, 1), "limit_indices": (2, 3), "strides": (1, 1)}, ((2, 3),)),
         ({"start_indices": (1, 0, 0), "limit_indices": (3, 1, 2), "strides": (2, 1, 3)}, ((3, 1, 2),)),
         ({"start_indices": (), "limit_indices": (), "strides": ()}, ((),)),
         ({"start_indices": (0,), "limit_indices": (0,), "strides": (1,)}, ((0,),)),
         ({"start_indices": (2,), "limit_indices": (2,), "strides": (3,)}, ((5,),))],
        oracles.slice_,
        (Bad("f32[5]", {"start_indices": (2,), "limit_indices": (1,), "strides": (1,)}, "slice: dim 0: need 0 <= start 2 <= limit 1 <= size 5"),
         Bad("f32[5]", {"start_indices": (0,), "limit_indices": (5,), "strides": (0,)}, "slice: attribute 'strides' must be a tuple of ints >= 1, got (0,)"),
         Bad("f32[5]", {"start_indices": (0,), "limit_indices": (5,)}, "slice: missing attribute 'strides'"),
         Bad("f32[5]", {"start_indices": (0, 0), "limit_indices": (5,), "strides": (1,)}, "slice: start_indices (0, 0) must have one entry per dim (rank 1)")),
    ),
    _layout(
        "dynamic_slice",
        [({"slice_sizes": (3,)}, ((5,), (), )), ({"slice_sizes": (1, 2)}, ((2, 3), (), ())), ({"slice_sizes": ()}, ((),)),
         ({"slice_sizes": (0, 2)}, ((0, 4), (), ())), ({"slice_sizes": (3, 1, 0)}, ((3, 1, 2), (), (), ()))],
        oracles.dynamic_slice,
        (Bad("f32[5]", {"slice_sizes": (2,)}, "dynamic_slice: expected 1 start indices (one per dim of f32[5]), got 0"),
         Bad("f32[5] f32[]", {"slice_sizes": (2,)}, "dynamic_slice: start index 0 has dtype f32, expected i32 or i64"),
         Bad("f32[5] i32[1]", {"slice_sizes": (2,)}, "dynamic_slice: start index 0 must be 0-d, got i32[1]"),
         Bad("f32[5] i32[]", {"slice_sizes": (6,)}, "dynamic_slice: slice_sizes (6,): dim 0 has size 5, smaller than 6")),
        make=with_start_indices(1),
    ),
    _layout(
        "dynamic_update_slice",
        [({}, ((5,), (2,), ())), ({}, ((2, 3), (2, 1), (), ())), ({}, ((), ())), ({}, ((0, 3), (0, 2), (), ())),
         ({}, ((4,), (0,), ()))],
        oracles.dynamic_update_slice,
        (Bad("f32[2] f32[3] i32[]", {}, "dynamic_update_slice: update f32[3] does not fit in the operand f32[2]"),
         Bad("f32[2] i32[1] i32[]", {}, "dynamic_update_slice: update i32[1] must have the dtype and rank of the operand f32[2]"),
         Bad("f32[2]", {}, "dynamic_update_slice: expected an operand, an update and start indices, got 1 operands")),
        make=with_start_indices(2),
    ),
    _layout(
        "pad",
        [({"padding_config": ((1, 2, 1),)}, ((5,), ())), ({"padding_config": ((0, -1, 0), (-1, 2, 2))}, ((2, 3), ())),
         ({"padding_config": ()}, ((), ())), ({"padding_config": ((2, 1, 3),)}, ((0,), ())),
         ({"padding_config": ((-3, 1, 1),)}, ((2,), ())), ({"padding_config": ((0, 0, 0), (1, 0, 0), (-1, -1, 1))}, ((3, 1, 2), ()))],
        oracles.pad,
        (Bad("f32[5] f32[]", {"padding_config": ((0, 0, -1),)}, "pad: dim 0: interior padding must be >= 0, got -1"),
         Bad("f32[5] f32[1]", {"padding_config": ((0, 0, 0),)}, "pad: padding_value must be f32[], got f32[1]"),
         Bad("f32[5] f32[]", {"padding_config": ((0, 0, 0), (0, 0, 0))}, "pad: padding_config has 2 entries, the operand f32[5] has rank 1"),
         Bad("f32[2] f32[]", {"padding_config": ((-2, -1, 0),)}, "pad: dim 0: padding (-2, -1, 0) of size 2 gives negative size -1"),
         Bad("f32[2] f32[]", {"padding_config": ((1, 1),)}, "pad: attribute 'padding_config' must be a tuple of (lo, hi, interior) int triples")),
    ),
    _layout(
        "concatenate",
        [({"dimension": 1}, ((2, 3), (2, 1))), ({"dimension": 0}, ((1, 2), (0, 2), (3, 2))), ({"dimension": 0}, ((5,),)),
         ({"dimension": 2}, ((3, 1, 2), (3, 1, 0)))],
        oracles.concatenate,
        (Bad("f32[2,3] f32[3,3]", {"dimension": 1}, "concatenate: operand 1 is f32[3,3], which does not concatenate with f32[2,3] along dim 1"),
         Bad("f32[2] i32[2]", {"dimension": 0}, "concatenate: operand 1 is i32[2]"),
         Bad("", {"dimension": 0}, "concatenate: expected at least one operand, got none"),
         Bad("f32[] f32[]", {"dimension": 0}, "concatenate: dimension 0 is out of range for rank 0")),
    ),
    _layout(
        "rev",
        [({"dimensions": (0,)}, ((5,),)), ({"dimensions": (0, 1)}, ((2, 3),)), ({"dimensions": (2,)}, ((3, 1, 2),)),
         ({"dimensions": ()}, ((),)), ({"dimensions": (0,)}, ((0,),))],
        oracles.rev,
        (Bad("f32[2,3]", {"dimensions": (0, 0)}, "rev: dimensions (0, 0) has duplicates"),
         Bad("f32[2,3]", {"dimensions": (2,)}, "rev: dimensions (2,) has 2, out of range for rank 2")),
    ),
    _layout(
        "squeeze",
        [({"dimensions": (0,)}, ((1, 3),)), ({"dimensions": (1,)}, ((3, 1, 2),)), ({"dimensions": (0,)}, ((1,),)),
         ({"dimensions": ()}, ((2, 3),)), ({"dimensions": (0,)}, ((1, 0),)), ({"dimensions": (1, 0)}, ((1, 1),))],
        oracles.reshape_to(lambda attrs, x: [s for d, s in enumerate(x.shape) if d not in attrs["dimensions"]]),
        (Bad("f32[3]", {"dimensions": (0,)}, "squeeze: dim 0 of f32[3] has size 3, expected 1"),
         Bad("f32[1]", {"dimensions": (1,)}, "squeeze: dimensions (1,) has 1, out of range for rank 1")),
    ),
    _layout(
        "expand_dims",
        [({"dimensions": (0,)}, ((3,),)), ({"dimensions": (1, 3)}, ((2, 3),)), ({"dimensions": (0,)}, ((),)),
         ({"dimensions": (1,)}, ((0,),)), ({"dimensions": (3, 0)}, ((2, 3),))],
        oracles.reshape_to(lambda attrs, x: _expanded_shape(x.shape, attrs["dimensions"])),
        (Bad("f32[2]", {"dimensions": (2,)}, "expand_dims: dimensions (2,) has 2, out of range for rank 2"),
         Bad("f32[2]", {"dimensions": (0, 0)}, "expand_dims: dimensions (0, 0) has duplicates")),
    ),
]


def _expanded_shape(shape, dimensions):
    result, sizes = [], list(shape)
    for position in range(len(shape) + len(dimensions)):
        result.append(1 if position in dimensions else sizes.pop(0))
    return result
