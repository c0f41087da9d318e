"""Differential records of the Python Array API standard's names in meshjit.numpy: the aliases
of numpy's functions, the inverse hyperbolics, copysign/hypot/nextafter/signbit, the standard's
shape and reduction functions, nonzero with a size and repeat with an array of counts."""

from __future__ import annotations

import numpy
from numpy_record import Record, inputs

R = Record
_COUNTS = numpy.asarray([2, 0, 1])  # a concrete array of counts, as JAX takes them

# (standard name, numpy name, input range): each alias must compute numpy's function.
_ALIASES = [
    ("acos", "arccos", (-0.9, 0.9)),
    ("asin", "arcsin", (-0.9, 0.9)),
    ("atan", "arctan", (-3.0, 3.0)),
    ("asinh", "arcsinh", (-30.0, 30.0)),
    ("acosh", "arccosh", (1.0, 30.0)),
    ("atanh", "arctanh", (-0.95, 0.95)),
]


def _special(m, function):
    values = m.asarray([0.0, -0.0, 1.0, -1.0, 2.0, float("inf"), float("-inf"), float("nan"), 1e30, -1e30])
    return function(values)


# JAX's unsigned arithmetic wraps around; numpy's does too, so numpy is the reference.
_UNSIGNED = {
    "add": lambda m, x, y: m.add(x, y),
    "subtract": lambda m, x, y: m.subtract(x, y),
    "multiply": lambda m, x, y: m.multiply(x, y),
    "minimum maximum": lambda m, x, y: (m.minimum(x, y), m.maximum(x, y)),
    "floor_divide remainder": lambda m, x, y: (m.floor_divide(x, m.maximum(y, 1)), m.remainder(x, m.maximum(y, 1))),
    "negative positive": lambda m, x, y: (m.negative(x), m.positive(y)),
    "absolute sign": lambda m, x, y: (m.absolute(x), m.sign(x)),
    "square power": lambda m, x, y: (m.square(x), m.power(x, 3)),
}
_UNSIGNED_FLOAT_CLASS = lambda m, x: (m.isnan(x), m.isinf(x), m.isfinite(x))  # noqa: E731

# 8- and 16-bit integers: arithmetic wraps in the operand's dtype; sums and products of them
# accumulate in the default int (unsigned: uint32) as JAX's promote_integers.
_SMALL_INTS = {
    "arithmetic": (lambda m, x, y: (m.add(x, y), m.multiply(x, y), m.subtract(x, y), m.maximum(x, y)), 4),
    "bitwise": (lambda m, x, y: (m.bitwise_and(x, y), m.bitwise_xor(x, y), m.invert(x)), 3),
    "layout": (lambda m, x, y: (m.sort(x, axis=0), m.flip(y, 0), m.take(x, m.asarray([2, 0]), axis=0)), 3),
}
_SMALL_SUMS = lambda m, x: (m.sum(x, axis=1), m.prod(x, axis=0), m.max(x))  # noqa: E731

