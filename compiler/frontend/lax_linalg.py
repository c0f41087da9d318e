"""meshjit.lax.linalg: the linear algebra primitives by jax.lax.linalg's names (cholesky,
triangular_solve, lu, qr, eigh, svd), each binding the IR op of the same name (ir/ops/linalg.py),
and the batched matrix helpers (products, transposes, triangles, diagonals) built from lax ops
that the front end and the ops' derivative rules share. Every function acts on the last two
dims; the dims before them are batch dims."""

from __future__ import annotations

from meshjit.ir.dtypes import to_numpy

from . import lax_complex
from . import lax_ops as lax
from .operands import as_operand, dtype_of, shape_of
from .trace import bind

# NOTE: the public names, re-exported by the facade as ``meshjit.lax.linalg``.
__all__ = ("cholesky", "eig", "eigh", "hessenberg", "lu", "qr", "schur", "svd", "triangular_solve")


def _float_matrix(function: str, x):
    x = as_operand(x)
    if len(shape_of(x)) < 2:
        raise TypeError(f"Input 0 to {function} must have rank at least 2, but got shape={shape_of(x)}")
    if dtype_of(x).name not in ("f32", "f64", "c64", "c128"):
        raise TypeError(f"{function}: argument must be a float or complex array, got {dtype_of(x).name}")
    return x


def _square(function: str, x):
    x = _float_matrix(function, x)
    rows, columns = shape_of(x)[-2:]
    if rows != columns:
        raise ValueError(f"{function}: argument must be a square matrix (or a stack of them), got shape "
                         f"{shape_of(x)}")
    return x


def symmetrize(x):
    """``(x + x^H) / 2`` (``x^H`` the conjugate transpose; the transpose of a real ``x``)."""
    return lax.div(lax.add(x, adjoint(x)), 2.0)


def cholesky(x, *, symmetrize_input: bool = True):
    """The lower Cholesky factor of each matrix; NaN for one that is not positive definite."""
    x = _square("cholesky", x)
    return bind("cholesky", [symmetrize(x) if symmetrize_input else x])[0]


def triangular_solve(a, b, *, left_side: bool = False, lower: bool = False, transpose_a: bool = False,
                     conjugate_a: bool = False, unit_diagonal: bool = False):
    """``x`` with ``op(a) @ x = b`` (``left_side``) or ``x @ op(a) = b``, ``op`` the transpose
    when ``transpose_a``; only ``a``'s ``lower`` (or upper) triangle is read. ``a`` and ``b``
    have the same batch dims; ``conjugate_a`` reads the conjugate of a complex ``a``."""
    a, b = _square("triangular_solve", a), _float_matrix("triangular_solve", b)
    if conjugate_a:
        a = conjugate(a)
    attrs = {"left_side": bool(left_side), "lower": bool(lower), "transpose_a": bool(transpose_a),
             "unit_diagonal": bool(unit_diagonal)}
    return bind("triangular_solve", [a, b], attrs)[0]


def lu(x):
    """``(lu, pivots, permutation)``: LU with partial pivoting of each matrix (``m x n``): the
    packed factors, the row each step exchanged with, and the permutation of the rows."""
    return tuple(bind("lu", [_float_matrix("lu", x)]))


def qr(x, *, pivoting: bool = False, full_matrices: bool = True):
    """``(q, r)`` with ``x = q @ r``, ``q`` orthonormal (``m x m``, or ``m x min(m, n)`` unless
    ``full_matrices``) and ``r`` upper triangular."""
    if pivoting:
        raise ValueError("qr: pivoting=True is not supported by meshjit (JAX's CPU backend supports it)")
    return tuple(bind("qr", [_float_matrix("qr", x)], {"full_matrices": bool(full_matrices)}))


def eigh(x, *, lower: bool = True, symmetrize_input: bool = True, sort_eigenvalues: bool = True,
         subset_by_index=None):
    """``(v, w)``: the eigenvectors (columns of ``v``) and ascending eigenvalues ``w`` of each
    symmetric matrix, read from its ``lower`` (or upper) triangle."""
    x = _square("eigh", x)
    if subset_by_index is not None:
        raise ValueError("eigh: subset_by_index is not supported by meshjit (JAX supports it on TPU only)")
    return tuple(bind("eigh", [symmetrize(x) if symmetrize_input else x], {"lower": bool(lower)}))


def eig(x, *, compute_left_eigenvectors: bool = True, compute_right_eigenvectors: bool = True,
        enable_eigvec_derivs: bool = False, implementation=None, use_magma=None):
    """``[w, vl, vr]``: the eigenvalues of each general square matrix and, as asked, its left
    (``vl^H x = w vl^H``) and right (``x vr = vr w``) eigenvectors, all complex, normalised as
    LAPACK's geev (unit 2-norm, largest component real)."""
    x = as_operand(x)
    shape = shape_of(x)
    if len(shape) < 2:
        raise TypeError(f"Input 0 to eig must have rank at least 2, but got shape={shape}")
    if dtype_of(x).name not in ("f32", "f64", "c64", "c128"):
        raise TypeError(f"eig does not accept dtype {to_numpy(dtype_of(x).name).name} at position 0. Accepted dtypes "
                        "at position 0 are subtypes of floating, complexfloating.")
    if shape[-1] != shape[-2]:
        raise ValueError(f"The input to eig must be a square matrix. Got shape {shape[-2:]}.")
    if implementation is not None and getattr(implementation, "name", implementation) not in ("LAPACK", "lapack"):
        raise ValueError("Only the lapack implementation is supported on CPU.")
    attrs = {"compute_left_eigenvectors": bool(compute_left_eigenvectors),
             "compute_right_eigenvectors": bool(compute_right_eigenvectors),
             "enable_eigvec_derivs": bool(enable_eigvec_derivs)}
    return list(bind("eig", [x], attrs))


