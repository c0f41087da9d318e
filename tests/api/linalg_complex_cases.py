"""The jnp.linalg / jax.scipy.linalg cases on complex64 matrices compared with JAX 0.10.2:
``cases(jax, jnp, jsl)`` maps a name to a thunk, run once under JAX by
``generate_linalg_values.py`` (``data/linalg_complex_values.json``) and under meshjit by
``test_linalg_jax.py``. Eigenvectors and singular vectors are unique up to a phase per column,
so they are compared through ``|v|^2`` and reconstructions."""

import numpy as np

RNG = np.random.default_rng(3232)


def _complex(*shape):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(np.complex64)


A = (_complex(4, 4) + 2 * np.eye(4)).astype(np.complex64)
HPD = (A @ A.conj().T + np.eye(4)).astype(np.complex64)
BATCH = _complex(3, 4, 4)
BATCH_HPD = (BATCH @ np.conj(np.swapaxes(BATCH, 1, 2)) + np.eye(4)).astype(np.complex64)
TALL = _complex(5, 3)
WIDE = TALL.T.copy()
B = _complex(4, 2)
V = _complex(4)
RANK2 = (_complex(5, 2) @ _complex(2, 4)).astype(np.complex64)
SMALL = (0.3 * _complex(3, 3)).astype(np.complex64)


def _magnitudes(*arrays):
    return tuple(abs(array) ** 2 for array in arrays)


def _remade_svd(u, s, vh):
    return (u * s[..., None, :].astype(u.dtype)) @ vh


def decomposition_cases(jax, jnp, jsl):
    L = jnp.linalg
    return {
        "c.cholesky": lambda: L.cholesky(HPD), "c.cholesky_upper": lambda: L.cholesky(BATCH_HPD, upper=True),
        "c.qr": lambda: L.qr(TALL), "c.qr_complete": lambda: L.qr(TALL, mode="complete"),
        "c.qr_wide_r": lambda: L.qr(WIDE, mode="r"), "c.qr_batch": lambda: L.qr(BATCH),
        "c.eigh_magnitudes": lambda: _magnitudes(*L.eigh(HPD)), "c.eigvalsh": lambda: L.eigvalsh(BATCH_HPD),
        "c.eigh_upper": lambda: L.eigh(BATCH_HPD, UPLO="U").eigenvalues,
        "c.svd_magnitudes": lambda: _magnitudes(*L.svd(TALL, full_matrices=False)),
        "c.svd_remade": lambda: _remade_svd(*L.svd(BATCH)), "c.svdvals": lambda: L.svdvals(WIDE),
        "c.pinv": lambda: L.pinv(TALL), "c.pinv_rank2": lambda: L.pinv(RANK2),
        "c.lstsq": lambda: L.lstsq(TALL, TALL @ V[:3] + 0.1), "c.matrix_rank": lambda: L.matrix_rank(RANK2),
        "c.norm_fro": lambda: L.norm(A), "c.norm_2": lambda: L.norm(BATCH, 2, axis=(1, 2)),
        "c.norm_nuc": lambda: L.norm(TALL, "nuc"), "c.norm_1": lambda: L.norm(A, 1), "c.norm_inf": lambda: L.norm(A, np.inf),
        "c.vector_norm": lambda: L.vector_norm(BATCH, axis=-1), "c.vector_norm_3": lambda: L.norm(V, 3),
        "c.cond": lambda: L.cond(A), "c.solve": lambda: L.solve(A, V), "c.solve_matrix": lambda: L.solve(BATCH, B),
        "c.inv": lambda: L.inv(BATCH), "c.det": lambda: L.det(BATCH), "c.slogdet": lambda: L.slogdet(BATCH),
        "c.matrix_power": lambda: L.matrix_power(A, -3),
    }


