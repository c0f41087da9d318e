"""Op-table rows of the linear algebra ops: batches, empty batches and empty matrices, both
sides and triangles of the triangular solve, tall and wide QR, LU and SVD, the left and right
eigenvectors of eig; real and complex matrices."""

from __future__ import annotations

import numpy as np
import op_oracles_linalg as oracles
from op_oracles import NUMPY_DTYPES
from op_records import WIDE_FLOAT, Bad, Case, OpRecord

COMPLEX = ("c64", "c128")


def _normal(rng, shape, dtype):
    """Standard normal entries (real and imaginary parts of a complex dtype), in float64."""
    if dtype in COMPLEX:
        return rng.normal(size=shape) + 1j * rng.normal(size=shape)
    return rng.normal(size=shape)


def _adjoint(a):
    return np.conj(np.swapaxes(a, -1, -2))


def finite_matrices(rng, shapes, dtype, attrs=None):
    return [_normal(rng, shape, dtype).astype(NUMPY_DTYPES[dtype]) for shape in shapes]


def symmetric_positive(rng, shapes, dtype, attrs=None):
    """``a a^H + n I``, with one matrix that is not positive definite (its factor is NaN)."""
    (shape,) = shapes
    a = _normal(rng, shape, dtype)
    matrices = a @ _adjoint(a) + shape[-1] * np.eye(shape[-1])
    if matrices.ndim == 3 and matrices.shape[0] > 1:
        matrices[-1] = -matrices[-1]
    return [matrices.astype(NUMPY_DTYPES[dtype])]


def symmetric(rng, shapes, dtype, attrs=None):
    (shape,) = shapes
    a = _normal(rng, shape, dtype)
    return [(a + _adjoint(a)).astype(NUMPY_DTYPES[dtype])]


def well_conditioned(rng, shapes, dtype, attrs=None):
    """A triangular system's matrix with a dominant diagonal, and a right-hand side."""
    a, b = (_normal(rng, shape, dtype) for shape in shapes)
    a = a + 4 * np.sign(np.diagonal(a, axis1=-2, axis2=-1))[..., None] * np.eye(shapes[0][-1])
    return [a.astype(NUMPY_DTYPES[dtype]), b.astype(NUMPY_DTYPES[dtype])]


def _eig_attrs(left: bool, right: bool) -> dict:
    return {"compute_left_eigenvectors": left, "compute_right_eigenvectors": right, "enable_eigvec_derivs": False}


def _solve_attrs(left: bool, lower: bool, transpose: bool, unit: bool) -> dict:
    return {"left_side": left, "lower": lower, "transpose_a": transpose, "unit_diagonal": unit}


