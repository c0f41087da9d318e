"""jnp.linalg and jax.scipy.linalg's Cholesky/LU family (the linalg ops) against numpy's float64
results within float32 tolerances, JAX 0.10.2's pivots, batches, jit with a sharded batch, and
derivatives (check_grads). Sharding, vmap and empty batches of every op: test_linalg_sharding.py;
JAX's values and errors: test_linalg_jax.py."""

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
import meshjit.scipy.linalg as sl
from meshjit.sharding import AxisType, NamedSharding, PartitionSpec as P
from meshjit.test_util import check_grads

RNG = np.random.default_rng(0)
A = (RNG.standard_normal((4, 4)) + 4 * np.eye(4)).astype(np.float32)
SPD = (A @ A.T).astype(np.float32)
B = RNG.standard_normal(4).astype(np.float32)
BATCH = (RNG.standard_normal((8, 3, 3)) + 3 * np.eye(3)).astype(np.float32)


def close(actual, expected, tolerance=2e-5):
    np.testing.assert_allclose(np.asarray(actual, np.float64), expected, rtol=tolerance, atol=tolerance)


def test_numpy_linalg_matches_numpy():
    a64, spd64 = A.astype(np.float64), SPD.astype(np.float64)
    close(jnp.linalg.cholesky(SPD), np.linalg.cholesky(spd64))
    close(jnp.linalg.cholesky(SPD, upper=True), np.linalg.cholesky(spd64).T)
    close(jnp.linalg.solve(A, B), np.linalg.solve(a64, B))
    close(jnp.linalg.solve(A, np.stack([B, 2 * B], 1)), np.linalg.solve(a64, np.stack([B, 2 * B], 1)))
    close(jnp.linalg.inv(A), np.linalg.inv(a64))
    close(jnp.linalg.det(A), np.linalg.det(a64), 1e-4)
    sign, logabsdet = jnp.linalg.slogdet(A)
    assert float(sign) == np.linalg.slogdet(a64)[0]
    close(logabsdet, np.linalg.slogdet(a64)[1])
    close(jnp.linalg.matrix_power(A, 3), np.linalg.matrix_power(a64, 3), 1e-4)
    close(jnp.linalg.matrix_power(A, -2), np.linalg.matrix_power(a64, -2), 1e-4)


@pytest.mark.parametrize("ord", [None, 1, 2, np.inf, -np.inf, 0, 3])
def test_vector_norms(ord):
    close(jnp.linalg.norm(B, ord), np.linalg.norm(B.astype(np.float64), ord))


@pytest.mark.parametrize("ord", [None, "fro", 1, -1, np.inf, -np.inf, 2, -2, "nuc"])
def test_matrix_norms(ord):
    close(jnp.linalg.norm(A, ord), np.linalg.norm(A.astype(np.float64), ord))
    close(jnp.linalg.norm(BATCH, ord, axis=(1, 2)), np.linalg.norm(BATCH.astype(np.float64), ord, axis=(1, 2)))


def test_unknown_matrix_norm_is_jaxs_error():
    with pytest.raises(ValueError, match="Invalid order 'nuclear' for matrix norm"):
        jnp.linalg.norm(A, "nuclear")


