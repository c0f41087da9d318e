"""Differential records of meshjit.numpy's elementwise functions and operators: broadcasting,
promotion (weak Python scalars, bool/int/float mixes, x64), 0-d and size-0 shapes."""

from __future__ import annotations

from numpy_record import Record, inputs

R = Record
F = "f32[3,4]"

# Float-valued unary functions, run on inputs in (0.1, 0.9) where every one (log, arcsin, ...)
# is defined.
_FLOAT_UNARY = [
    "exp",
    "exp2",
    "expm1",
    "log",
    "log1p",
    "log2",
    "log10",
    "sqrt",
    "cbrt",
    "sin",
    "cos",
    "tan",
    "tanh",
    "arcsin",
    "arccos",
    "arctan",
    "sinh",
    "cosh",
    "floor",
    "ceil",
    "trunc",
    "rint",
    "negative",
    "positive",
    "absolute",
    "sign",
    "square",
    "reciprocal",
]


def _unary(name: str):
    return lambda m, x: getattr(m, name)(x)


ELEMENTWISE = (
    [R(f"{name} f32", _unary(name), inputs(("f32[2,3]", 0.1, 0.9)), "f32") for name in _FLOAT_UNARY]
    + [
        R(f"{name} i32 -> f32", _unary(name), inputs(("i32[5]", 1, 9)), "f32")
        for name in ("exp", "log", "sqrt", "sin", "tanh", "log2", "arctan")
    ]
    + [
        R("floor i32 stays i32", lambda m, x: m.floor(x), inputs("i32[4]"), "i32"),
        R("round i32 stays i32", lambda m, x: m.round(x), inputs("i32[4]"), "i32"),
        R(
            "round decimals -1 i32",
            lambda m, x: m.round(x, -1),
            inputs(("i32[40]", -60, 60)),
            "i32",
        ),
        R(
            "round half to even",
            lambda m, x: m.round(x),
            inputs(("f32[7]", -3, 3)),
            "f32",
            reference=lambda np, x: np.round(x),
        ),
        R(
            "round halves",
            lambda m: m.round(m.asarray([0.5, 1.5, 2.5, -0.5, -1.5])),
            (),
            "f32",
            reference=lambda np: np.array([0.0, 2.0, 2.0, -0.0, -2.0]),
        ),
        R("round decimals 2", lambda m, x: m.round(x, 2), inputs("f32[6]"), "f32", atol=1e-5),
        R("abs i32", lambda m, x: m.abs(x), inputs("i32[5]"), "i32"),
        R("abs bool", lambda m, x: m.abs(x), inputs("bool[5]"), "bool"),
        R("sign i32", lambda m, x: m.sign(x), inputs("i32[6]"), "i32"),
        R("square bool -> i32", lambda m, x: m.square(x), inputs("bool[4]"), "i32"),
        R("exp 0-d", lambda m, x: m.exp(x), inputs("f32[]"), "f32"),
        R("exp size 0", lambda m, x: m.exp(x), inputs("f32[0,3]"), "f32"),
        R(
            "exp python scalar",
            lambda m: m.exp(2.0),
            (),
            "f32",
            reference=lambda np: np.exp(np.float32(2.0)),
        ),
        R(
            "sqrt python int",
            lambda m: m.sqrt(2),
            (),
            "f32",
            reference=lambda np: np.sqrt(np.float32(2)),
        ),
        R("isfinite", lambda m, x: m.isfinite(m.log(x)), inputs(("f32[8]", -1, 1)), "bool"),
        R(
            "isnan isinf",
            lambda m, x: (m.isnan(m.log(x)), m.isinf(m.divide(1.0, m.floor(x)))),
            inputs(("f32[8]", -1, 1)),
            ("bool", "bool"),
        ),
        R("isfinite int", lambda m, x: m.isfinite(x), inputs("i32[3]"), "bool"),
        R(
            "logaddexp",
            lambda m, x, y: m.logaddexp(x, y),
            inputs(("f32[3,4]", -50, 50), ("f32[4]", -50, 50)),
            "f32",
        ),
        R(
            "logaddexp infinities",
            lambda m: m.logaddexp(
                m.asarray([-m.inf, m.inf, 1.0]), m.asarray([-m.inf, m.inf, -m.inf])
            ),
            (),
            "f32",
            reference=lambda np: np.array([-np.inf, np.inf, 1.0]),
        ),
        # -- binary: broadcasting and promotion
        R(
            "add f32 f32 broadcast",
            lambda m, x, y: m.add(x, y),
            inputs("f32[3,1]", "f32[1,4]"),
            "f32",
        ),
        R("add rank broadcast", lambda m, x, y: m.add(x, y), inputs("f32[2,3,4]", "f32[4]"), "f32"),
        R("add 0-d", lambda m, x, y: m.add(x, y), inputs("f32[]", "f32[3]"), "f32"),
        R("add size 0", lambda m, x, y: m.add(x, y), inputs("f32[0,4]", "f32[1,4]"), "f32"),
        R(
            "add size 1 dims",
            lambda m, x, y: m.add(x, y),
            inputs("f32[1,1,3]", "f32[2,1,1]"),
            "f32",
        ),
        R("add i32 f32", lambda m, x, y: m.add(x, y), inputs("i32[3]", "f32[3]"), "f32"),
        R("add bool i32", lambda m, x, y: m.add(x, y), inputs("bool[3]", "i32[3]"), "i32"),
        R(
            "add bool bool is or",
            lambda m, x, y: m.add(x, y),
            inputs("bool[6]", "bool[6]"),
            "bool",
            reference=lambda np, x, y: x | y,
        ),
        R(
            "multiply bool bool is and",
            lambda m, x, y: m.multiply(x, y),
            inputs("bool[6]", "bool[6]"),
            "bool",
        ),
        R("add i32 weak int", lambda m, x: m.add(x, 3), inputs("i32[4]"), "i32"),
        R("add i32 weak float", lambda m, x: m.add(x, 2.5), inputs("i32[4]"), "f32"),
        R("add f32 weak int", lambda m, x: m.add(x, 3), inputs("f32[4]"), "f32"),
        R("add bool weak int", lambda m, x: m.add(x, 1), inputs("bool[4]"), "i32"),
        R("add bool weak float", lambda m, x: m.multiply(x, 1.5), inputs("bool[4]"), "f32"),
        R(
            "add weak weak",
            lambda m: m.add(1, 2.5),
            (),
            "f32",
            reference=lambda np: np.float32(3.5),
        ),
        R("subtract", lambda m, x, y: m.subtract(x, y), inputs(F, "f32[4]"), "f32"),
        R("multiply i32", lambda m, x, y: m.multiply(x, y), inputs("i32[3,4]", "i32[3,1]"), "i32"),
        R("divide f32", lambda m, x, y: m.divide(x, y), inputs(F, ("f32[4]", 0.5, 2)), "f32"),
        R(
            "true_divide ints -> f32",
            lambda m, x, y: m.true_divide(x, y),
            inputs("i32[6]", ("i32[6]", 1, 4)),
            "f32",
        ),
        R("divide int by weak int", lambda m, x: m.divide(x, 2), inputs("i32[5]"), "f32"),
        R("divide bools", lambda m, x: m.divide(x, True), inputs("bool[5]"), "f32"),
        R(
            "floor_divide ints",
            lambda m, x, y: (m.floor_divide(x, y), m.floor_divide(x, -y)),
            inputs(("i32[20]", -9, 9), ("i32[20]", 1, 4)),
            ("i32", "i32"),
        ),
        R(
            "mod ints",
            lambda m, x, y: (m.mod(x, y), m.remainder(x, -y)),
            inputs(("i32[20]", -9, 9), ("i32[20]", 1, 4)),
            ("i32", "i32"),
        ),
        R(
            "floor_divide floats",
            lambda m, x, y: (m.floor_divide(x, y), m.floor_divide(x, -y)),
            inputs(("f32[20]", -9, 9), ("f32[20]", 0.3, 4)),
            ("f32", "f32"),
        ),
        R(
            "mod floats",
            lambda m, x, y: (m.mod(x, y), m.mod(x, -y)),
            inputs(("f32[20]", -9, 9), ("f32[20]", 0.3, 4)),
            ("f32", "f32"),
            atol=1e-5,
        ),
        R(
            "floor_divide python floats",
            lambda m: m.floor_divide(m.asarray([1.0, -7.5, 7.5]), m.asarray([0.1, 2.0, -2.0])),
            (),
            "f32",
            reference=lambda np: np.floor_divide(
                np.float32([1.0, -7.5, 7.5]), np.float32([0.1, 2.0, -2.0])
            ),
        ),
        R("mod by weak int", lambda m, x: m.mod(x, 3), inputs("i32[9]"), "i32"),
        R(
            "floor_divide bools -> i32",
            lambda m, x: m.floor_divide(x, m.asarray([True, True, True])),
            inputs("bool[3]"),
            "i32",
            reference=lambda np, x: x.astype(np.int32),
        ),
        R("fmod", lambda m, x, y: m.fmod(x, y), inputs(("i32[9]", -9, 9), ("i32[9]", 1, 4)), "i32"),
        R(
            "power f32 f32",
            lambda m, x, y: m.power(x, y),
            inputs(("f32[5]", 0.5, 2), "f32[5]"),
            "f32",
        ),
        R(
            "power i32 i32",
            lambda m, x, y: m.power(x, y),
            inputs(("i32[12]", -4, 4), ("i32[12]", 0, 6)),
            "i32",
        ),
        R(
            "power i32 negative exponents",
            lambda m, x, y: m.power(x, -y),
            inputs(("i32[12]", -3, 3), ("i32[12]", 1, 3)),
            "i32",
            reference=lambda np, x, y: np.where(
                x == 1, 1, np.where(x == -1, np.where(y % 2 == 1, -1, 1), 0)
            ),
        ),
        R(
            "power integer_pow",
            lambda m, x: (m.power(x, 3), m.power(x, -2), m.power(x, 0)),
            inputs(("f32[5]", 0.5, 2)),
            ("f32", "f32", "f32"),
        ),
        R("power int weak int", lambda m, x: m.power(x, 2), inputs("i32[5]"), "i32"),
        R("power int weak float", lambda m, x: m.power(x, 0.5), inputs(("i32[5]", 0, 9)), "f32"),
        R("power weak base", lambda m, x: m.power(2, x), inputs(("i32[5]", 0, 9)), "i32"),
        R(
            "power bool bool",
            lambda m, x, y: m.power(x, y),
            inputs("bool[6]", "bool[6]"),
            "i32",
            reference=lambda np, x, y: np.power(x.astype(int), y.astype(int)),
        ),
        R(
            "maximum minimum",
            lambda m, x, y: (m.maximum(x, y), m.minimum(x, y)),
            inputs(F, "f32[4]"),
            ("f32", "f32"),
        ),
        R(
            "maximum nan",
            lambda m: m.maximum(m.asarray([m.nan, 1.0]), m.asarray([0.0, m.nan])),
            (),
            "f32",
            reference=lambda np: np.array([np.nan, np.nan]),
        ),
        R("maximum i32 weak float", lambda m, x: m.maximum(x, 1.5), inputs("i32[5]"), "f32"),
        R("maximum bools", lambda m, x, y: m.maximum(x, y), inputs("bool[5]", "bool[5]"), "bool"),
        R("arctan2", lambda m, x, y: m.arctan2(x, y), inputs(F, F), "f32"),
        R(
            "bitwise ops",
            lambda m, x, y: (
                m.bitwise_and(x, y),
                m.bitwise_or(x, y),
                m.bitwise_xor(x, y),
                m.invert(x),
            ),
            inputs("i32[7]", "i32[7]"),
            ("i32",) * 4,
        ),
        R(
            "bitwise bools",
            lambda m, x, y: (m.bitwise_and(x, y), m.bitwise_or(x, y), m.invert(x)),
            inputs("bool[7]", "bool[7]"),
            ("bool",) * 3,
        ),
        R(
            "shifts",
            lambda m, x, y: (m.left_shift(x, y), m.right_shift(x, y)),
            inputs(("i32[8]", -99, 99), ("i32[8]", 0, 5)),
            ("i32", "i32"),
        ),
        R(
            "comparisons",
            lambda m, x, y: (
                m.equal(x, y),
                m.not_equal(x, y),
                m.less(x, y),
                m.less_equal(x, y),
                m.greater(x, y),
                m.greater_equal(x, y),
            ),
            inputs(("i32[3,4]", 0, 2), ("i32[4]", 0, 2)),
            ("bool",) * 6,
        ),
        R(
            "compare int with weak float",
            lambda m, x: (m.equal(x, 1.5), m.less(x, 1.5)),
            inputs(("i32[6]", 0, 3)),
            ("bool", "bool"),
        ),
        R("compare f32 i32", lambda m, x, y: m.less(x, y), inputs(F, "i32[4]"), "bool"),
        R(
            "logical ops",
            lambda m, x, y: (
                m.logical_and(x, y),
                m.logical_or(x, 0.0),
                m.logical_xor(x, y),
                m.logical_not(y),
            ),
            inputs(("i32[8]", 0, 2), ("f32[8]", 0, 1)),
            ("bool",) * 4,
        ),
        R(
            "where",
            lambda m, c, x, y: m.where(c, x, y),
            inputs("bool[3,1]", "f32[4]", "f32[3,4]"),
            "f32",
        ),
        R(
            "where int condition, weak",
            lambda m, c, x: m.where(c, x, 2.5),
            inputs(("i32[5]", 0, 1), "i32[5]"),
            "f32",
        ),
        R("where scalars", lambda m, c: m.where(c, 1, 0), inputs("bool[4]"), "i32"),
        R("clip", lambda m, x: m.clip(x, -1.0, 0.5), inputs(F), "f32"),
        R("clip arrays", lambda m, x, low: m.clip(x, low, 1.0), inputs(F, "f32[4]"), "f32"),
        R(
            "clip one side",
            lambda m, x: (m.clip(x, max=3), m.clip(x, min=-1)),
            inputs("i32[6]"),
            ("i32", "i32"),
        ),
        R("clip int by float", lambda m, x: m.clip(x, 0, 1.5), inputs("i32[6]"), "f32"),
    ]
)
