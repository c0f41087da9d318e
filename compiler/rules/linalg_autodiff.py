"""The linear algebra ops' derivative rules, the standard ones JAX uses: each tangent is built
from the primal results with products, triangular solves and masks, all linear in the tangent,
so reverse mode transposes them (triangular_solve is linear in its right-hand side; its
transpose solves with the transposed matrix). Integer results (LU's pivots) carry no tangent.
QR with full_matrices on a tall matrix follows JAX's rule (arXiv:2409.13374, eqs. 32-33); SVD with
full_matrices on a non-square one has no derivative in JAX either (NotImplementedError, as JAX
raises). On complex matrices the rules are JAX's too: conjugate transposes where a real rule
has transposes, real parts of the diagonals that move real eigenvalues and singular values."""

from __future__ import annotations

from ..frontend import lax_complex
from ..frontend import lax_linalg as linalg
from ..frontend import lax_ops as lax
from ..frontend.autodiff.evaluate import emit
from ..frontend.autodiff.registries import LinearInput, add_tangents, type_of
from ..frontend.lax_linalg import adjoint, conjugate, diagonal, identity_like, matmul, transpose_matrix, triangle
from ..frontend.operands import shape_of
from ..frontend.scipy import linalg_solvers
from ..frontend.trace import bind
from ..tables import jvp_rules, transpose_rules


def _solve(a, b, **flags):
    attrs = {"left_side": True, "lower": True, "transpose_a": False, "unit_diagonal": False, **flags}
    return emit_triangular_solve(a, b, attrs)


def emit_triangular_solve(a, b, attrs):
    return bind("triangular_solve", [a, b], attrs)[0]


@jvp_rules.register("cholesky")
def _cholesky(op, primals, tangents):
    (factor,) = emit(op, primals)
    (tangent,) = tangents
    if tangent is None:
        return [factor], [None]
    # L^{-1} sym(dA) L^{-H}, of which dL = L phi(.) with phi the lower triangle, diagonal halved
    middle = _solve(conjugate(factor), linalg.symmetrize(tangent), left_side=False, transpose_a=True)
    middle = _solve(factor, middle)
    phi = lax.add(triangle(middle, lower=True, offset=-1), lax.mul(lax.mul(middle, identity_like(middle)), 0.5))
    return [factor], [matmul(factor, phi)]


@jvp_rules.register("triangular_solve")
def _triangular_solve(op, primals, tangents):
    a, b = primals
    tangent_a, tangent_b = tangents
    (solution,) = emit(op, primals)
    attrs = op.attrs
    from_b = None if tangent_b is None else emit(op, [a, tangent_b])[0]
    from_a = None
    if tangent_a is not None:
        # d(op(a)^{-1} b) = -op(a)^{-1} op(da) x, da restricted to the triangle the op reads
        read = triangle(tangent_a, attrs["lower"], offset=(-1 if attrs["lower"] else 1) if attrs["unit_diagonal"] else 0)
        changed = transpose_matrix(read) if attrs["transpose_a"] else read
        product = matmul(changed, solution) if attrs["left_side"] else matmul(solution, changed)
        from_a = emit(op, [a, lax.neg(product)])[0]
    return [solution], [add_tangents(from_b, from_a)]


@transpose_rules.register("triangular_solve")
def _triangular_solve_transpose(op, cotangents, operands):
    a, b = operands
    if isinstance(a, LinearInput):
        raise AssertionError("autodiff internal error: triangular_solve is linear in b only")
    (cotangent,) = cotangents
    if cotangent is None:
        return [None, None]
    attrs = {**op.attrs, "transpose_a": not op.attrs["transpose_a"]}
    return [None, emit_triangular_solve(a, cotangent, attrs)]


def _permute_rows(permutation, x):
    """``x[..., permutation, :]`` as a product with the permutation's one-hot matrix."""
    size = shape_of(permutation)[-1]
    rank = len(shape_of(x))
    square = shape_of(permutation) + (size,)
    spread = lax.broadcast_in_dim(permutation, square, tuple(range(rank - 1)))
    one_hot = lax.convert_element_type(lax.eq(spread, lax.broadcasted_iota("i32", square, rank - 1)),
                                       type_of(x).dtype)
    return matmul(one_hot, x)


def _pad_matrix(x, rows: int, columns: int):
    """``x`` with zero rows and columns appended to make its matrix dims ``rows x columns``."""
    shape = shape_of(x)
    config = [(0, 0, 0)] * (len(shape) - 2) + [(0, rows - shape[-2], 0), (0, columns - shape[-1], 0)]
    return lax.pad(x, 0.0, config)


def _sliced(x, rows: int, columns: int):
    shape = shape_of(x)
    return lax.slice(x, (0,) * len(shape), shape[:-2] + (rows, columns))


