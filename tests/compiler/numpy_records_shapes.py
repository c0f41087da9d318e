"""Differential records of meshjit.numpy's shape functions and array creation."""

from __future__ import annotations

from numpy_record import Record, inputs

R = Record

SHAPES = [
    R(
        "reshape -1",
        lambda m, x: (m.reshape(x, (4, -1)), m.reshape(x, -1), m.reshape(x, (2, 2, 3))),
        inputs("f32[3,4]"),
        ("f32",) * 3,
    ),
    R("reshape order F", lambda m, x: m.reshape(x, (2, 6), order="F"), inputs("i32[3,4]"), "i32"),
    R(
        "reshape size 0 and 0-d",
        lambda m, x, s: (m.reshape(x, (2, 0, 4)), m.reshape(s, (1, 1))),
        inputs("f32[0,4]", "f32[]"),
        ("f32", "f32"),
    ),
    R(
        "ravel",
        lambda m, x: (m.ravel(x), m.ravel(x, order="F")),
        inputs("f32[2,3]"),
        ("f32", "f32"),
    ),
    R(
        "transpose",
        lambda m, x: (m.transpose(x), m.transpose(x, (1, 0, 2)), m.transpose(x, (-1, 0, 1))),
        inputs("f32[2,3,4]"),
        ("f32",) * 3,
    ),
    R(
        "swapaxes moveaxis",
        lambda m, x: (m.swapaxes(x, 0, -1), m.moveaxis(x, 0, -1), m.moveaxis(x, (0, 1), (-1, 0))),
        inputs("f32[2,3,4]"),
        ("f32",) * 3,
    ),
    R(
        "expand_dims",
        lambda m, x: (m.expand_dims(x, 0), m.expand_dims(x, -1), m.expand_dims(x, (0, 3))),
        inputs("f32[2,3]"),
        ("f32",) * 3,
    ),
    R(
        "squeeze",
        lambda m, x: (m.squeeze(x), m.squeeze(x, axis=0), m.squeeze(x, axis=(0, -1))),
        inputs("f32[1,3,1]"),
        ("f32",) * 3,
    ),
    R(
        "broadcast_to",
        lambda m, x: (m.broadcast_to(x, (2, 3, 4)), m.broadcast_to(x, (3, 4))),
        inputs("f32[3,1]"),
        ("f32", "f32"),
    ),
    R(
        "broadcast_arrays",
        lambda m, x, y: tuple(m.broadcast_arrays(x, y)),
        inputs("f32[3,1]", "i32[4]"),
        ("f32", "i32"),
    ),
    R(
        "concatenate",
        lambda m, x, y: (
            m.concatenate([x, y]),
            m.concatenate([x, x], axis=-1),
            m.concatenate([x, y], axis=None),
        ),
        inputs("f32[2,3]", "f32[1,3]"),
        ("f32",) * 3,
    ),
    R(
        "concatenate promotes",
        lambda m, x, y: m.concatenate([x, y]),
        inputs("i32[2]", "f32[3]"),
        "f32",
    ),
    R(
        "concatenate size 0",
        lambda m, x, y: m.concatenate([x, y], axis=0),
        inputs("f32[0,3]", "f32[2,3]"),
        "f32",
    ),
    R(
        "stack",
        lambda m, x, y: (m.stack([x, y]), m.stack([x, y], axis=1), m.stack([x, y], axis=-1)),
        inputs("f32[2,3]", "f32[2,3]"),
        ("f32",) * 3,
    ),
    R("stack promotes", lambda m, x, y: m.stack([x, y]), inputs("bool[2]", "i32[2]"), "i32"),
    R(
        "split sections",
        lambda m, x: tuple(m.split(x, 3, axis=1)),
        inputs("f32[2,6]"),
        ("f32",) * 3,
    ),
    R(
        "split indices",
        lambda m, x: tuple(m.split(x, [1, 4, 4, -1])),
        inputs("f32[6,2]"),
        ("f32",) * 5,
    ),
    R("flip", lambda m, x: (m.flip(x), m.flip(x, axis=1)), inputs("f32[2,3]"), ("f32", "f32")),
    R(
        "repeat tile",
        lambda m, x: (m.repeat(x, 2, axis=0), m.repeat(x, 3), m.tile(x, (2, 1)), m.tile(x, 2)),
        inputs("i32[2,3]"),
        ("i32",) * 4,
    ),
    R(
        "tril triu",
        lambda m, x: (m.tril(x), m.triu(x, k=1), m.tril(x, k=-1)),
        inputs("f32[2,3,4]"),
        ("f32",) * 3,
    ),
    R(
        "methods shapes",
        lambda m, x: (
            x.reshape(4, 3),
            x.reshape((2, -1)),
            x.T,
            x.transpose(),
            x.transpose(1, 0),
            x.swapaxes(0, 1),
            x.ravel(),
            x.flatten(),
            x.astype(m.int32),
            x[None].squeeze(0),
            x.mT,
        ),
        inputs("f32[3,4]"),
        ("f32",) * 8 + ("i32", "f32", "f32"),
        operators=True,
        reference=lambda np, x: (
            x.reshape(4, 3),
            x.reshape((2, -1)),
            x.T,
            x.T,
            x.T,
            x.T,
            x.ravel(),
            x.ravel(),
            x.astype(np.int32),
            x,
            x.T,
        ),
    ),
]

