"""The dense linear algebra ops, named as ``jax.lax.linalg``'s primitives: cholesky,
triangular_solve, lu, qr, eigh and svd (eig is in linalg_eig.py, hessenberg and schur in
linalg_schur.py),
on float and complex matrices. Each acts on the last two dims of its operands (the matrix dims);
every dim before them is a batch dim. The reference implementations call numpy's
LAPACK routines (potrf, geqrf/orgqr, syevd, gesdd) on the whole batch; LU with partial pivoting
and the triangular solve, which numpy does not expose, are substitutions vectorised over the
batch, in LAPACK's order of pivots. A matrix LAPACK fails on (not positive definite, no
convergence) gives NaNs, as JAX's CPU kernels do."""

from __future__ import annotations

import math

import numpy as np

from ..dtypes import real_dtype
from ..reference import reference_impls
from ..shape_rules import COMPLEX, WIDE_FLOATS, bool_attr, expect_dtype, expect_operand_count, fail, shape_rules
from ..types import TensorType
from . import linalg_eig, linalg_schur

OPS = ("cholesky", "triangular_solve", "lu", "qr", "eigh", "svd") + linalg_eig.OPS + linalg_schur.OPS


def _matrix(op: str, operand: TensorType, square: bool) -> tuple[int, int]:
    """The operand's matrix dims, checked: a float or complex array of rank >= 2 (and square
    when asked)."""
    expect_dtype(op, "operand", operand, WIDE_FLOATS + COMPLEX)
    if operand.rank < 2:
        fail(op, f"operand {operand} must have rank >= 2 (a matrix, or a batch of them)")
    rows, columns = operand.shape[-2:]
    if square and rows != columns:
        fail(op, f"operand {operand} must be square in its last two dims")
    return rows, columns


def real_part_type(operand: TensorType) -> TensorType:
    """The type of ``operand``'s real parts: eigenvalues of a Hermitian matrix and singular
    values are real."""
    return operand.with_dtype(real_dtype(operand.dtype))


# --- shape rules ---------------------------------------------------------------------------------


@shape_rules.register("cholesky")
def _cholesky(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 1)
    _matrix(op, operands[0], square=True)
    return (operands[0],)


@shape_rules.register("triangular_solve")
def _triangular_solve(op, operands, attrs, regions, meshes):
    """``a`` is ``[..., m, m]``; ``b`` is ``[..., m, n]`` (``left_side``: solve ``op(a) x = b``)
    or ``[..., n, m]`` (solve ``x op(a) = b``), with the same batch dims and dtype."""
    expect_operand_count(op, operands, 2)
    a, b = operands
    size, _ = _matrix(op, a, square=True)
    _matrix(op, b, square=False)
    for name in ("left_side", "lower", "transpose_a", "unit_diagonal"):
        bool_attr(op, attrs, name)
    if b.dtype != a.dtype or b.shape[:-2] != a.shape[:-2]:
        fail(op, f"b {b} must have the dtype and batch dims of a {a}")
    solved = b.shape[-2] if attrs["left_side"] else b.shape[-1]
    if solved != size:
        side = "rows" if attrs["left_side"] else "columns"
        fail(op, f"b {b} must have {size} {side} to match a {a}")
    return (b,)


@shape_rules.register("lu")
def _lu(op, operands, attrs, regions, meshes):
    """The packed factors, the row each step exchanged with, and the row permutation."""
    expect_operand_count(op, operands, 1)
    (operand,) = operands
    rows, columns = _matrix(op, operand, square=False)
    batch = operand.shape[:-2]
    return (operand, TensorType(batch + (min(rows, columns),), "i32"), TensorType(batch + (rows,), "i32"))


@shape_rules.register("qr")
def _qr(op, operands, attrs, regions, meshes):
    expect_operand_count(op, operands, 1)
    (operand,) = operands
    rows, columns = _matrix(op, operand, square=False)
    inner = rows if bool_attr(op, attrs, "full_matrices") else min(rows, columns)
    batch = operand.shape[:-2]
    return operand.with_shape(batch + (rows, inner)), operand.with_shape(batch + (inner, columns))


@shape_rules.register("eigh")
def _eigh(op, operands, attrs, regions, meshes):
    """The eigenvectors (columns) and the eigenvalues in ascending order."""
    expect_operand_count(op, operands, 1)
    (operand,) = operands
    size, _ = _matrix(op, operand, square=True)
    bool_attr(op, attrs, "lower")
    return operand, real_part_type(operand).with_shape(operand.shape[:-2] + (size,))


@shape_rules.register("svd")
def _svd(op, operands, attrs, regions, meshes):
    """The singular values (descending), then ``u`` and ``vh`` when ``compute_uv``."""
    expect_operand_count(op, operands, 1)
    (operand,) = operands
    rows, columns = _matrix(op, operand, square=False)
    batch, inner = operand.shape[:-2], min(rows, columns)
    values = real_part_type(operand).with_shape(batch + (inner,))
    if not bool_attr(op, attrs, "compute_uv"):
        return (values,)
    full = bool_attr(op, attrs, "full_matrices")
    u = operand.with_shape(batch + (rows, rows if full else inner))
    vh = operand.with_shape(batch + (columns if full else inner, columns))
    return values, u, vh


# --- reference implementations -------------------------------------------------------------------