def scipy_cases(jax, jnp, jsl):
    return {
        "c.sl.cholesky": lambda: jsl.cholesky(HPD), "c.sl.cho_solve": lambda: jsl.cho_solve(jsl.cho_factor(HPD), B),
        "c.sl.cho_solve_lower": lambda: jsl.cho_solve(jsl.cho_factor(BATCH_HPD, lower=True), V),
        "c.sl.solve_triangular_C": lambda: jsl.solve_triangular(np.triu(A), B, trans="C"),
        "c.sl.solve_triangular_T": lambda: jsl.solve_triangular(np.tril(A), V, trans=1, lower=True),
        "c.sl.lu": lambda: jsl.lu(A), "c.sl.lu_tall": lambda: jsl.lu(TALL), "c.sl.lu_factor": lambda: jsl.lu_factor(BATCH),
        "c.sl.lu_solve_H": lambda: jsl.lu_solve(jsl.lu_factor(A), B, trans=2),
        "c.sl.solve_pos": lambda: jsl.solve(HPD, B, assume_a="pos"), "c.sl.expm": lambda: jsl.expm(SMALL),
        "c.sl.expm_large": lambda: jsl.expm(2 * A),
        "c.sl.polar": lambda: jsl.polar(A), "c.sl.qr_economic": lambda: jsl.qr(TALL, mode="economic"),
        "c.sl.det": lambda: jsl.det(A), "c.sl.inv": lambda: jsl.inv(A),
    }


def gradient_cases(jax, jnp, jsl):
    L = jnp.linalg

    def grad(function, *args):
        return lambda: jax.grad(lambda *values: jnp.sum(jnp.abs(function(*values)) ** 2))(*args)

    def holomorphic(function, *args):
        return lambda: jax.grad(lambda *values: jnp.sum(function(*values)), holomorphic=True)(*args)

    return {
        "c.grad.cholesky": grad(L.cholesky, HPD), "c.grad.eigvalsh": grad(L.eigvalsh, HPD),
        "c.grad.svdvals": grad(L.svdvals, TALL), "c.grad.svd_wide_remade": grad(lambda a: _remade_svd(*L.svd(a, full_matrices=False)), WIDE),
        "c.grad.svd_u_magnitudes": grad(lambda a: L.svd(a, full_matrices=False)[0] * L.svd(a, full_matrices=False)[0].conj(), TALL),
        "c.grad.eigh_magnitudes": grad(lambda a: L.eigh(a)[1] * L.eigh(a)[1].conj(), HPD),
        "c.grad.qr_r": grad(lambda a: L.qr(a, mode="r"), TALL), "c.grad.qr_q": grad(lambda a: L.qr(a)[0], TALL),
        "c.grad.qr_wide": grad(lambda a: L.qr(a)[1], WIDE), "c.grad.qr_complete": grad(lambda a: L.qr(a, mode="complete")[0], TALL),
        "c.grad.det": grad(L.det, A), "c.grad.inv": grad(L.inv, A), "c.grad.solve": grad(lambda a: L.solve(a, V), A),
        "c.grad.slogdet": grad(lambda a: L.slogdet(a)[1], A), "c.grad.pinv": grad(L.pinv, TALL),
        "c.grad.expm": grad(jsl.expm, SMALL), "c.grad.lu_u": grad(lambda a: jsl.lu(a)[2], A),
        "c.grad.solve_triangular_C": lambda: jax.grad(
            lambda a, b: jnp.sum(jnp.abs(jsl.solve_triangular(a, b, trans="C")) ** 2), argnums=(0, 1))(np.triu(A), B),
        "c.holomorphic.inv": holomorphic(L.inv, A), "c.holomorphic.det": holomorphic(L.det, BATCH),
        "c.holomorphic.solve": holomorphic(lambda a: L.solve(a, V), A),
        "c.holomorphic.cholesky": holomorphic(L.cholesky, HPD),
        "c.jvp.qr": lambda: jax.jvp(L.qr, (TALL,), (np.ones_like(TALL),))[1][1],
        "c.jvp.eigvalsh": lambda: jax.jvp(L.eigvalsh, (HPD,), (1j * np.eye(4, dtype=np.complex64) + HPD,))[1],
    }


