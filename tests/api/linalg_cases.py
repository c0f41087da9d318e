"""The jnp.linalg / jax.scipy.linalg cases compared with JAX 0.10.2: ``cases(jax, jnp, jsl)``
maps a name to a thunk, run once under JAX by ``generate_linalg_values.py``
(``data/linalg_values.json``) and under meshjit by ``test_linalg_jax.py``. Decompositions whose
signs are LAPACK's choice are compared raw where LAPACK's choice is stable across builds, and
through sign-free forms (``v * v``, reconstructions) otherwise."""

import numpy as np

RNG = np.random.default_rng(32)
A = (RNG.standard_normal((4, 4)) + 2 * np.eye(4)).astype(np.float32)
SPD = (A @ A.T + np.eye(4)).astype(np.float32)
BATCH = RNG.standard_normal((3, 4, 4)).astype(np.float32)
BATCH_SPD = (BATCH @ np.swapaxes(BATCH, 1, 2) + np.eye(4)).astype(np.float32)
TALL = RNG.standard_normal((5, 3)).astype(np.float32)
WIDE = TALL.T.copy()
B = RNG.standard_normal((4, 2)).astype(np.float32)
V = RNG.standard_normal(4).astype(np.float32)
RANK2 = (RNG.standard_normal((5, 2)) @ RNG.standard_normal((2, 4))).astype(np.float32)
SMALL = (0.3 * RNG.standard_normal((3, 3))).astype(np.float32)
T4 = (RNG.standard_normal((4, 4)) + 3 * np.eye(4)).astype(np.float32).reshape(2, 2, 2, 2)


def _squares(*arrays):
    return tuple(array * array for array in arrays)


def decomposition_cases(jax, jnp, jsl):
    L = jnp.linalg
    return {
        "cholesky": lambda: L.cholesky(SPD), "cholesky_upper": lambda: L.cholesky(BATCH_SPD, upper=True),
        "cholesky_not_pd": lambda: L.cholesky(-SPD),
        "qr": lambda: L.qr(TALL), "qr_complete": lambda: L.qr(TALL, mode="complete"), "qr_r": lambda: L.qr(WIDE, mode="r"),
        "qr_batch": lambda: L.qr(BATCH),
        "eigh": lambda: L.eigh(SPD), "eigh_upper_squares": lambda: _squares(*L.eigh(BATCH_SPD, UPLO="U")),
        "eigh_squares": lambda: _squares(*L.eigh(BATCH_SPD)), "eigvalsh": lambda: L.eigvalsh(BATCH_SPD),
        "svd": lambda: L.svd(TALL, full_matrices=False), "svd_full": lambda: L.svd(WIDE),
        "svd_batch_squares": lambda: _squares(*L.svd(BATCH)), "svdvals": lambda: L.svdvals(BATCH),
        "svd_hermitian": lambda: L.svd(SPD, hermitian=True, compute_uv=False),
        "pinv": lambda: L.pinv(TALL), "pinv_rank2": lambda: L.pinv(RANK2), "pinv_batch": lambda: L.pinv(BATCH),
        "lstsq": lambda: L.lstsq(TALL, TALL @ V[:3] + 0.1), "lstsq_matrix": lambda: L.lstsq(RANK2, B[:, :1].repeat(5, 0)[:5]),
        "matrix_rank": lambda: L.matrix_rank(RANK2), "matrix_rank_batch": lambda: L.matrix_rank(BATCH),
        "matrix_norm_2": lambda: L.matrix_norm(BATCH, ord=2), "matrix_norm_nuc": lambda: L.matrix_norm(TALL, ord="nuc"),
        "norm_-2": lambda: L.norm(A, -2), "norm_nuc_keepdims": lambda: L.norm(BATCH, "nuc", axis=(0, 2), keepdims=True),
        "cond": lambda: L.cond(A), "cond_1": lambda: L.cond(BATCH, 1), "cond_fro": lambda: L.cond(A, "fro"),
        "cond_-2": lambda: L.cond(TALL, -2), "cond_singular": lambda: L.cond(np.zeros((2, 2), np.float32), 1),
        "solve": lambda: L.solve(A, V), "solve_matrix": lambda: L.solve(BATCH, B), "inv": lambda: L.inv(BATCH),
        "det": lambda: L.det(BATCH), "slogdet": lambda: L.slogdet(BATCH), "det_singular": lambda: L.det(RANK2[:4]),
        "vector_norm": lambda: L.vector_norm(BATCH), "vector_norm_axis": lambda: L.vector_norm(TALL, axis=0, ord=1),
        "diagonal": lambda: L.diagonal(TALL), "diagonal_offset": lambda: L.diagonal(BATCH, offset=-1),
        "trace": lambda: L.trace(WIDE, offset=1), "cross": lambda: L.cross(TALL, TALL[::-1]),
        "multi_dot": lambda: L.multi_dot([V, BATCH[0], A, V]),
        "tensorinv": lambda: L.tensorinv(T4, 2), "tensorsolve": lambda: L.tensorsolve(T4, B[:2]),
    }


