"""The ops between complex numbers and their (real, imaginary) parts, as ``jax.lax`` names them:
``complex(re, im)``, ``real``, ``imag`` and ``conj``; shape rules and numpy reference
implementations. They belong to the elementwise family (its sharding, kernel, batching rules).
"""

from __future__ import annotations

import numpy as np

from ..dtypes import COMPLEX_OF, COMPONENT_DTYPE
from ..reference import reference_impls
from ..shape_rules import COMPLEX, WIDE_FLOATS, expect_dtype, expect_operand_count, fail, shape_rules

COMPLEX_PART_OPS = ("complex", "real", "imag", "conj")


@shape_rules.register("complex")
def _complex(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 2)
    real, imaginary = operands
    expect_dtype(op, "operand 0", real, WIDE_FLOATS)
    if imaginary != real:
        fail(op, f"real and imaginary parts must have equal types, got {real} and {imaginary}")
    return (real.with_dtype(COMPLEX_OF[real.dtype]),)


@shape_rules.register("real", "imag")
def _part(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 1)
    expect_dtype(op, "operand 0", operands[0], COMPLEX)
    return (operands[0].with_dtype(COMPONENT_DTYPE[operands[0].dtype]),)


@shape_rules.register("conj")
def _conj(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 1)
    expect_dtype(op, "operand 0", operands[0], COMPLEX)
    return (operands[0],)


def _parts_function(function):
    def impl(attrs, *operands):
        return (np.asarray(function(*operands)),)

    impl.numpy_function = function
    return impl


def _make_complex(real, imaginary):
    result = np.empty(np.shape(real), COMPLEX_NUMPY[real.dtype])
    result.real, result.imag = real, imaginary
    return result


COMPLEX_NUMPY = {np.dtype(np.float32): np.dtype(np.complex64), np.dtype(np.float64): np.dtype(np.complex128)}

for _name, _function in (("complex", _make_complex), ("real", np.real), ("imag", np.imag), ("conj", np.conjugate)):
    reference_impls.register(_name)(_parts_function(_function))


def complex_abs(operand: np.ndarray) -> np.ndarray:
    """|re + i im| as XLA computes it: the larger part times sqrt(1 + (smaller / larger)^2),
    exact for a zero or infinite larger part (numpy's hypot rounds differently)."""
    real, imaginary = np.abs(operand.real), np.abs(operand.imag)
    larger, smaller = np.maximum(real, imaginary), np.minimum(real, imaginary)
    with np.errstate(all="ignore"):
        ratio = smaller / larger
        scaled = larger * np.sqrt(larger.dtype.type(1) + ratio * ratio)
    special = (larger == 0) | np.isinf(larger)
    return np.asarray(np.where(special, larger, scaled), dtype=real.dtype)


def complex_sign(operand: np.ndarray) -> np.ndarray:
    """z / |z|, and z itself for a zero of either sign (XLA's sign of a complex number)."""
    magnitude = complex_abs(operand)
    safe = np.where(magnitude == 0, 1, magnitude).astype(magnitude.dtype)
    with np.errstate(all="ignore"):
        unit = _make_complex(np.asarray(operand.real / safe), np.asarray(operand.imag / safe))
    return np.asarray(np.where(magnitude == 0, operand, unit), dtype=operand.dtype)


def complex_square(operand: np.ndarray) -> np.ndarray:
    """z * z as XLA squares x + iy: (|x| - |y|)(|x| + |y|) + 2xy i, a real part exact where the
    squares cancel (+0 for -1 + 1i) that overflows only when the result does."""
    real, imaginary = operand.real, operand.imag
    with np.errstate(all="ignore"):
        magnitudes = np.abs(real), np.abs(imaginary)
        difference = (magnitudes[0] - magnitudes[1]) * (magnitudes[0] + magnitudes[1])
        return _make_complex(np.asarray(difference), np.asarray(2 * real * imaginary))


def _unit_or_zero(part: np.ndarray) -> np.ndarray:
    """+-1 for an infinite part, +-0 otherwise, with the part's sign (C99's "box" of inf)."""
    return np.copysign(np.where(np.isinf(part), 1, 0).astype(part.dtype), part)


def complex_divide(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """lhs / rhs with the infinities C99's Annex G (and XLA) recover where numpy's quotient is
    NaN: a zero divisor gives (copysign(inf, c) a, copysign(inf, c) b), an infinite dividend over
    a finite divisor infinite parts, a finite dividend over an infinite divisor signed zeros."""
    a, b, c, d = lhs.real, lhs.imag, rhs.real, rhs.imag
    with np.errstate(all="ignore"):
        quotient = np.asarray(np.divide(lhs, rhs))
        real, imaginary = quotient.real.copy(), quotient.imag.copy()
        lost = np.isnan(real) & np.isnan(imaginary)
        zero = (c == 0) & (d == 0) & ~(np.isnan(a) & np.isnan(b))
        infinity = np.copysign(np.asarray(np.inf, c.dtype), c)
        real, imaginary = np.where(zero, infinity * a, real), np.where(zero, infinity * b, imaginary)
        finite_lhs, finite_rhs = np.isfinite(a) & np.isfinite(b), np.isfinite(c) & np.isfinite(d)
        big = lost & ~zero & (np.isinf(a) | np.isinf(b)) & finite_rhs
        a_box, b_box = _unit_or_zero(a), _unit_or_zero(b)
        real = np.where(big, np.inf * (a_box * c + b_box * d), real)
        imaginary = np.where(big, np.inf * (b_box * c - a_box * d), imaginary)
        small = lost & (np.isinf(c) | np.isinf(d)) & finite_lhs
        c_box, d_box = _unit_or_zero(c), _unit_or_zero(d)
        real = np.where(small, 0 * (a * c_box + b * d_box), real)
        imaginary = np.where(small, 0 * (b * c_box - a * d_box), imaginary)
        return _make_complex(np.asarray(real, a.dtype), np.asarray(imaginary, a.dtype))