def test_scipy_linalg_factorizations():
    matrix = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 10.0]], np.float32)
    packed, pivots = sl.lu_factor(matrix)
    assert np.asarray(pivots).tolist() == [2, 2, 2]  # JAX 0.10.2's pivots
    permutation, lower, upper = sl.lu(matrix)
    assert np.asarray(permutation).tolist() == [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    close(np.asarray(permutation) @ np.asarray(lower) @ np.asarray(upper), matrix)
    close(sl.cholesky(SPD), np.linalg.cholesky(SPD.astype(np.float64)).T)
    close(sl.cho_solve(sl.cho_factor(SPD), B), np.linalg.solve(SPD.astype(np.float64), B), 1e-4)
    close(sl.cho_solve(sl.cho_factor(SPD, lower=True), B), np.linalg.solve(SPD.astype(np.float64), B), 1e-4)
    triangle = np.tril(A).astype(np.float64)
    close(sl.solve_triangular(np.tril(A), B, lower=True), np.linalg.solve(triangle, B))
    close(sl.solve_triangular(np.tril(A), B, lower=True, trans="T"), np.linalg.solve(triangle.T, B))
    close(sl.solve(SPD, B, assume_a="pos"), np.linalg.solve(SPD.astype(np.float64), B), 1e-4)
    close(sl.inv(A), np.linalg.inv(A.astype(np.float64)))


@pytest.mark.parametrize("axis_type", [AxisType.Auto, AxisType.Explicit])
def test_batches_jit_and_sharded_batch(axis_type):
    expected = np.linalg.inv(BATCH.astype(np.float64))
    close(jnp.linalg.inv(BATCH), expected, 1e-4)
    # NOTE: on an Explicit axis too: the ops keep the batch sharded (the loops they replace
    # could not, scan refusing a carry split over an Explicit axis)
    mesh = jax.make_mesh((4,), ("x",), axis_types=(axis_type,))
    sharded = jax.device_put(BATCH, NamedSharding(mesh, P("x")))
    result = jax.jit(jnp.linalg.inv)(sharded)
    close(result, expected, 1e-4)
    assert result.sharding.spec[0] == "x"
    np.testing.assert_allclose(np.asarray(jax.jit(jnp.linalg.det)(sharded)),
                               np.linalg.det(BATCH.astype(np.float64)), rtol=1e-4)


def test_derivatives():
    # NOTE: against float64 finite differences of numpy's functions: float32 ones are too noisy
    a64, spd64 = A.astype(np.float64), SPD.astype(np.float64)
    check_grads(lambda a, b: jnp.linalg.solve(a, b), (A, B), order=1, modes=["rev"])
    direction = RNG.standard_normal((4, 4))
    direction = direction + direction.T
    step = 1e-6
    numeric = (np.linalg.cholesky(spd64 + step * direction) - np.linalg.cholesky(spd64 - step * direction)) / (2 * step)
    close(jax.jvp(jnp.linalg.cholesky, (SPD,), (direction.astype(np.float32),))[1], numeric, 1e-4)
    close(jax.grad(jnp.linalg.det)(A), np.linalg.det(a64) * np.linalg.inv(a64).T, 1e-4)
    close(jax.grad(lambda b: jnp.linalg.solve(A, b).sum())(B), np.linalg.inv(a64).T @ np.ones(4), 1e-4)


def test_lax_linalg_primitives():
    q, r = jax.lax.linalg.qr(A, full_matrices=False)
    close(np.asarray(q) @ np.asarray(r), A.astype(np.float64), 1e-5)
    v, w = jax.lax.linalg.eigh(SPD)
    close(w, np.linalg.eigvalsh(SPD.astype(np.float64)), 1e-4)
    packed, pivots, permutation = jax.lax.linalg.lu(A)
    assert np.asarray(pivots).dtype == np.int32 and sorted(np.asarray(permutation).tolist()) == [0, 1, 2, 3]
    close(jax.lax.linalg.triangular_solve(np.tril(A), B[None, :], left_side=False, lower=True)[0],
          np.linalg.solve(np.tril(A).T.astype(np.float64), B))
    with pytest.raises(TypeError, match="Input 0 to svd must have rank at least 2"):
        jax.lax.linalg.svd(B)


def test_generalised_hermitian_eigenproblem():
    """eigh(a, b) (which JAX 0.10.2 does not implement) on complex Hermitian matrices: a v = w b v,
    with numpy's eigenvalues of b^-1 a."""
    rng = np.random.default_rng(5)
    base = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    a = (base + base.conj().T).astype(np.complex64)
    b = (base @ base.conj().T + 3 * np.eye(3)).astype(np.complex64)
    values, vectors = sl.eigh(a, b)
    values, vectors = np.asarray(values), np.asarray(vectors)
    assert values.dtype == np.float32
    np.testing.assert_allclose(a @ vectors, (b @ vectors) * values, atol=2e-4)
    expected = np.sort(np.linalg.eigvals(np.linalg.solve(b.astype(np.complex128), a)).real)
    close(values, expected, 2e-4)
