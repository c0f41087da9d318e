"""The Hessenberg reduction (``hessenberg``) and the Schur decomposition (``schur``) of square
matrices, as ``jax.lax.linalg`` names them; part of the linalg family (linalg.py imports it).
numpy has neither, so the references are the textbook algorithms: Householder reflections in
LAPACK's gehrd conventions (``H = I - tau v v^H``, ``v[0] = 1``, ``beta = -sign(Re alpha) ||x||``),
vectorised over the batch; then, one matrix at a time, Francis's double-shift QR iteration on
the Hessenberg form for a real Schur form (2 x 2 blocks for complex conjugate pairs only), or
the single-shift (Wilkinson) QR iteration for a complex one. A matrix whose iteration does not
converge gives NaNs, as JAX's CPU kernels do."""

from __future__ import annotations

import math

import numpy as np

from ..reference import reference_impls
from ..shape_rules import COMPLEX, WIDE_FLOATS, bool_attr, expect_dtype, expect_operand_count, fail, shape_rules

OPS = ("hessenberg", "schur")


def _square(op, operand):
    expect_dtype(op, "operand", operand, WIDE_FLOATS + COMPLEX)
    if operand.rank < 2 or operand.shape[-1] != operand.shape[-2]:
        fail(op, f"operand {operand} must be a square matrix (or a batch of them) in its last two dims")
    return operand.shape[-1]


@shape_rules.register("hessenberg")
def _hessenberg(op, operands, attrs, regions, meshes):
    """The packed reduction (H on and above the subdiagonal, the reflectors below) and the
    reflectors' ``tau`` (``n - 1`` of them)."""
    expect_operand_count(op, operands, 1)
    size = _square(op, operands[0])
    return operands[0], operands[0].with_shape(operands[0].shape[:-2] + (max(size - 1, 0),))


@shape_rules.register("schur")
def _schur(op, operands, attrs, regions, meshes):
    """``T`` (quasi-upper triangular for a real matrix, upper triangular for a complex one) and,
    with ``compute_schur_vectors``, the unitary ``Z`` with ``a = Z T Z^H``."""
    expect_operand_count(op, operands, 1)
    _square(op, operands[0])
    vectors = bool_attr(op, attrs, "compute_schur_vectors")
    return (operands[0], operands[0]) if vectors else (operands[0],)


# --- Hessenberg reduction ------------------------------------------------------------------------


def _reflector(column: np.ndarray):
    """LAPACK's larfg on each row of ``column`` (``[batch, m]``): ``(beta, tau, v)`` with
    ``(I - tau v v^H)^H column = beta e_1``, ``v[0] = 1``; ``tau = 0`` when nothing is to do."""
    alpha, rest = column[:, 0], column[:, 1:]
    rest_norm = np.sqrt(np.sum(np.abs(rest) ** 2, axis=1))
    keep = (rest_norm == 0) & (np.imag(alpha) == 0)
    beta = -np.copysign(np.sqrt(np.abs(alpha) ** 2 + rest_norm ** 2), np.real(alpha))
    safe_beta = np.where(keep, 1, beta)
    tau = np.where(keep, 0, (safe_beta - alpha) / safe_beta)
    scale = np.where(keep, 0, 1 / np.where(keep, 1, alpha - safe_beta))
    vectors = np.concatenate([np.ones_like(alpha)[:, None], rest * scale[:, None]], axis=1)
    return np.where(keep, alpha, beta), tau, vectors


def reduce_to_hessenberg(matrices: np.ndarray):
    """``(packed, taus)`` of a batch ``[batch, n, n]``: gehrd's output."""
    packed = matrices.copy()
    count, size = packed.shape[0], packed.shape[-1]
    taus = np.zeros((count, max(size - 1, 0)), packed.dtype)
    # NOTE: the last step reflects one entry: the identity for a real one, a phase that makes a
    # complex one real (as zgehrd)
    for step in range(size - 1):
        beta, tau, vector = _reflector(packed[:, step + 1:, step])
        taus[:, step] = tau
        # A := H^H A H, H = I - tau v v^H, on the trailing rows and all columns
        right = packed[:, :, step + 1:]
        right -= (tau[:, None] * (right @ vector[:, :, None])[:, :, 0])[:, :, None] * np.conj(vector)[:, None, :]
        below = packed[:, step + 1:, step + 1:]
        product = (np.conj(vector)[:, None, :] @ below)[:, 0, :]
        below -= np.conj(tau)[:, None, None] * vector[:, :, None] * product[:, None, :]
        packed[:, step + 1, step] = beta
        packed[:, step + 2:, step] = vector[:, 1:]
    return packed, taus


def hessenberg_parts(packed: np.ndarray, taus: np.ndarray):
    """``(H, Q)`` with ``a = Q H Q^H`` from gehrd's packed form (a batch)."""
    count, size = packed.shape[0], packed.shape[-1]
    upper = np.triu(packed, -1)
    unitary = np.broadcast_to(np.eye(size, dtype=packed.dtype), packed.shape).copy()
    for step in range(size - 1):
        vector = np.concatenate([np.ones((count, 1), packed.dtype), packed[:, step + 2:, step]], axis=1)
        block = unitary[:, :, step + 1:]
        block -= (taus[:, step, None] * (block @ vector[:, :, None])[:, :, 0])[:, :, None] * np.conj(vector)[:, None, :]
    return upper, unitary