ARRAY_API = (
    [R(f"{name} {dtype}", function, inputs((f"{dtype}[3,4]", 0, 120), (f"{dtype}[4]", 0, 120)), (dtype,) * count)
     for dtype in ("i8", "i16", "u8", "u16") for name, (function, count) in _SMALL_INTS.items()]
    + [R(f"sum prod max {dtype}", _SMALL_SUMS, inputs((f"{dtype}[3,4]", 0, 9)),
         (("u32" if dtype[0] == "u" else "i32"),) * 2 + (dtype,),
         reference=lambda np, x, dtype=dtype: (np.sum(x, axis=1, dtype="uint32" if dtype[0] == "u" else "int32"),
                                               np.prod(x, axis=0, dtype="uint32" if dtype[0] == "u" else "int32"),
                                               np.max(x)))
       for dtype in ("i8", "i16", "u8", "u16")]
    +
    [R(f"{name} u32", function, inputs(("u32[3,4]", 0, 4_000_000_000), ("u32[4]", 0, 70_000)),
       ("u32", "u32") if " " in name else "u32")
     for name, function in _UNSIGNED.items()]
    + [R("isnan isinf isfinite u32", _UNSIGNED_FLOAT_CLASS, inputs("u32[5]"), ("bool",) * 3)]
    +
    [R(f"{name} f32", lambda m, x, name=name, numpy_name=numpy_name: getattr(m, name)(x), inputs(("f32[3,4]", *bounds)),
       "f32", reference=lambda np, x, numpy_name=numpy_name: getattr(np, numpy_name)(x), rtol=2e-6)
     for name, numpy_name, bounds in _ALIASES]
    + [
        R(f"{name} special values", lambda m, name=name: _special(m, getattr(m, name)), (), "f32",
          reference=lambda np, numpy_name=numpy_name: _special(np, getattr(np, numpy_name)).astype("float32"),
          rtol=2e-6)
        for name, numpy_name, _ in _ALIASES[3:]
    ]
    + [
        R("atan2", lambda m, x, y: m.atan2(x, y), inputs("f32[3,4]", "f32[4]"), "f32",
          reference=lambda np, x, y: np.arctan2(x, y)),
        R("pow", lambda m, x, y: m.pow(x, y), inputs(("f32[5]", 0.5, 2), "f32[5]"), "f32",
          reference=lambda np, x, y: np.power(x, y)),
        R("bitwise_invert", lambda m, x: m.bitwise_invert(x), inputs("i32[5]"), "i32",
          reference=lambda np, x: np.invert(x)),
        R("bitwise shifts", lambda m, x, y: (m.bitwise_left_shift(x, y), m.bitwise_right_shift(x, y)),
          inputs(("i32[6]", -100, 100), ("i32[6]", 0, 5)), ("i32", "i32"),
          reference=lambda np, x, y: (np.left_shift(x, y), np.right_shift(x, y))),
        R("signbit", lambda m: _special(m, m.signbit), (), "bool",
          reference=lambda np: _special(np, np.signbit)),
        R("signbit i32", lambda m, x: m.signbit(x), inputs("i32[6]"), "bool"),
        R("copysign", lambda m, x, y: m.copysign(x, y), inputs("f32[3,4]", "f32[4]"), "f32"),
        R("copysign of zeros", lambda m: m.copysign(1.0, m.asarray([0.0, -0.0, -2.0])), (), "f32",
          reference=lambda np: np.copysign(1.0, np.asarray([0.0, -0.0, -2.0], "float32"))),
        R("copysign i32 -> f32", lambda m, x, y: m.copysign(x, y), inputs("i32[4]", "i32[4]"), "f32",
          reference=lambda np, x, y: np.copysign(x, y).astype("float32")),
        R("hypot", lambda m, x, y: m.hypot(x, y), inputs(("f32[3,4]", -1e20, 1e20), "f32[4]"), "f32"),
        R("hypot special values", lambda m: _special(m, lambda v: m.hypot(v, v[::-1])), (), "f32",
          reference=lambda np: _special(np, lambda v: np.hypot(v, v[::-1])).astype("float32")),
        R("nextafter", lambda m, x, y: m.nextafter(x, y), inputs("f32[6]", "f32[6]"), "f32", rtol=0, atol=0),
        R("real imag conj", lambda m, x: (m.real(x), m.imag(x), m.conj(x)), inputs("f32[4]"), ("f32",) * 3),
        R("concat", lambda m, x, y: m.concat([x, y], axis=1), inputs("f32[2,3]", "i32[2,2]"), "f32",
          reference=lambda np, x, y: np.concatenate([x, y], axis=1)),
        R("concat axis None", lambda m, x, y: m.concat([x, y], axis=None), inputs("f32[2,3]", "f32[4]"), "f32",
          reference=lambda np, x, y: np.concatenate([x, y], axis=None)),
        R("permute_dims", lambda m, x: m.permute_dims(x, (2, 0, 1)), inputs("f32[2,3,4]"), "f32",
          reference=lambda np, x: np.transpose(x, (2, 0, 1))),
        R("unstack", lambda m, x: m.unstack(x, axis=1), inputs("f32[2,3]"), ("f32",) * 3,
          reference=lambda np, x: tuple(x[:, index] for index in range(3))),
        R("meshgrid xy", lambda m, x, y, z: m.meshgrid(x, y, z), inputs("f32[2]", "i32[3]", "f32[4]"), ("f32", "i32", "f32")),
        R("meshgrid ij sparse", lambda m, x, y: m.meshgrid(x, y, indexing="ij", sparse=True), inputs("f32[2]", "f32[3]"),
          ("f32", "f32")),
        R("astype", lambda m, x: m.astype(x, m.int32), inputs(("f32[5]", -9, 9)), "i32",
          reference=lambda np, x: x.astype(np.int32)),
        R("count_nonzero", lambda m, x: m.count_nonzero(x, axis=1, keepdims=True), inputs(("i32[3,4]", 0, 1)), "i32",
          reference=lambda np, x: np.count_nonzero(x, axis=1, keepdims=True)),
        R("cumulative_sum include_initial", lambda m, x: m.cumulative_sum(x, axis=0, include_initial=True),
          inputs("i32[3,2]"), "i32",
          reference=lambda np, x: np.concatenate([np.zeros((1, 2), x.dtype), np.cumsum(x, axis=0)])),
        R("cumulative_prod 1-d", lambda m, x: m.cumulative_prod(x), inputs(("f32[5]", 0.5, 2)), "f32",
          reference=lambda np, x: np.cumprod(x)),
        R("vecdot", lambda m, x, y: m.vecdot(x, y, axis=0), inputs("f32[3,4]", "f32[3,1]"), "f32",
          reference=lambda np, x, y: np.sum(x * y, axis=0)),
        R("std var correction", lambda m, x: (m.std(x, correction=1), m.var(x, axis=0, correction=1.5)),
          inputs("f32[4,3]"), ("f32", "f32"),
          reference=lambda np, x: (np.std(x, ddof=1), np.var(x, axis=0, ddof=1.5))),
        R("nonzero size", lambda m, x: m.nonzero(x, size=8, fill_value=-1), inputs(("i32[3,4]", 0, 1)), ("i32", "i32"),
          reference=lambda np, x: tuple(np.concatenate([p, np.full(8, -1)])[:8] for p in np.nonzero(x))),
        R("repeat counts", lambda m, x: m.repeat(x, _COUNTS, axis=1), inputs("f32[2,3]"), "f32",
          reference=lambda np, x: np.repeat(x, _COUNTS, axis=1)),
    ]
)