REAL = RNG.standard_normal((4, 4)).astype(np.float32)
REAL_BATCH = RNG.standard_normal((2, 3, 3)).astype(np.float32)


def _eig_invariant(jax, jnp):
    """A function of eig's vectors that does not depend on their phases."""
    def function(a):
        values, left, right = jax.lax.linalg.eig(a, enable_eigvec_derivs=True)
        weights = jnp.arange(1, a.shape[-1] + 1)
        return jnp.sum(jnp.abs(right) ** 4 * weights) + jnp.sum(jnp.abs(left) ** 3) + jnp.sum(jnp.real(values) ** 2)

    return function


def eig_cases(jax, jnp, jsl):
    L = jnp.linalg
    eig = jax.lax.linalg.eig
    return {
        "eig.values": lambda: L.eigvals(REAL), "eig.values_batch": lambda: L.eigvals(REAL_BATCH),
        "eig.values_complex": lambda: L.eigvals(A), "eig.values_int": lambda: L.eigvals(np.eye(3, dtype=np.int32)),
        "eig.result": lambda: _magnitudes(*L.eig(REAL)), "eig.result_complex": lambda: _magnitudes(*L.eig(BATCH)),
        "eig.lax_left_right": lambda: _magnitudes(*eig(REAL)), "eig.lax_left_only": lambda: _magnitudes(
            *eig(A, compute_right_eigenvectors=False)),
        "eig.lax_count": lambda: len(eig(REAL, compute_left_eigenvectors=False, compute_right_eigenvectors=False)),
        "eig.remade": lambda: abs(REAL @ L.eig(REAL)[1] - L.eig(REAL)[1] * L.eig(REAL)[0][None, :]).max() < 1e-4,
        "eig.grad_values": lambda: jax.grad(lambda a: jnp.sum(jnp.abs(L.eigvals(a)) ** 2))(REAL),
        "eig.grad_values_complex": lambda: jax.grad(lambda a: jnp.sum(jnp.imag(L.eigvals(a)) + jnp.real(L.eigvals(a)) ** 3))(A),
        "eig.jvp_values": lambda: jax.jvp(L.eigvals, (REAL,), (np.ones_like(REAL),))[1],
        "eig.grad_vectors": lambda: jax.grad(_eig_invariant(jax, jnp))(REAL),
        "eig.grad_vectors_complex": lambda: jax.grad(_eig_invariant(jax, jnp))(A),
        "eig.vmap": lambda: jax.vmap(L.eigvals)(REAL_BATCH),
        "eig.error_vectors_grad": lambda: jax.grad(lambda a: jnp.sum(jnp.abs(L.eig(a)[1])))(REAL),
        "eig.error_square": lambda: L.eig(TALL), "eig.error_rank": lambda: L.eigvals(V),
        "eig.error_lax_int": lambda: eig(np.eye(2, dtype=np.int32)),
    }


def _schur_invariants(jnp, a, result, real: bool):
    """What a Schur decomposition fixes: ``Z T Z^H = a``, ``Z`` unitary, ``T`` (quasi-)upper
    triangular, and ``T``'s eigenvalues (the order along the diagonal and the phases of Z's
    columns are the algorithm's choice)."""
    form, vectors = result
    size = a.shape[-1]
    remade = abs(np.asarray(vectors @ form @ jnp.conj(jnp.swapaxes(vectors, -1, -2))) - a).max() < 1e-4
    unitary = abs(np.asarray(jnp.conj(jnp.swapaxes(vectors, -1, -2)) @ vectors) - np.eye(size)).max() < 1e-5
    below = np.tril(np.asarray(form), -2 if real else -1)
    triangular = not below.any()
    values = np.asarray(jnp.linalg.eigvals(form)).reshape(-1, size)
    # NOTE: sorted by parts rounded to 1e-4, so a conjugate pair's order does not hang on last bits
    order = [np.lexsort((np.round(row.imag, 4), np.round(row.real, 4))) for row in values]
    return remade, unitary, triangular, np.take_along_axis(values, np.array(order), axis=-1)