@reference_impls.register("hessenberg")
def _hessenberg_impl(attrs, operand):
    size = operand.shape[-1]
    packed, taus = reduce_to_hessenberg(operand.reshape((-1, size, size)))
    return packed.reshape(operand.shape), taus.reshape(operand.shape[:-2] + (max(size - 1, 0),))


# --- Schur decomposition -------------------------------------------------------------------------

_MAX_SWEEPS = 30


def _negligible(h: np.ndarray, row: int) -> bool:
    """Whether the subdiagonal entry ``h[row, row - 1]`` is negligible next to its neighbours."""
    eps = np.finfo(h.dtype).eps
    return abs(h[row, row - 1]) <= eps * (abs(h[row - 1, row - 1]) + abs(h[row, row]))


def _active_start(h: np.ndarray, high: int) -> int:
    """The first row of the unreduced block ending at ``high`` (its subdiagonal entry zeroed)."""
    low = high
    while low > 0 and not _negligible(h, low):
        low -= 1
    if low > 0:
        h[low, low - 1] = 0
    return low


def _rotate(h, q, first: int, rotation: np.ndarray, rows_to: int):
    """``h := G h G^H`` on rows and columns ``first, first + 1`` (rows ``0..rows_to`` of the
    columns), and ``q := q G^H``."""
    pair = slice(first, first + 2)
    h[pair, :] = rotation @ h[pair, :]
    h[:rows_to + 1, pair] = h[:rows_to + 1, pair] @ np.conj(rotation.T)
    q[:, pair] = q[:, pair] @ np.conj(rotation.T)


def _givens(x, y) -> np.ndarray:
    """The unitary ``G`` with ``G [x, y]^T = [r, 0]^T``."""
    norm = math.hypot(abs(x), abs(y))
    if norm == 0:
        return np.eye(2, dtype=np.result_type(x, y))
    if x == 0:
        cosine, sine = 0.0, np.conj(y) / abs(y)
    else:
        cosine, sine = abs(x) / norm, (x / abs(x)) * np.conj(y) / norm
    return np.array([[cosine, sine], [-np.conj(sine), cosine]], dtype=np.result_type(x, y, np.float32))


def _wilkinson_shift(h, high: int):
    """The eigenvalue of the trailing 2 x 2 block nearer its last diagonal entry."""
    a, b, c, d = h[high - 1, high - 1], h[high - 1, high], h[high, high - 1], h[high, high]
    half = (a - d) / 2
    root = np.sqrt(half * half + b * c + 0j)
    near = d - b * c / (half + root if abs(half + root) >= abs(half - root) else half - root) \
        if (half + root != 0 or half - root != 0) else d
    return near


def _complex_schur(h: np.ndarray, q: np.ndarray) -> None:
    """The complex Schur form of a complex Hessenberg ``h``, in place, ``q`` accumulating."""
    size = h.shape[0]
    high, sweeps = size - 1, 0
    while high > 0:
        low = _active_start(h, high)
        if low == high:
            high, sweeps = high - 1, 0
            continue
        sweeps += 1
        if sweeps > _MAX_SWEEPS * size:
            raise np.linalg.LinAlgError("schur: the QR iteration did not converge")
        shift = _wilkinson_shift(h, high)
        if sweeps % 10 == 0:
            # an exceptional shift breaks cycles
            shift = h[high, high] + abs(h[high, high - 1]) * 0.75
        x, y = h[low, low] - shift, h[low + 1, low]
        for step in range(low, high):
            rotation = _givens(x, y)
            _rotate(h, q, step, rotation, min(step + 2, high))
            if step > low:
                h[step + 1, step - 1] = 0
            if step < high - 1:
                x, y = h[step + 1, step], h[step + 2, step]


def _householder3(vector: np.ndarray) -> np.ndarray:
    """The reflection ``P = I - 2 u u^T / u^T u`` that maps ``vector`` onto a multiple of
    ``e_1`` (the identity for a zero vector)."""
    norm = np.linalg.norm(vector)
    if norm == 0:
        return np.eye(len(vector))
    u = vector.copy()
    u[0] += math.copysign(norm, vector[0])
    return np.eye(len(vector)) - 2 * np.outer(u, u) / (u @ u)


def _reflect(h, q, first: int, reflection: np.ndarray, column_from: int, rows_to: int):
    """``h := P h P`` on rows and columns ``first ..`` (the reflection's size), ``q := q P``."""
    span = slice(first, first + len(reflection))
    h[span, column_from:] = reflection @ h[span, column_from:]
    h[:rows_to + 1, span] = h[:rows_to + 1, span] @ reflection
    q[:, span] = q[:, span] @ reflection


