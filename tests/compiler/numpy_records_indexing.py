"""Differential records of meshjit.numpy's indexing, take and products (matmul, dot, einsum)."""

from __future__ import annotations

import numpy as np
from numpy_record import Record, inputs

R = Record

INDEXING = [
    R(
        "basic indexing",
        lambda m, x: (
            x[1],
            x[-1],
            x[0, 2],
            x[1:],
            x[:, ::2],
            x[::-1],
            x[:, -2::-2],
            x[..., 1],
            x[None],
            x[:, None, 1],
            x[..., None],
            x[1, ..., None],
            x[5:],
            x[::-3, 1:3],
        ),
        inputs("f32[4,5]"),
        ("f32",) * 14,
        operators=True,
    ),
    R(
        "0-d and size 0 indexing",
        lambda m, x, e: (x[()], x[None], e[:, 1], e[1:]),
        inputs("f32[]", "f32[0,3]"),
        ("f32",) * 4,
        operators=True,
    ),
    R(
        "integer array indexing",
        lambda m, x: (
            x[m.asarray([2, 0, 2])],
            x[:, m.asarray([[1], [-1]])],
            x[m.asarray([0, 1]), m.asarray([2, 3])],
            x[m.asarray([[0], [2]]), m.asarray([1, 2, 3])],
        ),
        inputs("f32[3,4]"),
        ("f32",) * 4,
        operators=True,
    ),
    R(
        "advanced placement",
        lambda m, x: (
            x[:, m.asarray([0, 1]), m.asarray([1, 2])],
            x[m.asarray([0, 1]), :, m.asarray([1, 2])],
            x[1, :, m.asarray([0, 3])],
            x[:, 1, m.asarray([0, 3])],
            x[m.asarray([0, 1]), None, :, m.asarray([1, 2])],
            x[None, m.asarray([0, 1]), m.asarray([1, 0])],
            x[m.asarray([1]), 1:, ::-1],
        ),
        inputs("f32[2,3,4]"),
        ("f32",) * 7,
        operators=True,
    ),
    R(
        "traced integer indices",
        lambda m, x, i: (x[i], x[:, i], x[i, i], x[i[0]]),
        inputs("f32[4,4]", ("i32[3]", -4, 3)),
        ("f32",) * 4,
        operators=True,
    ),
    R("list index", lambda m, x: x[[1, 0]], inputs("f32[3,2]"), "f32", operators=True),
    R(
        "concrete bool mask",
        lambda m, x: (
            x[np.array([True, False, True])],
            x[:, np.array([False, True])],
            x[np.array([[True, False], [False, True], [True, True]])],
        ),
        inputs("f32[3,2]"),
        ("f32", "f32", "f32"),
        operators=True,
    ),
    R(
        "out of range array indices clamp",
        lambda m, x: x[m.asarray([-1, 7, -9])],
        inputs("i32[5]"),
        "i32",
        operators=True,
        reference=lambda np, x: x[[4, 4, 0]],
    ),
    R(
        "take",
        lambda m, x, i: (
            m.take(x, i),
            m.take(x, i, axis=1),
            m.take(x, i, axis=0, mode="clip"),
            m.take(x, i, axis=-1, mode="wrap"),
        ),
        inputs("f32[4,5]", ("i32[2,3]", -4, 3)),
        ("f32",) * 4,
        reference=lambda np, x, i: (
            np.take(x, i),
            np.take(x, i, axis=1),
            np.take(x, i, axis=0, mode="clip"),
            np.take(x, i, axis=-1, mode="wrap"),
        ),
    ),
    R(
        "take fills out of range",
        lambda m, x: (m.take(x, m.asarray([-1, 7])), m.take(x, m.asarray([9, 1]), fill_value=-1)),
        inputs("i32[5]"),
        ("i32", "i32"),
        reference=lambda np, x: (np.array([x[4], np.iinfo(np.int32).min]), np.array([-1, x[1]])),
    ),
    R(
        "take_along_axis",
        lambda m, x, i: (m.take_along_axis(x, i, axis=1), m.take_along_axis(x, i[:2, :1], axis=0)),
        inputs("f32[3,4]", ("i32[3,2]", 0, 2)),
        ("f32", "f32"),
    ),
    R(
        "take_along_axis out of range",
        lambda m, x: (
            m.take_along_axis(x, m.asarray([[5], [-1], [0]]), axis=1),
            m.take_along_axis(x, m.asarray([[5], [-1], [0]]), axis=1, mode="clip"),
            m.take_along_axis(x, m.asarray([[5, 1]]), axis=-1, fill_value=-1.0),
        ),
        inputs("f32[3,4]"),
        ("f32",) * 3,
        reference=lambda np, x: (
            np.array([[np.nan], [x[1, 3]], [x[2, 0]]]),
            np.array([[x[0, 3]], [x[1, 3]], [x[2, 0]]]),
            np.array([[-1.0, x[0, 1]], [-1.0, x[1, 1]], [-1.0, x[2, 1]]]),
        ),
    ),
    R(
        "at set, add, multiply, min, max (repeated and dropped indices)",
        lambda m, x, u: (
            x.at[m.asarray([2, 0, 2, 7])].set(u),
            x.at[m.asarray([2, 0, 2, 7])].add(u),
            x.at[m.asarray([2, 0, 2, -1])].multiply(u),
            x.at[m.asarray([2, 0, 2, -5])].min(u),
            x.at[m.asarray([2, 0, 2, 1])].max(u),
            x.at[m.asarray([[1], [-2]]), m.asarray([0, 2])].subtract(2.0),
            x.at[m.asarray([2, 0, 2, 7])].set(u, mode="clip"),
        ),
        inputs("f32[4,3]", "f32[4,3]"),
        ("f32",) * 7,
        reference=lambda np_, x, u: (
            _numpy_at(x, [2, 0, 2], u[:3], lambda r, i, v: r.__setitem__(i, v)),
            _numpy_at(x, [2, 0, 2], u[:3], np_.add.at),
            _numpy_at(x, [2, 0, 2, 3], u, np_.multiply.at),
            _numpy_at(x, [2, 0, 2], u[:3], np_.minimum.at),
            _numpy_at(x, [2, 0, 2, 1], u, np_.maximum.at),
            _numpy_at(x, ([1, 1, 2, 2], [0, 2, 0, 2]), -2.0, np_.add.at),
            _numpy_at(x, [2, 0, 2, 3], u, lambda r, i, v: r.__setitem__(i, v)),
        ),
        operators=True,
    ),
    R(
        "at with slices, ints, None, Ellipsis and masks",
        lambda m, x: (
            x.at[1:3, ::2].set(1.0),
            x.at[::-1, 0].add(m.arange(4.0)),
            x.at[None, 1].set(2.0),
            x.at[..., -1].multiply(3.0),
            x.at[1].apply(m.sin),
            x.at[np.asarray([True, False, True, False])].set(-1.0),
            x.at[1:, m.asarray([0, 0, 4])].add(1.0),
            x.at[m.asarray([0, 0, 3])].apply(lambda v: v * 2.0 + 1.0),
            x.at[2].divide(4.0),
            x.at[m.asarray([1, 1])].power(2.0),
        ),
        inputs("f32[4,5]"),
        ("f32",) * 10,
        reference=lambda np_, x: (
            _numpy_at(x, (slice(1, 3), slice(None, None, 2)), 1.0, lambda r, i, v: r.__setitem__(i, v)),
            _numpy_at(x, (slice(None, None, -1), 0), np_.arange(4.0), np_.add.at),
            _numpy_at(x, 1, 2.0, lambda r, i, v: r.__setitem__(i, v)),
            _numpy_at(x, (Ellipsis, -1), 3.0, np_.multiply.at),
            _numpy_at(x, 1, np_.sin(x[1]), lambda r, i, v: r.__setitem__(i, v)),
            _numpy_at(x, [0, 2], -1.0, lambda r, i, v: r.__setitem__(i, v)),
            _numpy_at(x, (slice(1, None), [0, 0, 4]), 1.0, np_.add.at),
            _numpy_at(x, [0, 3], np_.stack([(x[0] * 2 + 1) * 2 + 1, x[3] * 2 + 1]),
                      lambda r, i, v: r.__setitem__(i, v)),
            _numpy_at(x, 2, x[2] / 4.0, lambda r, i, v: r.__setitem__(i, v)),
            _numpy_at(x, 1, x[1] ** 4.0, lambda r, i, v: r.__setitem__(i, v)),
        ),
        operators=True,
    ),
    R(
        "at get modes",
        lambda m, x: (
            x.at[m.asarray([1, 7, -1])].get(),
            x.at[m.asarray([1, 7, -1])].get(mode="fill", fill_value=-3.0),
            x.at[9].get(mode="fill", fill_value=5.0),
        ),
        inputs("f32[4]"),
        ("f32",) * 3,
        reference=lambda np_, x: (x[[1, 3, 3]], np_.where([True, False, True], x[[1, 0, 3]], -3.0).astype(x.dtype),
                                  np_.float32(5.0)),
        operators=True,
    ),
    R(
        "pad modes",
        lambda m, x: (
            m.pad(x, ((1, 2), (0, 3))),
            m.pad(x, 2, constant_values=((1.0, 2.0), (3.0, 4.0))),
            m.pad(x, ((2, 1), (5, 0)), mode="edge"),
            m.pad(x, ((4, 1), (6, 2)), mode="wrap"),
            m.pad(x, ((3, 5), (2, 1)), mode="reflect"),
            m.pad(x, ((3, 5), (2, 1)), mode="symmetric"),
            m.pad(x, ((3, 5), (2, 1)), mode="reflect", reflect_type="odd"),
            m.pad(x, ((1, 2), (2, 2)), mode="linear_ramp", end_values=((1.0, -1.0), (0.0, 5.0))),
            m.pad(x, ((1, 2), (2, 2)), mode="maximum", stat_length=2),
            m.pad(x, ((1, 2), (2, 2)), mode="mean"),
        ),
        inputs("f32[3,4]"),
        ("f32",) * 10,
    ),
    R(
        "roll, diff, put_along_axis",
        lambda m, x, i: (
            m.roll(x, 1, axis=0),
            m.roll(x, (-2, 7), axis=(0, 1)),
            m.roll(x, 5),
            m.diff(x),
            m.diff(x, n=2, axis=0, prepend=1.5),
            m.diff(x > 0, append=m.asarray([[True], [False], [True]])),
            m.put_along_axis(x, i, -1.0, 1, inplace=False) if m is not np else _put(x, i, -1.0),
        ),
        inputs("f32[3,4]", ("i32[3,2]", 0, 3)),
        ("f32", "f32", "f32", "f32", "f32", "bool", "f32"),
    ),
    R(
        "searchsorted, convolve, correlate",
        lambda m, a, v, x, w: (
            m.searchsorted(m.sort(a), v),
            m.searchsorted(m.sort(a), v, side="right"),
            m.convolve(x, w),
            m.convolve(w, x, mode="same"),
            m.correlate(x, w, mode="valid"),
            m.correlate(w, x, mode="full"),
        ),
        inputs(("i32[9]", -3, 3), ("i32[5]", -4, 4), "f32[9]", "f32[4]"),
        ("i32", "i32", "f32", "f32", "f32", "f32"),
    ),
    R(
        "sort and argsort descending, stable",
        lambda m, x: (m.sort(x, axis=0, descending=True), m.argsort(x, axis=1, descending=True),
                      m.argsort(x, axis=None, stable=True)),
        inputs(("i32[4,6]", -2, 2)),
        ("i32", "i32", "i32"),
        reference=lambda np_, x: (np_.sort(x, axis=0)[::-1], _stable_descending(x), np_.argsort(x, axis=None,
                                                                                              kind="stable")),
    ),
]