def hessenberg(a):
    """``[packed, taus]``: the Hessenberg reduction of each square matrix in LAPACK's gehrd form
    (``H`` on and above the subdiagonal, the Householder vectors below it, and their ``tau``)."""
    return list(bind("hessenberg", [_square("hessenberg", a)]))


def schur(x, *, compute_schur_vectors: bool = True, sort_eig_vals: bool = False, select_callable=None):
    """``[T, Z]``: the Schur form of each square matrix (quasi-upper triangular with 2 x 2
    blocks for complex conjugate pairs of a real matrix, upper triangular for a complex one)
    and, with ``compute_schur_vectors``, the unitary ``Z`` with ``x = Z T Z^H``."""
    if sort_eig_vals or select_callable is not None:
        raise ValueError("schur: sorting the eigenvalues (sort_eig_vals, select_callable) is not supported by meshjit")
    return list(bind("schur", [_square("schur", x)], {"compute_schur_vectors": bool(compute_schur_vectors)}))


def svd(x, *, full_matrices: bool = True, compute_uv: bool = True, subset_by_index=None, algorithm=None):
    """``(u, s, vh)`` with ``x = u @ diag(s) @ vh`` and ``s`` descending, or ``s`` alone."""
    x = _float_matrix("svd", x)
    if subset_by_index is not None:
        raise ValueError("svd: subset_by_index is not supported by meshjit")
    results = bind("svd", [x], {"full_matrices": bool(full_matrices), "compute_uv": bool(compute_uv)})
    if not compute_uv:
        return results[0]
    values, u, vh = results
    return u, values, vh


# --- batched matrix helpers ----------------------------------------------------------------------


def conjugate(x):
    """The complex conjugate of a complex ``x``; a real ``x`` as it is."""
    return lax_complex.conj(x) if lax_complex.is_complex_operand(x) else x


def adjoint(x):
    """The conjugate transpose of the last two dims (the transpose of a real ``x``)."""
    return conjugate(transpose_matrix(x))


def transpose_matrix(x):
    """``x`` with its last two dims exchanged."""
    rank = len(shape_of(x))
    return lax.transpose(x, tuple(range(rank - 2)) + (rank - 1, rank - 2))


def matmul(a, b):
    """The matrix product of the last two dims; both have the same batch dims."""
    rank = len(shape_of(a))
    batch = tuple(range(rank - 2))
    return lax.dot_general(a, b, (((rank - 1,), (rank - 2,)), (batch, batch)))


def _positions(shape, dimension: int):
    return lax.broadcasted_iota("i32", shape, dimension)


def triangle(x, lower: bool, offset: int = 0):
    """``x`` with the entries outside its lower (``tril``) or upper (``triu``) triangle, shifted
    by ``offset`` diagonals, set to zero."""
    shape = shape_of(x)
    rank = len(shape)
    rows, columns = _positions(shape, rank - 2), _positions(shape, rank - 1)
    shifted = lax.add(rows, offset)
    keep = lax.le(columns, shifted) if lower else lax.ge(columns, shifted)
    return lax.select(keep, x, lax.full(shape, 0.0, dtype_of(x).name))


def identity_like(x):
    """The identity matrix of ``x``'s (square) matrix dims, broadcast over its batch dims."""
    shape = shape_of(x)
    rank = len(shape)
    same = lax.eq(_positions(shape, rank - 2), _positions(shape, rank - 1))
    return lax.convert_element_type(same, dtype_of(x).name)


def diagonal(x):
    """The main diagonal of each matrix (``min(m, n)`` entries): every ``n + 1``-th entry of
    the row-major matrix, read exactly (no products with an identity, which would turn an
    infinite entry off the diagonal into NaN)."""
    shape = shape_of(x)
    batch, (rows, columns) = shape[:-2], shape[-2:]
    count = min(rows, columns)
    flat = lax.reshape(x, batch + (rows * columns,))
    limit = (count - 1) * (columns + 1) + 1 if count else 0
    return lax.slice(flat, (0,) * len(flat.shape), batch + (limit,), (1,) * len(batch) + (columns + 1,))


def diagonal_matrix(vector):
    """Square matrices with ``vector`` (its last dim) on their diagonals."""
    shape = shape_of(vector)
    rank = len(shape)
    square = shape + (shape[-1],)
    spread = lax.broadcast_in_dim(vector, square, tuple(range(rank - 1)) + (rank,))
    return lax.mul(spread, identity_like(spread))


def rows_times(vector, x):
    """``diag(vector) @ x``: each row of ``x`` scaled by an entry of ``vector``."""
    rank = len(shape_of(x))
    return lax.mul(lax.broadcast_in_dim(vector, shape_of(x), tuple(range(rank - 1))), x)


def columns_times(x, vector):
    """``x @ diag(vector)``: each column of ``x`` scaled by an entry of ``vector``."""
    rank = len(shape_of(x))
    return lax.mul(x, lax.broadcast_in_dim(vector, shape_of(x), tuple(range(rank - 2)) + (rank - 1,)))
