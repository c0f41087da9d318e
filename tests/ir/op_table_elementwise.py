"""Op-table rows of the elementwise ops: unary, binary, compare, select, clamp, convert."""

from __future__ import annotations

import math

import numpy as np
import op_oracles as oracles
from op_oracles import NUMPY_DTYPES, elementwise
from op_records import (
    ALL,
    BOOL_INT,
    EVERY_INT,
    FLOAT,
    NUMERIC,
    Bad,
    Case,
    OpRecord,
    dtype_error,
    random_operands,
    same_shapes,
    select_operands,
    shift_operands,
)

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
    "erf_inv": oracles.erf_inv,
    "floor": oracles.integral(math.floor),
    "ceil": oracles.integral(math.ceil),
}
UNARY_NUMERIC = {"neg": lambda x: -x, "abs": abs, "sign": oracles.sign, "square": lambda x: x * x}
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
    scalar = (
        oracles.ROUND_TO_NEAREST_EVEN
        if method == "to_nearest_even"
        else oracles.ROUND_AWAY_FROM_ZERO
    )
    return elementwise(scalar)(attrs, x)


def _inside_unit_interval(rng, shapes, dtype, attrs=None):
    """erf_inv's domain: mostly inside (-1, 1), with its ends and values past them."""
    arrays = []
    for shape in shapes:
        values = rng.uniform(-1, 1, shape).astype(NUMPY_DTYPES[dtype])
        specials = np.array([1.0, -1.0, 0.0, -0.0, math.nan, 1.5, 0.999999], NUMPY_DTYPES[dtype])
        mask = rng.random(shape) < 0.2
        values[mask] = rng.choice(specials, int(mask.sum()))
        arrays.append(values)
    return arrays


def _nextafter_oracle(attrs, x, y):
    """nextafter from the bits of each element: one step of the integer view towards y."""
    bits_type = np.dtype(f"uint{x.dtype.itemsize * 8}")
    results = []
    for first, second in zip(x.ravel().tolist(), np.broadcast_to(y, x.shape).ravel().tolist()):
        if math.isnan(first) or math.isnan(second):
            results.append(math.nan)
        elif first == second:
            results.append(second)
        elif first == 0:
            tiny = np.array(1, bits_type).view(x.dtype)[()]
            results.append(math.copysign(float(tiny), second - first))
        else:
            bits = int(np.array(first, x.dtype).view(bits_type)[()])
            bits += 1 if (second > first) == (first > 0) else -1
            results.append(float(np.array(bits, bits_type).view(x.dtype)[()]))
    return (np.array(results, x.dtype).reshape(x.shape),)