PRODUCTS = [
    R("matmul 2d", lambda m, x, y: m.matmul(x, y), inputs("f32[3,4]", "f32[4,5]"), "f32"),
    R(
        "matmul vectors",
        lambda m, x, y, v: (m.matmul(v, y), m.matmul(x, v), m.matmul(v, v)),
        inputs("f32[3,4]", "f32[4,5]", "f32[4]"),
        ("f32",) * 3,
    ),
    R(
        "matmul batch broadcast",
        lambda m, x, y: (m.matmul(x, y), m.matmul(y[0], x)),
        inputs("f32[2,1,3,4]", "f32[5,4,3]"),
        ("f32", "f32"),
    ),
    R(
        "matmul batch vector",
        lambda m, x, v: (m.matmul(x, v), m.matmul(v, m.swapaxes(x, -1, -2))),
        inputs("f32[2,3,4]", "f32[4]"),
        ("f32", "f32"),
    ),
    R("matmul promotes", lambda m, x, y: m.matmul(x, y), inputs("i32[2,3]", "f32[3,2]"), "f32"),
    R("matmul ints", lambda m, x, y: m.matmul(x, y), inputs("i32[2,3]", "i32[3,2]"), "i32"),
    R("matmul bools", lambda m, x, y: m.matmul(x, y), inputs("bool[2,3]", "bool[3,2]"), "bool"),
    R("matmul size 0", lambda m, x, y: m.matmul(x, y), inputs("f32[2,0]", "f32[0,3]"), "f32"),
    R(
        "dot",
        lambda m, x, y, v, s: (m.dot(x, y), m.dot(v, v), m.dot(x, v), m.dot(s, v), m.dot(y.T, y)),
        inputs("f32[3,4]", "f32[4,2]", "f32[4]", "f32[]"),
        ("f32",) * 5,
        operators=True,
    ),
    R("dot nd", lambda m, x, y: m.dot(x, y), inputs("f32[2,3,4]", "f32[5,4,6]"), "f32"),
    R(
        "tensordot",
        lambda m, x, y: (
            m.tensordot(x, y, axes=1),
            m.tensordot(x, y, axes=((1, 2), (2, 0))),
            m.tensordot(x, y, axes=0).shape == (2, 3, 4, 4, 2, 3),
        ),
        inputs("f32[2,3,4]", "f32[4,2,3]"),
        ("f32", "f32", "bool"),
        rtol=1e-4,
        atol=1e-5,
        reference=lambda np, x, y: (
            np.tensordot(x, y, axes=1),
            np.tensordot(x, y, axes=((1, 2), (2, 0))),
            True,
        ),
    ),
    R(
        "outer inner vdot",
        lambda m, x, y: (m.outer(x, y), m.inner(x, y[:4]), m.vdot(x, y[:4]), m.inner(x, 2.0)),
        inputs("f32[4]", "f32[6]"),
        ("f32",) * 4,
    ),
    R("inner matrices", lambda m, x, y: m.inner(x, y), inputs("f32[2,3]", "f32[4,3]"), "f32"),
    R(
        "einsum",
        lambda m, x, y, z: (
            m.einsum("ij,jk->ik", x, y),
            m.einsum("ij,jk", x, y),
            m.einsum("ij->ji", x),
            m.einsum("ij->", x),
            m.einsum("ij,ij->i", x, x),
            m.einsum("i,j->ij", z, z),
            m.einsum("ij,jk,kl->il", x, y, x),
            m.einsum("...j,jk->...k", x, y),
            m.einsum("bij,bjk->bik", x[None], y[None]),
        ),
        inputs("f32[2,3]", "f32[3,2]", "f32[5]"),
        ("f32",) * 9,
        rtol=1e-4,
        atol=1e-5,
        reference=lambda np, x, y, z: (
            np.einsum("ij,jk->ik", x, y),
            np.einsum("ij,jk", x, y),
            np.einsum("ij->ji", x),
            np.einsum("ij->", x),
            np.einsum("ij,ij->i", x, x),
            np.einsum("i,j->ij", z, z),
            np.einsum("ij,jk,kl->il", x, y, x),
            np.einsum("...j,jk->...k", x, y),
            np.einsum("bij,bjk->bik", x[None], y[None]),
        ),
    ),
    R(
        "einsum ellipsis broadcast",
        lambda m, x, y: (m.einsum("...ij,...jk->...ik", x, y), m.einsum("...i->...", x)),
        inputs("f32[2,1,3,4]", "f32[5,4,2]"),
        ("f32", "f32"),
        rtol=1e-4,
        atol=1e-5,
    ),
    R(
        "einsum implicit order and sums",
        lambda m, x, y: (m.einsum("ba,ac", x, y), m.einsum("ij,kl->jk", x, y)),
        inputs("f32[2,3]", "f32[3,4]"),
        ("f32", "f32"),
        rtol=1e-4,
        atol=1e-5,
    ),
    R(
        "einsum ints",
        lambda m, x, y: m.einsum("ij,j->i", x, y),
        inputs("i32[2,3]", "i32[3]"),
        "i32",
    ),
    R(
        "attention-style einsum",
        lambda m, q, k: m.einsum("bqhd,bkhd->bhqk", q, k),
        inputs("f32[2,3,2,4]", "f32[2,5,2,4]"),
        "f32",
        rtol=1e-4,
        atol=1e-5,
    ),
]


def _numpy_at(x, index, values, combine):
    """numpy's unbuffered form of ``x.at[index].<op>(values)``: a copy updated in place."""
    result = x.copy()
    combine(result, index, values)
    return result


def _put(x, indices, value):
    result = x.copy()
    np.put_along_axis(result, indices, value, 1)
    return result


def _stable_descending(x):
    """argsort along axis 1, largest first, equal values in index order."""
    return np.argsort(-x.astype(np.int64), axis=1, kind="stable")