def scipy_cases(jax, jnp, jsl):
    return {
        "sl.cholesky": lambda: jsl.cholesky(SPD), "sl.cho_solve": lambda: jsl.cho_solve(jsl.cho_factor(SPD), B),
        "sl.cho_solve_lower": lambda: jsl.cho_solve(jsl.cho_factor(BATCH_SPD, lower=True), V),
        "sl.solve_triangular": lambda: jsl.solve_triangular(np.tril(A), B, lower=True),
        "sl.solve_triangular_T_unit": lambda: jsl.solve_triangular(np.triu(A), V, trans="T", unit_diagonal=True),
        "sl.lu": lambda: jsl.lu(A), "sl.lu_tall": lambda: jsl.lu(TALL), "sl.lu_wide_permute_l": lambda: jsl.lu(WIDE, permute_l=True),
        "sl.lu_factor": lambda: jsl.lu_factor(BATCH), "sl.solve_pos": lambda: jsl.solve(SPD, B, assume_a="pos"),
        "sl.solve": lambda: jsl.solve(A, V), "sl.qr": lambda: jsl.qr(TALL), "sl.qr_economic": lambda: jsl.qr(TALL, mode="economic"),
        "sl.qr_r": lambda: jsl.qr(TALL, mode="r"), "sl.eigh": lambda: jsl.eigh(SPD),
        "sl.eigh_values": lambda: jsl.eigh(BATCH_SPD, eigvals_only=True),
        "sl.svd": lambda: jsl.svd(TALL, full_matrices=False), "sl.svd_values": lambda: jsl.svd(WIDE, compute_uv=False),
        "sl.expm": lambda: jsl.expm(SMALL), "sl.expm_large": lambda: jsl.expm(2 * A),
        "sl.expm_batch": lambda: jsl.expm(0.5 * BATCH), "sl.expm_zero": lambda: jsl.expm(np.zeros((2, 2), np.float32)),
        "sl.polar": lambda: jsl.polar(A), "sl.polar_left": lambda: jsl.polar(TALL, side="left", method="svd"),
        "sl.inv": lambda: jsl.inv(A), "sl.det": lambda: jsl.det(A),
        "sl.lu_solve": lambda: jsl.lu_solve(jsl.lu_factor(BATCH), B), "sl.lu_solve_T": lambda: jsl.lu_solve(jsl.lu_factor(A), V, trans=1),
    }


def gradient_cases(jax, jnp, jsl):
    L = jnp.linalg

    def grad(function, *args):
        return lambda: jax.grad(lambda *values: jnp.sum(function(*values) ** 2))(*args)

    return {
        "grad.cholesky": grad(L.cholesky, SPD), "grad.eigvalsh": grad(L.eigvalsh, SPD),
        "grad.eigh_squares": grad(lambda a: _squares(*L.eigh(a))[1], SPD),
        "grad.svdvals": grad(L.svdvals, TALL), "grad.svd_squares": grad(lambda a: _squares(*L.svd(a, full_matrices=False))[0], TALL),
        "grad.qr_r": grad(lambda a: L.qr(a, mode="r"), TALL), "grad.qr_q_squares": grad(lambda a: L.qr(a)[0] ** 2, TALL),
        "grad.solve_triangular": lambda: jax.grad(lambda a, b: jnp.sum(jsl.solve_triangular(a, b, lower=True) ** 2),
                                                  argnums=(0, 1))(np.tril(A), B),
        "grad.det": grad(L.det, A), "grad.inv": grad(L.inv, A), "grad.solve": grad(lambda a: L.solve(a, V), A),
        "grad.slogdet": grad(lambda a: L.slogdet(a)[1], A), "grad.pinv": grad(L.pinv, TALL),
        "grad.expm": grad(jsl.expm, SMALL), "grad.lu_u": grad(lambda a: jsl.lu(a)[2], A),
        "jvp.cholesky": lambda: jax.jvp(L.cholesky, (SPD,), (np.eye(4, dtype=np.float32),))[1],
    }


def error_cases(jax, jnp, jsl):
    L = jnp.linalg
    return {
        "error.qr_mode": lambda: L.qr(A, mode="bad"), "error.eigh_uplo": lambda: L.eigh(SPD, UPLO="X"),
        "error.inv_shape": lambda: L.inv(TALL), "error.det_shape": lambda: L.det(V),
        "error.slogdet_shape": lambda: L.slogdet(TALL), "error.solve_1d": lambda: L.solve(V, V),
        "error.matrix_power": lambda: L.matrix_power(TALL, 2), "error.cond_1d": lambda: L.cond(V),
        "error.cond_square": lambda: L.cond(TALL, 1), "error.lstsq_rows": lambda: L.lstsq(TALL, V),
        "error.pinv_rtol": lambda: L.pinv(A, rtol=0.1, rcond=0.1), "error.qr_rank": lambda: L.qr(V),
        "error.svd_rank": lambda: L.svd(V), "error.norm_ord": lambda: L.norm(A, "bad"),
        "error.sl_cholesky": lambda: jsl.cholesky(TALL), "error.sl_expm": lambda: jsl.expm(TALL),
        "error.sl_qr_mode": lambda: jsl.qr(A, mode="reduced"), "error.sl_lu_rank": lambda: jsl.lu(V),
        "error.sl_trans": lambda: jsl.solve_triangular(A, V, trans=3),
        "error.sl_assume_a": lambda: jsl.solve(A, V, assume_a="banded"),
    }


def cases(jax, jnp, jsl):
    """name -> thunk computing one value (or raising one error) with the modules given."""
    return {**decomposition_cases(jax, jnp, jsl), **scipy_cases(jax, jnp, jsl), **gradient_cases(jax, jnp, jsl),
            **error_cases(jax, jnp, jsl)}


def flat(result) -> list:
    """A result (or a tuple of results) as a flat list of floats, non-finite ones as text."""
    parts = result if isinstance(result, tuple) else (result,)
    values = np.concatenate([np.asarray(part, np.float64).ravel() for part in parts]) if parts else np.zeros(0)
    return [float(v) if np.isfinite(v) else str(v) for v in values]