def _francis_step(h, q, low: int, high: int, sweeps: int) -> None:
    """One double-shift QR step on the unreduced block ``low..high`` (implicit, by a bulge
    chased with 3 x 3 reflections)."""
    s = h[high - 1, high - 1] + h[high, high]
    t = h[high - 1, high - 1] * h[high, high] - h[high - 1, high] * h[high, high - 1]
    if sweeps % 10 == 0:
        # exceptional shifts: from the magnitudes of the last subdiagonal entries
        scale = abs(h[high, high - 1]) + abs(h[high - 1, high - 2]) if high - 2 >= low else abs(h[high, high - 1])
        s, t = 1.5 * scale, scale * scale
    x = h[low, low] * h[low, low] + h[low, low + 1] * h[low + 1, low] - s * h[low, low] + t
    y = h[low + 1, low] * (h[low, low] + h[low + 1, low + 1] - s)
    z = h[low + 1, low] * h[low + 2, low + 1]
    for step in range(low, high - 1):
        reflection = _householder3(np.array([x, y, z]))
        _reflect(h, q, step, reflection, max(low, step - 1), min(step + 3, high))
        x, y = h[step + 1, step], h[step + 2, step]
        if step < high - 2:
            z = h[step + 3, step]
    _reflect(h, q, high - 1, _householder3(np.array([x, y])), high - 2, high)
    for row in range(low + 2, high + 1):
        h[row, low:row - 1] = 0


def _standardise_pair(h, q, first: int) -> None:
    """A 2 x 2 block of complex conjugate eigenvalues rotated to LAPACK's standard form (lanv2):
    equal diagonal entries, off-diagonal entries of opposite signs."""
    a, b, c, d = h[first, first], h[first, first + 1], h[first + 1, first], h[first + 1, first + 1]
    if a == d:
        return
    sigma, difference = b + c, a - d
    tau = math.hypot(sigma, difference)
    cosine = math.sqrt(0.5 * (1 + abs(sigma) / tau))
    sine = -(0.5 * difference / (tau * cosine)) * math.copysign(1.0, sigma)
    _rotate(h, q, first, np.array([[cosine, sine], [-sine, cosine]]), first + 1)
    middle = 0.5 * (h[first, first] + h[first + 1, first + 1])
    h[first, first] = h[first + 1, first + 1] = middle


def _split_real_pair(h, q, first: int) -> None:
    """A 2 x 2 diagonal block with real eigenvalues made upper triangular by a rotation; one
    with complex eigenvalues put in standard form."""
    a, b, c, d = h[first, first], h[first, first + 1], h[first + 1, first], h[first + 1, first + 1]
    half = (a - d) / 2
    discriminant = half * half + b * c
    if discriminant < 0:
        _standardise_pair(h, q, first)
        return
    value = (a + d) / 2 + math.copysign(math.sqrt(discriminant), half)
    # an eigenvector of the block for ``value``, the better conditioned of the two forms
    x, y = (b, value - a) if abs(b) + abs(value - a) >= abs(value - d) + abs(c) else (value - d, c)
    norm = math.hypot(x, y)
    if norm == 0:
        return
    cosine, sine = x / norm, y / norm
    rotation = np.array([[cosine, sine], [-sine, cosine]])
    _rotate(h, q, first, rotation, first + 1)
    h[first + 1, first] = 0


def _real_schur(h: np.ndarray, q: np.ndarray) -> None:
    """The real Schur form of a real Hessenberg ``h``, in place, ``q`` accumulating."""
    size = h.shape[0]
    high, sweeps = size - 1, 0
    while high > 0:
        low = _active_start(h, high)
        if low == high:
            high, sweeps = high - 1, 0
            continue
        if low == high - 1:
            _split_real_pair(h, q, low)
            high, sweeps = high - 2, 0
            continue
        sweeps += 1
        if sweeps > _MAX_SWEEPS * size:
            raise np.linalg.LinAlgError("schur: the QR iteration did not converge")
        _francis_step(h, q, low, high, sweeps)


def schur_one(matrix: np.ndarray):
    """``(T, Z)`` of one matrix, computed in float64 / complex128."""
    wide = np.complex128 if np.iscomplexobj(matrix) else np.float64
    packed, taus = reduce_to_hessenberg(matrix.astype(wide)[None])
    upper, unitary = hessenberg_parts(packed, taus)
    h, q = upper[0].copy(), unitary[0].copy()
    (_complex_schur if np.iscomplexobj(matrix) else _real_schur)(h, q)
    return h, q


@reference_impls.register("schur")
def _schur_impl(attrs, operand):
    size = operand.shape[-1]
    matrices = operand.reshape((-1, size, size))
    forms, vectors = np.empty_like(matrices), np.empty_like(matrices)
    for index, matrix in enumerate(matrices):
        try:
            with np.errstate(all="ignore"):
                forms[index], vectors[index] = schur_one(matrix)
        except np.linalg.LinAlgError:
            forms[index] = vectors[index] = np.nan
    if attrs["compute_schur_vectors"]:
        return forms.reshape(operand.shape), vectors.reshape(operand.shape)
    return (forms.reshape(operand.shape),)