def schur_cases(jax, jnp, jsl):
    def invariants(a, output="real"):
        return lambda: _schur_invariants(jnp, a, jsl.schur(a, output=output), output == "real" and a.dtype.kind == "f")

    return {
        "schur.real": invariants(REAL), "schur.real_3": invariants(SMALL.real),
        "schur.complex_output": invariants(REAL, "complex"), "schur.complex": invariants(A),
        "schur.batch": invariants(REAL_BATCH),
        "schur.lax_no_vectors": lambda: len(jax.lax.linalg.schur(REAL, compute_schur_vectors=False)),
        "hessenberg": lambda: jsl.hessenberg(REAL), "hessenberg.q": lambda: jsl.hessenberg(REAL, calc_q=True),
        "hessenberg.complex_q": lambda: jsl.hessenberg(A, calc_q=True),
        "hessenberg.batch": lambda: jsl.hessenberg(BATCH, calc_q=True), "hessenberg.lax": lambda: jax.lax.linalg.hessenberg(A),
        "hessenberg.empty": lambda: jsl.hessenberg(np.zeros((0, 0), np.float32), calc_q=True),
        "sqrtm.real": lambda: jsl.sqrtm(REAL + 4 * np.eye(4, dtype=np.float32)), "sqrtm.spd": lambda: jsl.sqrtm(HPD.real), "sqrtm.complex": lambda: jsl.sqrtm(A),
        "funm.exp": lambda: jsl.funm(REAL, jnp.exp), "funm.sin_complex": lambda: jsl.funm(A, jnp.sin),
        "funm.error_estimate": lambda: jsl.funm(SMALL, jnp.cos, disp=False),
        "rsf2csf": lambda: _schur_invariants(jnp, REAL, jsl.rsf2csf(*jsl.schur(REAL)), False),
        "rsf2csf.batch": lambda: _schur_invariants(jnp, REAL_BATCH, jsl.rsf2csf(*jsl.schur(REAL_BATCH)), False),
        "error.schur_output": lambda: jsl.schur(REAL, output="bad"), "error.sqrtm_blocks": lambda: jsl.sqrtm(REAL, 2),
        "error.funm_square": lambda: jsl.funm(TALL, jnp.exp), "error.rsf2csf_T": lambda: jsl.rsf2csf(TALL, REAL),
        "error.rsf2csf_shapes": lambda: jsl.rsf2csf(REAL, SMALL),
        "error.schur_grad": lambda: jax.grad(lambda a: jnp.sum(jsl.schur(a)[0]))(REAL),
        "error.hessenberg_grad": lambda: jax.grad(lambda a: jnp.sum(jsl.hessenberg(a)))(REAL),
    }


def error_cases(jax, jnp, jsl):
    L = jnp.linalg
    return {
        "c.error.svd_grad_full": lambda: jax.grad(lambda a: jnp.sum(jnp.abs(L.svd(a)[0])))(TALL),
        "c.error.grad_complex_output": lambda: jax.grad(lambda a: jnp.sum(L.det(a)))(A),
    }


def cases(jax, jnp, jsl):
    """name -> thunk computing one value (or raising one error) with the modules given."""
    return {**decomposition_cases(jax, jnp, jsl), **scipy_cases(jax, jnp, jsl), **gradient_cases(jax, jnp, jsl),
            **eig_cases(jax, jnp, jsl), **schur_cases(jax, jnp, jsl), **error_cases(jax, jnp, jsl)}


def flat(result) -> list:
    """A result (or a tuple of results) as a flat list of floats (a complex number as its real
    and imaginary parts), non-finite ones as text."""
    parts = result if isinstance(result, tuple) else (result,)
    pieces = [np.asarray(part).astype(np.complex128).ravel().view(np.float64) for part in parts]
    values = np.concatenate(pieces) if pieces else np.zeros(0)
    return [float(v) if np.isfinite(v) else str(v) for v in values]