@jvp_rules.register("lu")
def _lu(op, primals, tangents):
    packed, pivots, permutation = emit(op, primals)
    (tangent,) = tangents
    if tangent is None:
        return [packed, pivots, permutation], [None, None, None]
    rows, columns = shape_of(packed)[-2:]
    inner = min(rows, columns)
    # L (rows x rows, unit lower) and U (columns x columns, the identity past the inner rows)
    lower = _pad_matrix(triangle(_sliced(packed, rows, inner), lower=True, offset=-1), rows, rows)
    lower = lax.add(lower, identity_like(lower))
    upper = _pad_matrix(triangle(_sliced(packed, inner, columns), lower=False), columns, columns)
    eye = identity_like(upper)
    tail = lax.sub(eye, _pad_matrix(_sliced(eye, inner, inner), columns, columns))
    upper = lax.add(upper, tail)
    # L^{-1} P dA U^{-1}: its strict lower part moves L, the rest moves U
    scaled = _solve(lower, _permute_rows(permutation, tangent), unit_diagonal=True)
    scaled = _solve(upper, scaled, left_side=False, lower=False)
    change = lax.add(matmul(lower, triangle(scaled, lower=True, offset=-1)),
                     matmul(triangle(scaled, lower=False), upper))
    return [packed, pivots, permutation], [change, None, None]


def _qr_square(q, r, tangent):
    """dQ, dR of a matrix with at least as many rows as columns (reduced)."""
    scaled = _solve(r, tangent, left_side=False, lower=False)
    projected = matmul(adjoint(q), scaled)
    below = triangle(projected, lower=True, offset=-1)
    skew = lax.sub(below, adjoint(below))
    if lax_complex.is_complex_operand(projected):
        # the diagonal's imaginary part, which a skew-Hermitian matrix may have
        imaginary = lax.sub(projected, _like(_real(projected), projected))
        skew = lax.add(skew, lax.mul(identity_like(projected), imaginary))
    change_q = lax.add(matmul(q, lax.sub(skew, projected)), scaled)
    change_r = matmul(lax.sub(projected, skew), r)
    return change_q, change_r


def _rows(x, start: int, stop: int):
    shape = shape_of(x)
    return lax.slice(x, (0,) * (len(shape) - 2) + (start, 0), shape[:-2] + (stop, shape[-1]))


def _qr_full_tall(q, r, tangent, rows: int, columns: int):
    """dQ, dR of a tall matrix's complete QR (JAX's rule, arXiv:2409.13374 eqs. 32-33): the
    reduced derivative for Q's first n columns; the other m - n from Q's orthogonality, through
    Z = Q_pn (Q_nn - I)^-1; R's extra rows are zero."""
    batch = shape_of(tangent)[:-2]
    thin_q = _sliced(q, rows, columns)
    change_thin, change_r = _qr_square(thin_q, _sliced(r, columns, columns), tangent)
    top, bottom = _rows(thin_q, 0, columns), _rows(thin_q, columns, rows)
    change_top, change_bottom = _rows(change_thin, 0, columns), _rows(change_thin, columns, rows)
    rest_q = lax.slice(q, (0,) * len(batch) + (0, columns), batch + (rows, rows))
    shifted = lax.sub(top, identity_like(top))
    packed, _, permutation = linalg_solvers.factor(adjoint(shifted))
    z = adjoint(linalg_solvers.lu_solve(packed, permutation, adjoint(bottom)))
    correction = lax.sub(change_bottom, matmul(z, change_top))
    change_rest = lax.sub(matmul(change_thin, adjoint(z)),
                          matmul(lax.add(thin_q, matmul(rest_q, z)), adjoint(correction)))
    change_q = lax.concatenate([change_thin, change_rest], len(batch) + 1)
    zeros = lax.full(batch + (rows - columns, columns), 0.0, type_of(change_r).dtype)
    return change_q, lax.concatenate([change_r, zeros], len(batch))


@jvp_rules.register("qr")
def _qr(op, primals, tangents):
    q, r = emit(op, primals)
    (tangent,) = tangents
    if tangent is None:
        return [q, r], [None, None]
    rows, columns = shape_of(primals[0])[-2:]
    if rows >= columns:
        if op.attrs["full_matrices"] and rows > columns:
            return [q, r], list(_qr_full_tall(q, r, tangent, rows, columns))
        return [q, r], list(_qr_square(q, r, tangent))
    # a wide matrix [A1 A2] with A1 square: Q and R1 move with A1, R2 = Q^H A2
    batch = shape_of(tangent)[:-2]
    left = _sliced(r, rows, rows)
    change_q, change_left = _qr_square(q, left, _sliced(tangent, rows, rows))
    start = (0,) * len(batch) + (0, rows)
    right = lax.slice(primals[0], start, batch + (rows, columns))
    tangent_right = lax.slice(tangent, start, batch + (rows, columns))
    change_right = lax.add(matmul(adjoint(change_q), right), matmul(adjoint(q), tangent_right))
    return [q, r], [change_q, lax.concatenate([change_left, change_right], len(batch) + 1)]