CREATION = [
    R(
        "zeros ones full",
        lambda m: (
            m.zeros((2, 3)),
            m.ones(4, dtype=m.int32),
            m.full((2,), 7),
            m.full((2, 2), 1.5),
            m.full(3, True),
        ),
        (),
        ("f32", "i32", "i32", "f32", "bool"),
    ),
    R("full with array fill", lambda m, x: m.full((2, 3), x), inputs("i32[3]"), "i32"),
    R(
        "like",
        lambda m, x: (
            m.zeros_like(x),
            m.ones_like(x),
            m.full_like(x, 3),
            m.ones_like(x, dtype=m.float32),
        ),
        inputs("i32[2,3]"),
        ("i32", "i32", "i32", "f32"),
    ),
    R(
        "arange",
        lambda m: (
            m.arange(5),
            m.arange(2, 9, 3),
            m.arange(5, 0, -2),
            m.arange(0.0, 1.0, 0.25),
            m.arange(3, dtype=m.float32),
            m.arange(0),
        ),
        (),
        ("i32", "i32", "i32", "f32", "f32", "i32"),
    ),
    R(
        "linspace",
        lambda m: (
            m.linspace(0, 1, 5),
            m.linspace(2, 3, 4, endpoint=False),
            m.linspace(-1, 1, 1),
            m.linspace(0, 10, 4, dtype=m.int32),
        ),
        (),
        ("f32", "f32", "f32", "i32"),
    ),
    R(
        "linspace traced bounds",
        lambda m, x: (m.linspace(x[0], x[1], 5), *m.linspace(x[1], 3, 4, retstep=True)),
        inputs("f32[2]"),
        ("f32",) * 3,
        operators=True,
        reference=lambda np, x: (
            np.linspace(x[0], x[1], 5),
            *np.linspace(x[1], 3, 4, retstep=True),
        ),
    ),
    R(
        "eye tri",
        lambda m: (m.eye(3), m.eye(3, 4, k=1), m.eye(2, dtype=m.int32), m.tri(3, 2, k=0)),
        (),
        ("f32", "f32", "i32", "f32"),
    ),
    R(
        "array asarray",
        lambda m, x: (
            m.array([1, 2, 3]),
            m.array([[1.0, 2.0]]),
            m.asarray(x),
            m.array(x, dtype=m.int32),
            m.array(2.5),
            m.array(x, ndmin=3),
        ),
        inputs("f32[2]"),
        ("i32", "f32", "f32", "i32", "f32", "f32"),
    ),
    R(
        "array of traced values stacks",
        lambda m, x: m.array([x, x + 1]),
        inputs("f32[2]"),
        "f32",
        operators=True,
    ),
    R(
        "x64: creation defaults",
        lambda m: (m.zeros(2), m.arange(3), m.full(2, 1.5), m.eye(2)),
        (),
        ("f64", "i64", "f64", "f64"),
        x64=True,
    ),
    R("x64: float32 argument", lambda m: m.zeros(2, dtype=m.float32), (), "f32", x64=True),
]
