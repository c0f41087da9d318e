"""Differential records of meshjit.numpy's reductions, scans, sorting and array methods: axes
(None, int, negative, tuples), keepdims, ddof, result dtypes, 0-d and size-0 operands."""

from __future__ import annotations

from numpy_record import Record, inputs

R = Record
F = "f32[3,4,5]"


def _reduce(name: str, axis, keepdims: bool):
    return lambda m, x: getattr(m, name)(x, axis=axis, keepdims=keepdims)


REDUCTIONS = [
    R(
        f"{name} axis {axis!r} keepdims {keep}",
        _reduce(name, axis, keep),
        inputs(F),
        "f32",
        rtol=1e-4,
        atol=1e-5,
    )
    for name in ("sum", "mean", "max", "min", "prod", "var", "std")
    for axis, keep in (
        (None, False),
        (1, False),
        (-1, True),
        ((0, 2), False),
        ((-3, -1), True),
        ((), False),
    )
] + [
    R("sum i32", lambda m, x: m.sum(x, axis=0), inputs("i32[4,3]"), "i32"),
    R(
        "sum bool -> i32",
        lambda m, x: (m.sum(x), m.sum(x, axis=1)),
        inputs("bool[4,3]"),
        ("i32", "i32"),
    ),
    R("sum dtype argument", lambda m, x: m.sum(x, dtype=m.int32), inputs(("f32[5]", 0, 3)), "i32"),
    R(
        "sum of size 0",
        lambda m, x: (m.sum(x, axis=0), m.prod(x, axis=0)),
        inputs("f32[0,3]"),
        ("f32", "f32"),
    ),
    R("sum 0-d", lambda m, x: (m.sum(x), m.max(x), m.mean(x)), inputs("f32[]"), ("f32",) * 3),
    R("prod i32", lambda m, x: m.prod(x, axis=1), inputs(("i32[3,4]", -3, 3)), "i32"),
    R("prod bool -> i32", lambda m, x: m.prod(x, axis=0), inputs("bool[3,2]"), "i32"),
    R("mean i32 -> f32", lambda m, x: m.mean(x, axis=1), inputs("i32[3,4]"), "f32"),
    R("mean bool -> f32", lambda m, x: m.mean(x), inputs("bool[7]"), "f32"),
    R("mean of size 0 is nan", lambda m, x: m.mean(x, axis=0), inputs("f32[0,3]"), "f32"),
    R(
        "var ddof",
        lambda m, x: (m.var(x, axis=0, ddof=1), m.std(x, ddof=1)),
        inputs("f32[5,3]"),
        ("f32", "f32"),
        rtol=1e-4,
    ),
    R("var i32 -> f32", lambda m, x: m.var(x), inputs("i32[6]"), "f32", rtol=1e-5),
    R(
        "max min i32",
        lambda m, x: (m.max(x, axis=1), m.min(x, axis=-1, keepdims=True)),
        inputs("i32[3,4]"),
        ("i32", "i32"),
    ),
    R(
        "max min bool",
        lambda m, x: (m.max(x, axis=1), m.min(x, axis=1)),
        inputs("bool[4,3]"),
        ("bool", "bool"),
    ),
    R(
        "max with initial on size 0",
        lambda m, x: m.max(x, axis=0, initial=-1.0),
        inputs("f32[0,3]"),
        "f32",
    ),
    R(
        "max nan propagates",
        lambda m: m.max(m.asarray([1.0, m.nan, 3.0])),
        (),
        "f32",
        reference=lambda np: np.nan,
    ),
    R(
        "all any",
        lambda m, x: (m.all(x, axis=0), m.any(x, axis=-1, keepdims=True), m.all(x), m.any(x)),
        inputs("bool[4,3]"),
        ("bool",) * 4,
    ),
    R(
        "all any numeric",
        lambda m, x: (m.all(x), m.any(x, axis=0)),
        inputs(("i32[3,2]", 0, 2)),
        ("bool", "bool"),
    ),
    R(
        "all any of size 0",
        lambda m, x: (m.all(x, axis=0), m.any(x, axis=0)),
        inputs("bool[0,2]"),
        ("bool", "bool"),
    ),
    R(
        "argmax argmin",
        lambda m, x: (m.argmax(x, axis=1), m.argmin(x, axis=-1), m.argmax(x), m.argmin(x, axis=0)),
        inputs("f32[3,4]"),
        ("i32",) * 4,
    ),
    R(
        "argmax keepdims",
        lambda m, x: (m.argmax(x, axis=0, keepdims=True), m.argmin(x, keepdims=True)),
        inputs("i32[3,4]"),
        ("i32", "i32"),
    ),
    R("argmax first of ties", lambda m, x: m.argmax(x, axis=1), inputs(("i32[4,5]", 0, 1)), "i32"),
    R(
        "argmax nan first",
        lambda m: m.argmax(m.asarray([1.0, m.nan, 5.0, m.nan])),
        (),
        "i32",
        reference=lambda np: 1,
    ),
    R(
        "cumsum",
        lambda m, x: (m.cumsum(x, axis=1), m.cumsum(x), m.cumsum(x, axis=-2)),
        inputs("f32[3,4]"),
        ("f32",) * 3,
    ),
    R(
        "cumsum ints and bools",
        lambda m, x, b: (m.cumsum(x, axis=0), m.cumsum(b)),
        inputs("i32[4,2]", "bool[5]"),
        ("i32", "i32"),
    ),
    R("cumsum dtype", lambda m, x: m.cumsum(x, dtype=m.float32), inputs("i32[5]"), "f32"),
    R("cumprod", lambda m, x: m.cumprod(x, axis=0), inputs(("f32[4,3]", 0.5, 1.5)), "f32"),
    R(
        "sort",
        lambda m, x: (m.sort(x), m.sort(x, axis=0), m.sort(x, axis=None)),
        inputs("f32[3,5]"),
        ("f32",) * 3,
    ),
    R(
        "sort ints bools",
        lambda m, x, b: (m.sort(x), m.sort(b)),
        inputs("i32[6]", "bool[6]"),
        ("i32", "bool"),
    ),
    R(
        "sort nans last",
        lambda m: m.sort(m.asarray([3.0, m.nan, -1.0, 2.0])),
        (),
        "f32",
        reference=lambda np: np.array([-1.0, 2.0, 3.0, np.nan]),
    ),
    R(
        "argsort stable",
        lambda m, x: (m.argsort(x), m.argsort(x, axis=0)),
        inputs(("i32[4,6]", 0, 2)),
        ("i32", "i32"),
        reference=lambda np, x: (
            np.argsort(x, kind="stable"),
            np.argsort(x, axis=0, kind="stable"),
        ),
    ),
    # -- isclose allclose array_equal (JAX 0.10.2 gives the same values on these)
    R(
        "isclose tolerances and broadcasting",
        lambda m, x, y: (
            m.isclose(x, y),
            m.isclose(x, m.add(x, 1e-6)),
            m.isclose(x, m.add(x, 0.1), atol=0.2),
            m.isclose(x, m.add(x, 0.1), rtol=0.5, atol=0.0),
            m.isclose(y, x),
        ),
        inputs(("f32[3,4]", 1.0, 2.0), ("f32[4]", 1.0, 2.0)),
        ("bool",) * 5,
    ),
    R(
        "isclose nans and infinities",
        lambda m: (
            m.isclose(m.asarray([1.0, m.nan, m.inf, -m.inf, m.inf]), m.asarray([1.0, m.nan, m.inf, -m.inf, -m.inf])),
            m.isclose(m.asarray([m.nan, 1.0, m.inf]), m.asarray([m.nan, m.nan, 1e30]), equal_nan=True),
        ),
        (),
        ("bool", "bool"),
    ),
    R(
        "isclose ints bools scalars",
        lambda m, i, b: (m.isclose(i, m.add(i, 1)), m.isclose(b, True), m.isclose(i, 2.0), m.isclose(1.0, 1.0)),
        inputs(("i32[5]", 0, 3), "bool[5]"),
        ("bool",) * 4,
    ),
    R(
        "isclose ints compare as f32",
        lambda m: m.isclose(m.asarray([2**30]), m.asarray([2**30 + 1])),
        (),
        "bool",
        reference=lambda np: np.array([True]),
    ),
    R(
        "allclose",
        lambda m, x: (
            m.allclose(x, x),
            m.allclose(x, m.add(x, 1.0)),
            m.allclose(x, m.add(x, 1.0), atol=2.0),
            m.allclose(m.asarray([1.0, m.nan]), m.asarray([1.0, m.nan])),
            m.allclose(m.asarray([1.0, m.nan]), m.asarray([1.0, m.nan]), equal_nan=True),
        ),
        inputs("f32[3,4]"),
        ("bool",) * 5,
    ),
    R("allclose of size 0", lambda m, x: m.allclose(x, x), inputs("f32[0,2]"), "bool"),
    R(
        "array_equal",
        lambda m, x, y, i: (
            m.array_equal(x, x),
            m.array_equal(x, y),
            m.array_equal(x, m.reshape(x, (1, 12))),
            m.array_equal(i, m.asarray(i, dtype=m.float32)),
            m.array_equal(m.asarray([1.0, m.nan]), m.asarray([1.0, m.nan])),
            m.array_equal(m.asarray([1.0, m.nan]), m.asarray([1.0, m.nan]), equal_nan=True),
            m.array_equal(i, i, equal_nan=True),
            m.array_equal(1, 1.0),
        ),
        inputs("f32[3,4]", "f32[4]", "i32[5]"),
        ("bool",) * 8,
    ),
    R(
        "copy",
        lambda m, x, i, b: (m.copy(x), m.copy(i), m.copy(b), m.copy(x, order="K")),
        inputs("f32[3,4]", "i32[5]", "bool[2]"),
        ("f32", "i32", "bool", "f32"),
    ),
    R("copy of a Python scalar", lambda m: m.copy(2.0), (), "f32", reference=lambda np: np.float32(2.0)),
    # -- x64 on
    R("x64: sum i32 -> i64", lambda m, x: m.sum(x), inputs("i32[5]"), "i64", x64=True),
    R("x64: sum bool -> i64", lambda m, x: m.sum(x), inputs("bool[5]"), "i64", x64=True),
    R("x64: mean i32 -> f32", lambda m, x: m.mean(x), inputs("i32[5]"), "f32", x64=True),
    R("x64: mean i64 -> f64", lambda m, x: m.mean(x), inputs("i64[5]"), "f64", x64=True),
    R("x64: argmax -> i64", lambda m, x: m.argmax(x), inputs("f32[5]"), "i64", x64=True),
    R("x64: cumsum i32 stays i32", lambda m, x: m.cumsum(x), inputs("i32[5]"), "i32", x64=True),
    R(
        "x64: isclose f64 and i64",
        lambda m, x, i: (m.isclose(x, m.add(x, 1e-9)), m.isclose(i, i), m.allclose(x, x), m.copy(x)),
        inputs("f64[4]", "i64[3]"),
        ("bool", "bool", "bool", "f64"),
        x64=True,
    ),
    # -- methods
    R(
        "methods reductions",
        lambda m, x: (
            x.sum(),
            x.sum(axis=0),
            x.mean(axis=1, keepdims=True),
            x.max(axis=-1),
            x.min(),
            x.prod(axis=0),
            x.var(),
            x.std(axis=0),
            x.argmax(axis=1),
            x.argmin(),
            x.cumsum(axis=1),
        ),
        inputs("f32[3,4]"),
        ("f32",) * 8 + ("i32", "i32", "f32"),
        operators=True,
        rtol=1e-4,
    ),
    R(
        "methods all any sort",
        lambda m, x: (x.all(axis=0), x.any(), x.sort(axis=0), x.argsort(axis=1)),
        inputs(("i32[3,4]", 0, 2)),
        ("bool", "bool", "i32", "i32"),
        operators=True,
        reference=lambda np, x: (
            x.all(axis=0),
            x.any(),
            np.sort(x, axis=0),
            np.argsort(x, axis=1, kind="stable"),
        ),
    ),
]