def _like(x, model):
    """``x`` in ``model``'s dtype (real factors of complex products)."""
    return lax.convert_element_type(x, type_of(model).dtype)


def _real(x):
    """The real part of a complex ``x``; a real ``x`` as it is."""
    return lax_complex.real(x) if lax_complex.is_complex_operand(x) else x


def pairwise_inverse(values, plus: bool):
    """``F[i, j] = 1 / (v_j - v_i)`` (or ``1 / (v_j^2 - v_i^2)`` when ``plus``) off the diagonal,
    zero on it."""
    shape = shape_of(values)
    rank = len(shape)
    square = shape + (shape[-1],)
    by_column = lax.broadcast_in_dim(values, square, tuple(range(rank - 1)) + (rank,))
    by_row = lax.broadcast_in_dim(values, square, tuple(range(rank)))
    difference = lax.sub(by_column, by_row)
    if plus:
        difference = lax.mul(difference, lax.add(by_column, by_row))
    eye = identity_like(difference)
    return lax.sub(lax.div(lax.full(square, 1.0, type_of(values).dtype), lax.add(difference, eye)), eye)


@jvp_rules.register("eigh")
def _eigh(op, primals, tangents):
    vectors, values = emit(op, primals)
    (tangent,) = tangents
    if tangent is None:
        return [vectors, values], [None, None]
    rotated = matmul(matmul(adjoint(vectors), tangent), vectors)
    pairwise = _like(pairwise_inverse(values, plus=False), rotated)
    change_vectors = matmul(vectors, lax.mul(pairwise, rotated))
    return [vectors, values], [change_vectors, _real(diagonal(rotated))]


@jvp_rules.register("svd")
def _svd(op, primals, tangents):
    outputs = emit(op, primals)
    (tangent,) = tangents
    if tangent is None:
        return outputs, [None] * len(outputs)
    rows, columns = shape_of(primals[0])[-2:]
    compute_uv = op.attrs["compute_uv"]
    if compute_uv and op.attrs["full_matrices"] and rows != columns:
        # NOTE: JAX's error, word for word (the derivative is not unique there)
        raise NotImplementedError("Singular value decomposition JVP not implemented for full matrices")
    reduced = {"full_matrices": False, "compute_uv": True}
    values, u, vh = outputs if compute_uv else bind("svd", [primals[0]], reduced)
    v = adjoint(vh)
    rotated = matmul(matmul(adjoint(u), tangent), v)
    change_values = _real(diagonal(rotated))
    if not compute_uv:
        return outputs, [change_values]
    pairwise = _like(pairwise_inverse(values, plus=True), rotated)
    scale = _like(values, rotated)
    scaled_right, scaled_left = linalg.columns_times(rotated, scale), linalg.rows_times(scale, rotated)
    inner_u = lax.mul(pairwise, lax.add(scaled_right, adjoint(scaled_right)))
    if lax_complex.is_complex_operand(rotated):
        inner_u = lax.add(inner_u, _phase_change(rotated, values))
    change_u = matmul(u, inner_u)
    change_v = matmul(v, lax.mul(pairwise, lax.add(scaled_left, adjoint(scaled_left))))
    inverse = lax.div(lax.full(shape_of(values), 1.0, type_of(scale).dtype), scale)
    if rows > columns:
        moved = matmul(tangent, v)
        change_u = lax.add(change_u, linalg.columns_times(lax.sub(moved, matmul(u, matmul(adjoint(u), moved))),
                                                         inverse))
    if columns > rows:
        moved = matmul(adjoint(tangent), u)
        change_v = lax.add(change_v, linalg.columns_times(lax.sub(moved, matmul(v, matmul(vh, moved))), inverse))
    return outputs, [change_values, change_u, adjoint(change_v)]


def _phase_change(rotated, values):
    """The part of dU a complex SVD's free phases take (JAX's ``(dS - dS^H) / 2`` on the diagonal
    over the singular value, zero where it is zero)."""
    zeros = lax.convert_element_type(lax.eq(values, 0.0), type_of(values).dtype)
    inverse = lax.sub(lax.div(lax.full(shape_of(values), 1.0, type_of(values).dtype), lax.add(values, zeros)), zeros)
    skew = lax.mul(lax.sub(rotated, adjoint(rotated)), 0.5)
    return lax.mul(skew, _like(linalg.diagonal_matrix(inverse), rotated))