def _per_matrix_or_nan(function, operand: np.ndarray):
    """``function`` on the whole batch; when LAPACK refuses one matrix, on each matrix alone,
    filling the results of those it refuses with NaN (JAX's CPU kernels' answer)."""
    try:
        with np.errstate(all="ignore"):
            return function(operand)
    except np.linalg.LinAlgError:
        pass
    matrices = operand.reshape((math.prod(operand.shape[:-2]),) + operand.shape[-2:])
    sample = function(np.eye(*operand.shape[-2:], dtype=operand.dtype))
    template = sample if isinstance(sample, tuple) else (sample,)
    outputs = [np.full((len(matrices),) + item.shape, np.nan, item.dtype) for item in template]
    for index, matrix in enumerate(matrices):
        try:
            with np.errstate(all="ignore"):
                results = function(matrix)
        except np.linalg.LinAlgError:
            continue
        for output, item in zip(outputs, results if isinstance(results, tuple) else (results,)):
            output[index] = item
    shaped = tuple(output.reshape(operand.shape[:-2] + output.shape[1:]) for output in outputs)
    return shaped if isinstance(sample, tuple) else shaped[0]


@reference_impls.register("cholesky")
def _cholesky_impl(attrs, operand):
    """The lower factor, from the lower triangle (potrf); the upper triangle is zero, also in
    the NaN factor of a matrix that is not positive definite (as JAX's)."""
    factor = _per_matrix_or_nan(np.linalg.cholesky, operand).astype(operand.dtype)
    return (np.tril(factor) if factor.size else factor,)


def substitute(a: np.ndarray, b: np.ndarray, lower: bool, unit_diagonal: bool) -> np.ndarray:
    """``x`` with ``a @ x = b`` for triangular ``a`` (only its ``lower`` or upper triangle is
    read): substitution one row at a time, vectorised over the batch and the columns of b."""
    size = a.shape[-1]
    solution = np.zeros(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + b.shape[-2:], b.dtype)
    with np.errstate(all="ignore"):
        for row in range(size) if lower else range(size - 1, -1, -1):
            known = slice(0, row) if lower else slice(row + 1, size)
            value = b[..., row, :] - np.matmul(a[..., row, None, known], solution[..., known, :])[..., 0, :]
            solution[..., row, :] = value if unit_diagonal else value / a[..., row, row, None]
    return solution


@reference_impls.register("triangular_solve")
def _triangular_solve_impl(attrs, a, b):
    lower = attrs["lower"]
    if attrs["transpose_a"]:
        a, lower = np.swapaxes(a, -1, -2), not lower
    if attrs["left_side"]:
        return (substitute(a, b, lower, attrs["unit_diagonal"]),)
    # x op(a) = b  <=>  op(a)^T x^T = b^T
    solution = substitute(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2), not lower, attrs["unit_diagonal"])
    return (np.ascontiguousarray(np.swapaxes(solution, -1, -2)),)


def pivot_magnitude(values: np.ndarray) -> np.ndarray:
    """The magnitude LAPACK's getrf pivots by (i?amax): ``|x|`` of a real number, ``|Re x| +
    |Im x|`` of a complex one."""
    if np.iscomplexobj(values):
        return np.abs(values.real) + np.abs(values.imag)
    return np.abs(values)


def factor_lu(operand: np.ndarray):
    """LU with partial pivoting (LAPACK's getrf: the first row of largest magnitude pivots, the
    column below is scaled by the pivot's reciprocal; a zero pivot leaves it as it is)."""
    rows, columns = operand.shape[-2:]
    batch = operand.shape[:-2]
    packed = operand.reshape((math.prod(batch), rows, columns)).copy()
    count, steps = packed.shape[0], min(rows, columns)
    every = np.arange(count)
    pivots = np.zeros((count, steps), np.int32)
    permutation = np.broadcast_to(np.arange(rows, dtype=np.int32), (count, rows)).copy()
    with np.errstate(all="ignore"):
        for step in range(steps):
            pivot = step + np.argmax(pivot_magnitude(packed[:, step:, step]), axis=1) if count else np.zeros(0, int)
            pivots[:, step] = pivot
            packed[every, step], packed[every, pivot] = packed[every, pivot], packed[every, step].copy()
            permutation[every, step], permutation[every, pivot] = permutation[every, pivot], permutation[every, step]
            head = packed[:, step, step]
            scale = np.where(head != 0, np.reciprocal(np.where(head != 0, head, 1)), 1).astype(packed.dtype)
            packed[:, step + 1:, step] *= scale[:, None]
            packed[:, step + 1:, step + 1:] -= packed[:, step + 1:, step, None] * packed[:, step, None, step + 1:]
    return (packed.reshape(operand.shape), pivots.reshape(batch + (steps,)),
            permutation.reshape(batch + (rows,)))


@reference_impls.register("lu")
def _lu_impl(attrs, operand):
    return factor_lu(operand)


@reference_impls.register("qr")
def _qr_impl(attrs, operand):
    """Householder QR (geqrf, then orgqr for q): numpy's, so R's diagonal may be negative."""
    mode = "complete" if attrs["full_matrices"] else "reduced"
    q, r = np.linalg.qr(operand, mode=mode)
    return q.astype(operand.dtype), r.astype(operand.dtype)


@reference_impls.register("eigh")
def _eigh_impl(attrs, operand):
    uplo = "L" if attrs["lower"] else "U"
    values, vectors = _per_matrix_or_nan(lambda matrix: np.linalg.eigh(matrix, UPLO=uplo), operand)
    return vectors.astype(operand.dtype), values.astype(operand.real.dtype)


@reference_impls.register("svd")
def _svd_impl(attrs, operand):
    full, compute_uv = attrs["full_matrices"], attrs["compute_uv"]
    if not compute_uv:
        values = _per_matrix_or_nan(lambda matrix: np.linalg.svd(matrix, compute_uv=False), operand)
        return (values.astype(operand.real.dtype),)
    u, values, vh = _per_matrix_or_nan(lambda matrix: np.linalg.svd(matrix, full_matrices=full), operand)
    return values.astype(operand.real.dtype), u.astype(operand.dtype), vh.astype(operand.dtype)