def _bitcast_oracle(attrs, x):
    """Pack each element's bytes with struct and read them back as the new type."""
    import struct

    codes = {"i4": "i", "i8": "q", "u4": "I", "u8": "Q", "f4": "f", "f8": "d"}
    source = NUMPY_DTYPES[_ir_name(x.dtype)]
    target = NUMPY_DTYPES[attrs["new_dtype"]]
    packed = b"".join(struct.pack("<" + codes[source.str[1:]], item) for item in x.ravel().tolist())
    count = len(packed) // target.itemsize
    values = struct.unpack("<" + codes[target.str[1:]] * count, packed)
    if target.itemsize < source.itemsize:
        shape = x.shape + (source.itemsize // target.itemsize,)
    elif target.itemsize > source.itemsize:
        shape = x.shape[:-1]
    else:
        shape = x.shape
    return (np.array(values, target).reshape(shape),)


def _ir_name(numpy_dtype) -> str:
    return {value: key for key, value in NUMPY_DTYPES.items()}[np.dtype(numpy_dtype)]


_BITCAST_SOURCES = ("i32", "i64", "u32", "u64", "f32", "f64")


def _bitcast_cases():
    cases = []
    for source in _BITCAST_SOURCES:
        for target in _BITCAST_SOURCES:
            wider = NUMPY_DTYPES[target].itemsize > NUMPY_DTYPES[source].itemsize
            shapes = ((2,), (3, 2)) if wider else ((), (5,), (2, 3))
            cases += [Case({"new_dtype": target}, (shape,), dtypes=(source,)) for shape in shapes]
    return tuple(cases)


ELEMENTWISE_RECORDS = [
    *(
        OpRecord(
            name,
            FLOAT,
            same_shapes(1),
            elementwise(scalar),
            (dtype_error(name, "i32", FLOAT, "i32[2]"),),
            atol=5e-7 if name == "erf" else 0.0,
            rtol=2e-5 if name == "erf_inv" else None,
            make=_inside_unit_interval if name == "erf_inv" else random_operands,
            signed_zeros=name in ("floor", "ceil"),
        )
        for name, scalar in UNARY_FLOAT.items()
    ),
    OpRecord(
        "round",
        FLOAT,
        same_shapes(1)
        + same_shapes(1, {"rounding_method": "to_nearest_even"})
        + same_shapes(1, {"rounding_method": "away_from_zero"}, ((4,),)),
        _rounding_oracle,
        (
            Bad(
                "f32[2]",
                {"rounding_method": "up"},
                "round: attribute 'rounding_method' must be one of 'away_from_zero', 'to_nearest_even', got 'up'",
            ),
            dtype_error("round", "i64", FLOAT, "i64[]"),
        ),
        signed_zeros=True,
    ),
    *(
        OpRecord(
            name,
            NUMERIC,
            same_shapes(1),
            elementwise(scalar),
            (dtype_error(name, "bool", NUMERIC, "bool[3]"),),
            signed_zeros=True,
        )
        for name, scalar in UNARY_NUMERIC.items()
    ),
    OpRecord(
        "is_finite",
        FLOAT,
        same_shapes(1),
        elementwise(math.isfinite, np.bool_),
        (dtype_error("is_finite", "i32", FLOAT, "i32[2]"),),
    ),
    OpRecord(
        "not",
        BOOL_INT,
        same_shapes(1),
        elementwise(lambda x: not x if isinstance(x, bool) else ~x),
        (
            dtype_error("not", "f32", BOOL_INT, "f32[2]"),
            Bad("i32[2] i32[2]", {}, "not: expected 1 operand, got 2"),
        ),
    ),
    *(
        OpRecord(
            name,
            dtypes,
            same_shapes(2),
            elementwise(scalar),
            (
                Bad(
                    f"{dtypes[-1]}[2] {dtypes[-1]}[3]",
                    {},
                    f"{name}: operands must have equal shapes and dtypes, but operand 0 is {dtypes[-1]}[2] and operand 1 is {dtypes[-1]}[3]",
                ),
                Bad(f"{dtypes[-1]}[2]", {}, f"{name}: expected 2 operands, got 1"),
                dtype_error(
                    name,
                    "bool" if "bool" not in dtypes else "f32",
                    dtypes,
                    "bool[2] bool[2]" if "bool" not in dtypes else "f32[2] f32[2]",
                ),
            ),
        )
        for name, (dtypes, scalar) in BINARY.items()
    ),
    *(
        OpRecord(
            name,
            EVERY_INT,
            same_shapes(2),
            _shift_oracle(which),
            (dtype_error(name, "f32", EVERY_INT, "f32[2] f32[2]"),),
            make=shift_operands,
        )
        for which, name in enumerate(
            ("shift_left", "shift_right_logical", "shift_right_arithmetic")
        )
    ),
    OpRecord(
        "compare",
        ALL,
        tuple(
            Case({"direction": direction}, (shape, shape))
            for direction in COMPARISONS
            for shape in ((), (0,), (2, 3))
        ),
        lambda attrs, x, y: elementwise(COMPARISONS[attrs["direction"]], np.bool_)(attrs, x, y),
        (
            Bad("f32[2] f32[2]", {}, "compare: missing attribute 'direction'"),
            Bad(
                "f32[2] f32[2]",
                {"direction": "lesser"},
                "compare: attribute 'direction' must be one of",
            ),
            Bad(
                "f32[2] i32[2]",
                {"direction": "eq"},
                "compare: operands must have equal shapes and dtypes",
            ),
        ),
    ),
    OpRecord(
        "select",
        ALL,
        tuple(
            Case({}, shapes)
            for shapes in (
                ((2, 3),) * 3,
                ((), (2, 3), (2, 3)),
                ((),) * 3,
                ((0,),) * 3,
                ((), (0,), (0,)),
            )
        ),
        elementwise(
            lambda predicate, on_true, on_false: on_true if predicate else on_false, like=1
        ),
        (
            Bad("f32[2] f32[2] f32[2]", {}, "select: predicate has dtype f32, expected bool"),
            Bad(
                "bool[3] f32[2] f32[2]",
                {},
                "select: predicate must be 0-d or have shape (2,), got bool[3]",
            ),
            Bad(
                "bool[] f32[2] i32[2]",
                {},
                "select: on_true and on_false must have equal types, got f32[2] and i32[2]",
            ),
        ),
        make=select_operands,
    ),
    OpRecord(
        "clamp",
        NUMERIC,
        tuple(
            Case({}, shapes)
            for shapes in (
                ((2, 3),) * 3,
                ((), (2, 3), ()),
                ((), (2, 3), (2, 3)),
                ((),) * 3,
                ((), (0,), ()),
            )
        ),
        elementwise(oracles.clamp, like=1),
        (
            Bad("f32[3] f32[2,3] f32[]", {}, "clamp: min must be f32[2,3] or f32[], got f32[3]"),
            Bad("f32[] f32[2] i32[]", {}, "clamp: max must be f32[2] or f32[], got i32[]"),
            Bad("bool[] bool[2] bool[]", {}, "clamp: operand has dtype bool"),
        ),
    ),
    OpRecord(
        "convert",
        ALL + ("u64",),
        tuple(
            Case({"new_dtype": target}, (shape,))
            for target in ALL + ("u64",)
            for shape in ((), (0,), (7,))
        ),
        lambda attrs, x: elementwise(
            oracles.convert(NUMPY_DTYPES[attrs["new_dtype"]]), NUMPY_DTYPES[attrs["new_dtype"]]
        )(attrs, x),
        (
            Bad(
                "f32[2]",
                {"new_dtype": "f8"},
                "convert: attribute 'new_dtype' must be one of 'bool', 'i8', 'i16', 'i32', 'i64', 'u8', 'u16', 'u32', 'u64', 'f32', 'f64', 'f16', 'bf16', 'c64', 'c128', got 'f8'",
            ),
            Bad("f32[2]", {}, "convert: missing attribute 'new_dtype'"),
        ),
    ),
    OpRecord(
        "nextafter",
        FLOAT,
        same_shapes(2),
        _nextafter_oracle,
        (dtype_error("nextafter", "i32", FLOAT, "i32[2] i32[2]"),),
    ),
    OpRecord(
        "fma",
        FLOAT,
        same_shapes(3),
        elementwise(oracles.fma),
        (
            dtype_error("fma", "i32", FLOAT, "i32[2] i32[2] i32[2]"),
            Bad("f32[2] f32[2]", {}, "fma: expected 3 operands, got 2"),
        ),
    ),
    OpRecord(
        "bitcast_convert_type",
        _BITCAST_SOURCES,
        _bitcast_cases(),
        _bitcast_oracle,
        (
            Bad("f32[3]", {"new_dtype": "f64"}, "needs a minor dim of size 2"),
            Bad("bool[3]", {"new_dtype": "i32"}, "operand has dtype bool"),
            Bad("f32[3]", {"new_dtype": "bool"}, "attribute 'new_dtype' must be one of"),
        ),
    ),
    OpRecord(
        "integer_pow",
        NUMERIC,
        tuple(Case({"y": y}, (shape,)) for y in (0, 1, 2, 3, 5) for shape in ((), (0,), (6,)))
        + tuple(Case({"y": y}, ((6,),), dtypes=FLOAT) for y in (-1, -2, -3)),
        lambda attrs, x: elementwise(oracles.integer_pow(attrs["y"]))(attrs, x),
        (
            Bad(
                "i32[2]",
                {"y": -1},
                "integer_pow: negative exponent -1 needs a float operand, got i32[2]",
            ),
            Bad("f32[2]", {"y": 1.5}, "integer_pow: attribute 'y' must be an int, got 1.5"),
            Bad("f32[2]", {"y": True}, "integer_pow: attribute 'y' must be an int, got True"),
        ),
        rtol=1e-5,
    ),
]