LINALG_RECORDS = [
    OpRecord(
        "cholesky", WIDE_FLOAT + COMPLEX,
        tuple(Case({}, (shape,)) for shape in ((3, 3), (3, 4, 4), (0, 3, 3), (2, 0, 0))),
        oracles.cholesky,
        (
            Bad("f32[2,3]", {}, "cholesky: operand f32[2,3] must be square in its last two dims"),
            Bad("f32[3]", {}, "cholesky: operand f32[3] must have rank >= 2"),
            Bad("i32[2,2]", {}, "cholesky: operand has dtype i32, expected f32 or f64"),
        ),
        make=symmetric_positive, rtol=2e-5, atol=1e-6,
    ),
    OpRecord(
        "triangular_solve", WIDE_FLOAT + COMPLEX,
        tuple(Case(_solve_attrs(*flags), shapes) for flags, shapes in (
            ((True, True, False, False), ((3, 3), (3, 2))),
            ((True, False, True, False), ((2, 4, 4), (2, 4, 3))),
            ((False, True, True, True), ((2, 4, 4), (2, 3, 4))),
            ((False, False, False, False), ((3, 3), (5, 3))),
            ((True, True, False, False), ((0, 3, 3), (0, 3, 2))),
            ((True, False, False, False), ((3, 3), (3, 0))),
        )),
        oracles.triangular_solve,
        (
            Bad("f32[3,3] f32[2,3,2]", _solve_attrs(True, True, False, False),
                "triangular_solve: b f32[2,3,2] must have the dtype and batch dims of a f32[3,3]"),
            Bad("f32[3,3] f32[2,2]", _solve_attrs(True, True, False, False),
                "triangular_solve: b f32[2,2] must have 3 rows to match a f32[3,3]"),
            Bad("f32[3,3] f32[3,2]", {"left_side": True}, "triangular_solve: missing attribute 'lower'"),
        ),
        make=well_conditioned, rtol=1e-4, atol=1e-5,
    ),
    OpRecord(
        "lu", WIDE_FLOAT + COMPLEX,
        tuple(Case({}, (shape,)) for shape in ((4, 4), (2, 5, 3), (2, 3, 5), (0, 2, 2), (3, 0, 2))),
        oracles.lu,
        (Bad("f32[3]", {}, "lu: operand f32[3] must have rank >= 2"),
         Bad("i32[2,2]", {}, "lu: operand has dtype i32, expected f32 or f64")),
        make=finite_matrices, rtol=1e-4, atol=1e-5,
    ),
    OpRecord(
        "qr", ("f64", "c128"),
        tuple(Case({"full_matrices": full}, (shape,)) for full in (True, False)
              for shape in ((4, 4), (2, 5, 3), (2, 3, 5), (0, 2, 2))),
        oracles.qr,
        (Bad("f32[3,3]", {}, "qr: missing attribute 'full_matrices'"),),
        make=finite_matrices,
    ),
    OpRecord(
        "eigh", ("f64", "c128"),
        tuple(Case({"lower": lower}, (shape,)) for lower in (True, False) for shape in ((4, 4), (3, 3, 3), (0, 2, 2))),
        oracles.eigh,
        (Bad("f64[3,2]", {"lower": True}, "eigh: operand f64[3,2] must be square in its last two dims"),),
        make=symmetric,
    ),
    OpRecord(
        "svd", ("f64", "c128"),
        tuple(Case({"full_matrices": full, "compute_uv": uv}, (shape,)) for full, uv in
              ((True, True), (False, True), (False, False)) for shape in ((4, 4), (2, 5, 3), (2, 3, 5), (0, 2, 2))),
        oracles.svd,
        (Bad("f64[3,2]", {"full_matrices": True}, "svd: missing attribute 'compute_uv'"),),
        make=finite_matrices,
    ),
    OpRecord(
        "eig", ("f64", "c128"),
        tuple(Case(_eig_attrs(left, right), (shape,)) for left, right in ((True, True), (False, True), (False, False))
              for shape in ((4, 4), (3, 3, 3), (0, 2, 2))),
        oracles.eig,
        (Bad("f64[3,2]", _eig_attrs(True, True),
             "eig: operand f64[3,2] must be a square matrix (or a batch of them) in its last two dims"),
         Bad("i32[2,2]", _eig_attrs(True, True), "eig: operand has dtype i32, expected f32 or f64 or c64 or c128"),
         Bad("f64[2,2]", {"compute_left_eigenvectors": True}, "eig: missing attribute 'compute_right_eigenvectors'")),
        make=finite_matrices, rtol=1e-9, atol=1e-12,
    ),
    OpRecord(
        "hessenberg", ("f64", "c128"),
        tuple(Case({}, (shape,)) for shape in ((4, 4), (2, 5, 5), (1, 1), (0, 3, 3))),
        oracles.hessenberg,
        (Bad("f64[3,2]", {}, "hessenberg: operand f64[3,2] must be a square matrix (or a batch of them)"),),
        make=finite_matrices, rtol=1e-9, atol=1e-12,
    ),
    OpRecord(
        "schur", ("f64", "c128"),
        tuple(Case({"compute_schur_vectors": vectors}, (shape,)) for vectors in (True, False)
              for shape in ((4, 4), (2, 5, 5), (0, 3, 3))),
        oracles.schur,
        (Bad("f64[3,3]", {}, "schur: missing attribute 'compute_schur_vectors'"),
         Bad("i32[2,2]", {"compute_schur_vectors": True},
             "schur: operand has dtype i32, expected f32 or f64 or c64 or c128")),
        make=finite_matrices, rtol=1e-9, atol=1e-12,
    ),
]
