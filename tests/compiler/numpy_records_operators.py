"""Differential records of promotion with x64 on, and of Python operators on meshjit arrays."""

from __future__ import annotations

from numpy_record import Record, inputs

R = Record
F = "f32[3,4]"

PROMOTION_AND_OPERATORS = [
    R(
        "x64: i32 + weak float -> f64",
        lambda m, x: m.add(x, 1.5),
        inputs("i32[3]"),
        "f64",
        x64=True,
    ),
    R(
        "x64: f32 + weak float stays f32",
        lambda m, x: m.add(x, 1.5),
        inputs("f32[3]"),
        "f32",
        x64=True,
    ),
    R(
        "x64: i64 * f32 -> f32",
        lambda m, x, y: m.multiply(x, y),
        inputs("i64[3]", "f32[3]"),
        "f32",
        x64=True,
    ),
    R(
        "x64: i32 + i64 -> i64",
        lambda m, x, y: m.add(x, y),
        inputs("i32[3]", "i64[3]"),
        "i64",
        x64=True,
    ),
    R(
        "x64: sqrt i32 -> f32",
        lambda m, x: m.sqrt(x),
        inputs(("i32[3]", 0, 9)),
        "f32",
        x64=True,
    ),
    R(
        "x64: sqrt i64 -> f64",
        lambda m, x: m.sqrt(x),
        inputs(("i64[3]", 0, 9)),
        "f64",
        x64=True,
    ),
    R(
        "x64: i32 / i32 -> f32",
        lambda m, x, y: m.divide(x, y),
        inputs("i32[3]", ("i32[3]", 1, 3)),
        "f32",
        x64=True,
    ),
    R("x64: f64 exp", lambda m, x: m.exp(x), inputs("f64[3]"), "f64", x64=True),
    R("x64: weak weak", lambda m: m.add(1, 2.5), (), "f64", reference=lambda np: 3.5, x64=True),
    # -- Python operators
    R(
        "operators arithmetic",
        lambda m, x, y: (x + y, x - y, x * y, x / y, -x, +x, abs(x), x**2, 2**y),
        inputs(F, ("f32[4]", 0.5, 2)),
        ("f32",) * 9,
        operators=True,
    ),
    R(
        "operators reflected scalars",
        lambda m, x: (1 + x, 1 - x, 2 * x, 1 / x, 7 // x, 7 % x, 2.0**x),
        inputs(("f32[3,4]", 0.5, 3)),
        ("f32",) * 7,
        operators=True,
    ),
    R(
        "operators ints",
        lambda m, x, y: (x // y, x % y, x & y, x | y, x ^ y, ~x, x << 2, x >> 1, divmod(x, y)),
        inputs(("i32[6]", -9, 9), ("i32[6]", 1, 4)),
        ("i32",) * 10,
        operators=True,
    ),
    R(
        "operators comparisons",
        lambda m, x, y: (x == y, x != y, x < y, x <= y, x > y, x >= y),
        inputs(("i32[6]", 0, 2), ("i32[6]", 0, 2)),
        ("bool",) * 6,
        operators=True,
    ),
    R(
        "operators matmul",
        lambda m, x, y: x @ y,
        inputs("f32[3,4]", "f32[4,2]"),
        "f32",
        operators=True,
    ),
]
