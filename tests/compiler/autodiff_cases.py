"""One row per differentiable op (and per interesting variant): a function of float64 arrays
that exercises the op through meshjit.lax, and how to draw its arguments. Used by
``test_autodiff_ops.py`` to check every JVP and transpose rule against central differences.

``formula``, where given, is an independent closed form of the gradient of ``sum(f(x))`` with
respect to the first argument, in numpy.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from meshjit import lax
from meshjit.compiler.frontend import lax_ops


# rows 2, 0, 2 and one dropped (out of range) of a [4, 3] operand: a repeated index
_ROWS = np.array([[2], [0], [2], [7]], np.int32)
_ROW_DIMS = lax.ScatterDimensionNumbers((1,), (0,), (0,))


@dataclass(frozen=True)
class Case:
    name: str
    ops: tuple[str, ...]
    function: Callable
    draw: Callable  # rng -> tuple of numpy float64 arrays (the differentiated arguments)
    formula: Callable | None = None
    step: float = 1e-6
    tolerance: float = 1e-6
    second_order: bool = True
    static: dict = field(default_factory=dict)


def _uniform(low, high, *shape):
    return lambda rng: (rng.uniform(low, high, shape),)


def _pair(low, high, *shape):
    return lambda rng: (rng.uniform(low, high, shape), rng.uniform(low, high, shape))


def _erf_inverse(x):
    """erf's inverse by bisection (vectorised), independent of meshjit's."""
    low, high = np.full_like(x, -6.0), np.full_like(x, 6.0)
    erf = np.vectorize(math.erf)
    for _ in range(80):
        middle = (low + high) / 2
        below = erf(middle) < x
        low, high = np.where(below, middle, low), np.where(below, high, middle)
    return (low + high) / 2


def _erf_prime(x):
    return 2 / math.sqrt(math.pi) * np.exp(-x * x)


_UNARY = [
    ("exp", lax.exp, (-1, 1), np.exp),
    ("exp2", lax.exp2, (-1, 1), lambda x: np.exp2(x) * np.log(2)),
    ("log", lax.log, (0.5, 2), lambda x: 1 / x),
    ("log1p", lax.log1p, (0.1, 2), lambda x: 1 / (1 + x)),
    ("expm1", lax.expm1, (-1, 1), np.exp),
    ("tanh", lax.tanh, (-2, 2), lambda x: 1 / np.cosh(x) ** 2),
    ("logistic", lax.logistic, (-3, 3), lambda x: np.exp(-x) / (1 + np.exp(-x)) ** 2),
    ("sin", lax.sin, (-3, 3), np.cos),
    ("cos", lax.cos, (-3, 3), lambda x: -np.sin(x)),
    ("tan", lax.tan, (-1, 1), lambda x: 1 / np.cos(x) ** 2),
    ("sqrt", lax.sqrt, (0.5, 2), lambda x: 0.5 / np.sqrt(x)),
    ("rsqrt", lax.rsqrt, (0.5, 2), lambda x: -0.5 * x**-1.5),
    ("cbrt", lax.cbrt, (0.5, 2), lambda x: x ** (-2 / 3) / 3),
    ("erf", lax.erf, (-2, 2), _erf_prime),
    ("neg", lax.neg, (-2, 2), lambda x: -np.ones_like(x)),
    ("abs", lax.abs, (0.2, 2), np.sign),
    ("abs_negative", lax.abs, (-2, -0.2), np.sign),
    ("square", lax.square, (-2, 2), lambda x: 2 * x),
]

CASES = [
    Case(name, (name.split("_")[0],), function, _uniform(low, high, 3, 4), formula)
    for name, function, (low, high), formula in _UNARY
]

CASES += [
    Case("erf_inv", ("erf_inv",), lax.erf_inv, _uniform(-0.9, 0.9, 3, 4),
         lambda x: math.sqrt(math.pi) / 2 * np.exp(_erf_inverse(x) ** 2)),
    Case("fma", ("fma",), lambda a, b, c: lax_ops.fma(a, b, c),
         lambda rng: tuple(rng.uniform(-2, 2, (3,)) for _ in range(3))),
    # Piecewise-constant ops, away from their jumps: zero derivative.
    Case("floor", ("floor",), lax.floor, _uniform(0.2, 0.8, 5), lambda x: 0 * x),
    Case("ceil", ("ceil",), lax.ceil, _uniform(0.2, 0.8, 5), lambda x: 0 * x),
    Case("round", ("round",), lax.round, _uniform(0.1, 0.4, 5), lambda x: 0 * x),
    Case("sign", ("sign",), lax.sign, _uniform(0.1, 1, 5), lambda x: 0 * x),
    Case(
        "integer_pow_3",
        ("integer_pow",),
        lambda x: lax.integer_pow(x, 3),
        _uniform(-2, 2, 4),
        lambda x: 3 * x**2,
    ),
    Case(
        "integer_pow_2",
        ("integer_pow",),
        lambda x: lax.integer_pow(x, 2),
        _uniform(-2, 2, 4),
        lambda x: 2 * x,
    ),
    Case(
        "integer_pow_negative",
        ("integer_pow",),
        lambda x: lax.integer_pow(x, -2),
        _uniform(0.5, 2, 4),
        lambda x: -2 * x**-3,
    ),
    Case(
        "integer_pow_0",
        ("integer_pow",),
        lambda x: lax.integer_pow(x, 0) * x,
        _uniform(0.5, 2, 4),
        lambda x: np.ones_like(x),
    ),
    Case("add", ("add",), lax.add, _pair(-1, 1, 3), lambda x, y: np.ones_like(x)),
    Case("sub", ("sub",), lax.sub, _pair(-1, 1, 3), lambda x, y: np.ones_like(x)),
    Case("mul", ("mul",), lax.mul, _pair(-1, 1, 3), lambda x, y: y),
    Case("div", ("div",), lax.div, _pair(0.5, 2, 3), lambda x, y: 1 / y),
    Case(
        "rem",
        ("rem",),
        lax.rem,
        lambda rng: (rng.uniform(2.1, 2.9, 4), rng.uniform(0.6, 0.9, 4)),
        lambda x, y: np.ones_like(x),
    ),
    Case("pow", ("pow",), lax.pow, _pair(0.5, 2, 3), lambda x, y: y * x ** (y - 1)),
    Case(
        "max",
        ("max",),
        lax.max,
        lambda rng: (rng.uniform(-1, 1, 6), rng.uniform(-1, 1, 6)),
        lambda x, y: (x > y).astype(float),
    ),
    Case(
        "min",
        ("min",),
        lax.min,
        lambda rng: (rng.uniform(-1, 1, 6), rng.uniform(-1, 1, 6)),
        lambda x, y: (x < y).astype(float),
    ),
    Case("atan2", ("atan2",), lax.atan2, _pair(0.5, 2, 3), lambda x, y: y / (x * x + y * y)),
    Case(
        "select",
        ("select", "compare"),
        lambda x, y: lax.select(lax.gt(x, y), x * 2.0, y),
        _pair(-1, 1, 6),
        lambda x, y: 2.0 * (x > y),
    ),
    Case(
        "clamp",
        ("clamp",),
        lambda low, x, high: lax.clamp(low, x, high),
        lambda rng: (np.full((), -0.5), rng.uniform(-1, 1, 8), np.full((), 0.5)),
    ),
    Case(
        "convert",
        ("convert",),
        lambda x: lax.convert_element_type(lax.convert_element_type(x, "f32") ** 2, "f64"),
        _uniform(0.5, 2, 3),
        lambda x: 2 * x,
        step=1e-2,
        tolerance=1e-4,
    ),
    # Shape and layout.
    Case(
        "broadcast_in_dim",
        ("broadcast_in_dim",),
        lambda x: lax.broadcast_in_dim(x, (2, 3, 4), (0, 2)) * 1.5,
        _uniform(-1, 1, 2, 1),
        lambda x: np.full(x.shape, 1.5 * 12),
    ),
    Case(
        "reshape",
        ("reshape",),
        lambda x: lax.reshape(x, (4, 3)) ** 2,
        _uniform(-1, 1, 2, 6),
        lambda x: 2 * x,
    ),
    Case(
        "transpose",
        ("transpose",),
        lambda x: lax.transpose(x, (2, 0, 1)) ** 2,
        _uniform(-1, 1, 2, 3, 4),
        lambda x: 2 * x,
    ),
    Case(
        "slice",
        ("slice",),
        lambda x: lax.slice(x, (1, 0), (6, 4), (2, 3)) ** 2,
        _uniform(-1, 1, 7, 5),
    ),
    Case(
        "dynamic_slice",
        ("dynamic_slice",),
        lambda x: lax.dynamic_slice(x, (1, 5), (3, 2)) ** 2,
        _uniform(-1, 1, 5, 6),
    ),
    Case(
        "dynamic_update_slice",
        ("dynamic_update_slice",),
        lambda x, u: lax.dynamic_update_slice(x, u * u, (2, 1)) * x,
        lambda rng: (rng.uniform(-1, 1, (4, 4)), rng.uniform(-1, 1, (2, 2))),
    ),
    Case(
        "pad",
        ("pad",),
        lambda x, value: lax.pad(x, value, ((1, -1, 1), (-1, 2, 0))) ** 2,
        lambda rng: (rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, ())),
    ),
    Case(
        "concatenate",
        ("concatenate",),
        lambda x, y: lax.concatenate([x, y * y, x], 1),
        lambda rng: (rng.uniform(-1, 1, (2, 3)), rng.uniform(-1, 1, (2, 2))),
    ),
    Case("rev", ("rev",), lambda x: lax.rev(x, (0,)) * lax.rev(x, (1,)), _uniform(-1, 1, 3, 4)),
    Case(
        "squeeze",
        ("squeeze",),
        lambda x: lax.squeeze(x, (1,)) ** 2,
        _uniform(-1, 1, 3, 1, 2),
        lambda x: 2 * x,
    ),
    Case(
        "expand_dims",
        ("expand_dims",),
        lambda x: lax.expand_dims(x, (0, 2)) ** 2,
        _uniform(-1, 1, 3, 2),
        lambda x: 2 * x,
    ),
    # Contraction.
    Case(
        "dot_general_matmul",
        ("dot_general",),
        lambda a, b: lax.dot(a, b),
        _pair(-1, 1, 3, 3),
        lambda a, b: np.ones((3, 3)) @ b.T,
    ),
    Case(
        "dot_general_batched",
        ("dot_general",),
        lambda a, b: lax.dot_general(a, b, (((2, 0), (1, 3)), ((1,), (2,)))),
        lambda rng: (rng.uniform(-1, 1, (4, 2, 3, 5)), rng.uniform(-1, 1, (6, 3, 2, 4))),
    ),
    Case(
        "dot_general_preferred",
        ("dot_general", "convert"),
        lambda a, b: lax.dot_general(
            lax.convert_element_type(a, "f32"),
            lax.convert_element_type(b, "f32"),
            (((1,), (0,)), ((), ())),
            preferred_element_type="f64",
        ),
        _pair(-1, 1, 2, 2),
        step=1e-2,
        tolerance=1e-4,
    ),
    # Reductions and scans.
    Case(
        "reduce_sum",
        ("reduce_sum",),
        lambda x: lax.reduce_sum(x, (0, 2)) ** 2,
        _uniform(-1, 1, 2, 3, 4),
    ),
    Case(
        "reduce_max",
        ("reduce_max",),
        lambda x: lax.reduce_max(x, (1,)),
        _uniform(-1, 1, 3, 5),
        lambda x: (x == x.max(1, keepdims=True)).astype(float),
    ),
    Case(
        "reduce_min",
        ("reduce_min",),
        lambda x: lax.reduce_min(x, (0, 1)),
        _uniform(-1, 1, 3, 5),
        lambda x: (x == x.min()).astype(float),
    ),
    Case(
        "reduce_prod",
        ("reduce_prod",),
        lambda x: lax.reduce_prod(x, (0, 2)),
        _uniform(0.5, 1.5, 2, 3, 2),
        lambda x: np.prod(x, (0, 2), keepdims=True) / x,
    ),
    Case(
        "reduce_prod_with_zero",
        ("reduce_prod",),
        lambda x: lax.reduce_prod(lax.mul(x, np.array([1.0, 0, 1, 1])), (0,)),
        _uniform(0.5, 1.5, 4),
    ),
    Case(
        "cumsum", ("cumsum",), lambda x: lax.cumsum(x, 1, reverse=True) ** 2, _uniform(-1, 1, 2, 5)
    ),
    Case("cumprod", ("cumprod",), lambda x: lax.cumprod(x, 0), _uniform(0.5, 1.5, 7, 2)),
    Case(
        "cumprod_reverse",
        ("cumprod",),
        lambda x: lax.cumprod(x, 1, reverse=True),
        _uniform(0.5, 1.5, 2, 6),
    ),
    Case("cummax", ("cummax",), lambda x: lax.cummax(x, 0), _uniform(-1, 1, 9)),
    Case(
        "cummin_reverse", ("cummin",), lambda x: lax.cummin(x, 0, reverse=True), _uniform(-1, 1, 9)
    ),
    Case("sort", ("sort",), lambda x: lax.sort(x, 1), _uniform(-1, 1, 3, 5)),
    Case(
        "sort_keys_values",
        ("sort",),
        lambda k, v: lax.mul(lax.sort((k, v), 0, num_keys=1)[1], k),
        _pair(-1, 1, 6),
    ),
    Case(
        "gather_fill",
        ("gather",),
        lambda x: lax.gather_along_axis(x, np.array([[2, 0], [2, 1]], np.int32), 1) ** 2,
        _uniform(-1, 1, 2, 3),
    ),
    Case(
        "gather_clip",
        ("gather",),
        lambda x: lax.gather_along_axis(x, np.array([5, -3, 1], np.int32), 0, mode="clip") ** 2,
        _uniform(-1, 1, 4, 2),
    ),
    Case(
        "gather_windows_batching",
        ("gather",),
        lambda x: lax.gather(x, np.array([[[1], [3]], [[0], [2]]], np.int32),
                             lax.GatherDimensionNumbers((2,), (1,), (1,), (0,), (0,)), (1, 1, 2)) ** 2,
        _uniform(-1, 1, 2, 4, 2),
    ),
    Case("scatter_add", ("scatter_add",), lambda x, u: lax.scatter_add(x, _ROWS, u, _ROW_DIMS) ** 2,
         lambda rng: (rng.uniform(-1, 1, (4, 3)), rng.uniform(-1, 1, (4, 3)))),
    Case("scatter_repeated", ("scatter",), lambda x, u: lax.scatter(x, _ROWS, u * x[:1], _ROW_DIMS) ** 2,
         lambda rng: (rng.uniform(-1, 1, (4, 3)), rng.uniform(-1, 1, (4, 3)))),
    Case("scatter_mul_repeated", ("scatter_mul",), lambda x, u: lax.scatter_mul(x, _ROWS, u, _ROW_DIMS),
         lambda rng: (rng.uniform(0.5, 1.5, (4, 3)), rng.uniform(-1.5, 1.5, (4, 3)))),
    Case("scatter_mul_clip", ("scatter_mul",),
         lambda x, u: lax.scatter_mul(x, np.array([[5], [-2]], np.int32), u, _ROW_DIMS, mode="clip"),
         lambda rng: (rng.uniform(0.5, 1.5, (4, 3)), rng.uniform(-1.5, 1.5, (2, 3)))),
    Case("scatter_max", ("scatter_max",), lambda x, u: lax.scatter_max(x, _ROWS, u, _ROW_DIMS),
         lambda rng: (rng.uniform(-1, 1, (4, 3)), rng.uniform(-1, 1, (4, 3)))),
    Case("scatter_min", ("scatter_min",), lambda x, u: lax.scatter_min(x, _ROWS, u, _ROW_DIMS),
         lambda rng: (rng.uniform(-1, 1, (4, 3)), rng.uniform(-1, 1, (4, 3)))),
    Case("conv_nchw", ("conv_general_dilated",),
         lambda x, w: lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (0, 1))),
         lambda rng: (rng.uniform(-1, 1, (2, 3, 5, 4)), rng.uniform(-1, 1, (4, 3, 3, 2)))),
    Case("conv_nhwc_strided_dilated", ("conv_general_dilated",),
         lambda x, w: lax.conv_general_dilated(x, w, (2, 1), ((1, 2), (-1, 1)), (1, 1), (1, 2),
                                               ("NHWC", "HWIO", "NHWC")),
         lambda rng: (rng.uniform(-1, 1, (2, 6, 5, 2)), rng.uniform(-1, 1, (3, 2, 2, 3)))),
    Case("conv_lhs_dilation_feature_groups", ("conv_general_dilated",),
         lambda x, w: lax.conv_general_dilated(x, w, (2,), ((2, 1),), (2,), (1,), None, 2),
         lambda rng: (rng.uniform(-1, 1, (2, 4, 5)), rng.uniform(-1, 1, (6, 2, 3)))),
    Case("conv_batch_groups", ("conv_general_dilated",),
         lambda x, w: lax.conv_general_dilated(x, w, (1,), ((0, 0),), None, (2,), ("NCH", "OIH", "NHC"), 1, 2),
         lambda rng: (rng.uniform(-1, 1, (4, 3, 7)), rng.uniform(-1, 1, (6, 3, 2)))),
    Case("reduce_window_sum", ("reduce_window_sum",),
         lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 3), (1, 2), ((1, 0), (1, 1)), (1, 2), (1, 1)) ** 2,
         _uniform(-1, 1, 5, 4)),
    Case("reduce_window_max", ("reduce_window_max",),
         lambda x: lax.reduce_window(x, -np.inf, lax.max, (2, 2), (2, 1), ((0, 1), (1, 0)), None, (1, 2)),
         _uniform(-1, 1, 5, 6)),
    Case("reduce_window_min", ("reduce_window_min",),
         lambda x: lax.reduce_window(x, np.inf, lax.min, (3,), (2,), "SAME"), _uniform(-1, 1, 7)),
    Case("top_k", ("top_k",), lambda x: lax.top_k(x, 3)[0] ** 2, _uniform(-1, 1, 3, 6)),
]


# --- control flow ------------------------------------------------------------------------------


def _rnn(w, h, xs):
    def body(carry, x):
        state = lax.tanh(lax.dot(carry, w) + x)
        return state, lax.mul(state, state)

    last, ys = lax.scan(body, h, xs)
    return lax.reduce_sum(ys, (0,)) + last


def _pytree_scan(a, xs):
    def body(carry, x):
        total, product = carry
        return (total + lax.sin(x) * product, product * a), {"scaled": x * total}

    (total, product), ys = lax.scan(body, (lax.mul(a, 0.0), a), xs, reverse=True, unroll=2)
    return total * product + lax.reduce_sum(ys["scaled"], (0,))


def _switch(x, y):
    branches = [lambda u, v: lax.sin(u) * v, lambda u, v: u * u + v, lambda u, v: lax.exp(u) - v]
    return lax.switch(np.int32(1), branches, x, y) + lax.switch(np.int32(7), branches, y, x)


def _cond(x, y):
    return lax.cond(lax.reduce_sum(x, (0,)) > 0, lambda u, v: lax.tanh(u * v), lambda u, v: u - v, x, y)


CASES += [
    Case("scan_rnn", ("scan",), _rnn,
         lambda rng: (rng.uniform(-0.5, 0.5, (3, 3)), rng.uniform(-1, 1, (2, 3)), rng.uniform(-1, 1, (4, 2, 3)))),
    Case("scan_pytree_reverse_unrolled", ("scan",), _pytree_scan, _pair(0.5, 1.0, 5)),
    Case("fori_loop_static", ("scan",), lambda x: lax.fori_loop(0, 4, lambda i, c: lax.sin(c) * x + i, x),
         _uniform(-1, 1, 3)),
    Case("cond_traced_predicate", ("cond",), _cond, _pair(0.1, 1.0, 4)),
    Case("switch_clamped", ("cond",), _switch, _pair(-1, 1, 3)),
]


def _barrier(x, y):
    first, second = lax.optimization_barrier((lax.sin(x), y))
    return first * second


def _checkpointed_scan(w, xs):
    from meshjit import checkpoint, checkpoint_policies

    @checkpoint
    def cell(h, x):
        return lax.tanh(lax.dot(h, w) + x)

    cheap = checkpoint(lambda h: lax.sin(h) * h, policy=checkpoint_policies.dots_saveable)
    last, ys = lax.scan(lambda h, x: (cheap(cell(h, x)), h), xs[0], xs)
    return last + lax.reduce_sum(ys, (0,))


CASES += [
    Case("optimization_barrier", ("optimization_barrier",), _barrier, _pair(-1, 1, 3)),
    Case("checkpointed_scan", ("scan",), _checkpointed_scan,
         lambda rng: (rng.uniform(-0.5, 0.5, (3, 3)), rng.uniform(-1, 1, (4, 3)))),
]

# NOTE: the linear algebra family's rows live in their own file
from autodiff_cases_linalg import linalg_cases  # noqa: E402

CASES += linalg_cases(Case)

# Complex values inside real functions: the part ops, complex arithmetic and abs, and the fft
# transforms (real in, real out, so central differences of the real arguments check the rules).
def _complex_parts(x, y):
    z = lax.complex(x, y)
    w = lax.complex(y, x * x)
    return lax.real(z * w) + lax.imag(lax.conj(z) / (w + 3.0)) + lax.abs(z * z)


def _transforms(x, y):
    import meshjit.numpy as jnp

    z = lax.complex(x, y)
    spectrum = jnp.fft.fft2(z) * lax.complex(y, x)
    halves = jnp.fft.rfft(x, axis=0) * 2j + jnp.fft.ihfft(y, axis=0)
    return lax.real(jnp.fft.ifft(spectrum)) + jnp.fft.irfft(halves, n=4, axis=0)[:, :3] * lax.imag(spectrum)


CASES += [
    Case("complex_parts", ("complex", "real", "imag", "conj"), _complex_parts, _pair(0.5, 1.5, 3, 4)),
    Case("fft", ("fft",), _transforms, _pair(-1, 1, 4, 3)),
]
