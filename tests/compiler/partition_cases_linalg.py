"""The partitioner's op-table rows of the linear algebra ops (imported by partition_cases.py):
batch dims stay sharded with no collective; a sharded matrix dim is all-gathered first; the free
dim of a triangular solve's right-hand side stays sharded; complex matrices and eig alike."""

from __future__ import annotations

import numpy as np
from meshjit.ir.dtypes import to_numpy
from partition_cases import Case, Operand, normal, record


def symmetric_positive(rng, shape, dtype):
    a = rng.standard_normal(shape)
    return (a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(to_numpy(dtype))


def hermitian_positive(rng, shape, dtype):
    a = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])).astype(to_numpy(dtype))


def complex_normal(rng, shape, dtype):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(to_numpy(dtype))


def dominant(rng, shape, dtype):
    a = rng.standard_normal(shape) + 4 * np.eye(shape[-1])
    return a.astype(to_numpy(dtype))


SPD = Operand("f32[8,6,6]", symmetric_positive)
SQUARE = Operand("f32[8,6,6]", dominant)
TALL = Operand("f32[8,6,4]", normal)
HPD = Operand("c64[8,6,6]", hermitian_positive)
COMPLEX_TALL = Operand("c64[8,6,4]", complex_normal)
EIG = {"compute_left_eigenvectors": True, "compute_right_eigenvectors": True, "enable_eigvec_derivs": False}
LEFT = {"left_side": True, "lower": True, "transpose_a": False, "unit_diagonal": False}
RIGHT = {"left_side": False, "lower": False, "transpose_a": True, "unit_diagonal": False}
# NOTE: the free dim (4) divides over x on these meshes, not on (8,)
FREE_DIVIDES = ("2", "2x2", "2x4")
BATCH_ONLY = Case(("x,-,-",), None, ())
GATHERED = Case(("-,x,-",), None, ("all_gather",))


def linalg_records() -> list:
    return [
        record("cholesky", "", [SPD], {}, [BATCH_ONLY, GATHERED, Case(("x,-,y",), meshes=("2x2", "2x4"))]),
        record("triangular_solve", "left", [SQUARE, "f32[8,6,4]"], LEFT,
               [Case(("x,-,-", "x,-,-"), None, ()), Case(("-,-,-", "-,-,x"), "-,-,x", (), meshes=FREE_DIVIDES),
                Case(("x,y,-", "x,-,-"))]),
        record("triangular_solve", "right", [SQUARE, "f32[8,4,6]"], RIGHT,
               [Case(("-,-,-", "-,x,-"), "-,x,-", (), meshes=FREE_DIVIDES), Case(("-,x,-", "-,-,-"))]),
        record("lu", "", [SQUARE], {}, [BATCH_ONLY, GATHERED]),
        record("lu", "tall", [TALL], {}, [Case(("y,x,-",), meshes=("2x2", "2x4"))]),
        record("qr", "", [TALL], {"full_matrices": False}, [BATCH_ONLY, GATHERED]),
        record("qr", "complete", [TALL], {"full_matrices": True}, [Case(("x,-,y",), meshes=("2x2", "2x4"))]),
        record("eigh", "", [SPD], {"lower": True}, [BATCH_ONLY, GATHERED]),
        record("svd", "", [TALL], {"full_matrices": False, "compute_uv": True}, [BATCH_ONLY, GATHERED]),
        record("svd", "values", [TALL], {"full_matrices": False, "compute_uv": False}, [Case(("-,-,x",))]),
        record("cholesky", "c64", [HPD], {}, [BATCH_ONLY, GATHERED]),
        record("qr", "c64", [COMPLEX_TALL], {"full_matrices": False}, [BATCH_ONLY, Case(("x,-,y",), meshes=("2x2",))]),
        record("eigh", "c64", [HPD], {"lower": True}, [BATCH_ONLY, GATHERED]),
        record("svd", "c64", [COMPLEX_TALL], {"full_matrices": False, "compute_uv": True}, [BATCH_ONLY, GATHERED]),
        record("eig", "", [SQUARE], EIG, [BATCH_ONLY, GATHERED, Case(("x,-,y",), meshes=("2x2", "2x4"))]),
        record("hessenberg", "", [SQUARE], {}, [BATCH_ONLY, GATHERED]),
        record("schur", "", [SQUARE], {"compute_schur_vectors": True}, [BATCH_ONLY, GATHERED]),
        record("schur", "c64", [Operand("c64[8,6,6]", complex_normal)], {"compute_schur_vectors": False},
               [BATCH_ONLY, Case(("x,-,y",), meshes=("2x2",))]),
        record("eig", "values_c64", [Operand("c64[8,6,6]", complex_normal)],
               {**EIG, "compute_left_eigenvectors": False, "compute_right_eigenvectors": False}, [BATCH_ONLY, GATHERED]),
    ]
