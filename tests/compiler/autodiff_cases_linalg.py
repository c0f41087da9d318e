"""Autodiff rows of the linear algebra ops (appended to autodiff_cases.CASES): each op's
results flattened into one vector, on well-conditioned float64 arguments (distinct eigenvalues
and singular values, a dominant diagonal for the solves)."""

from __future__ import annotations

import numpy as np

from meshjit import lax
from meshjit.compiler.frontend import lax_complex
from meshjit.compiler.frontend import lax_linalg as linalg


def _flat(*arrays):
    return lax.concatenate([lax.reshape(array, (int(np.prod(array.shape)),)) for array in arrays], 0)


def _spd(rng):
    a = rng.uniform(-1, 1, (2, 3, 3))
    return (a @ np.swapaxes(a, -1, -2) + 3 * np.eye(3),)


def _dominant_pair(rng):
    return rng.uniform(-1, 1, (2, 3, 3)) + 4 * np.eye(3), rng.uniform(-1, 1, (2, 3, 2))


def _matrix(*shape):
    return lambda rng: (rng.uniform(-1, 1, shape),)


def linalg_cases(case):
    """The rows, built with autodiff_cases' Case."""
    return [
        case("cholesky", ("cholesky",), lambda a: linalg.cholesky(a), _spd),
        case("triangular_solve_left", ("triangular_solve",),
             lambda a, b: linalg.triangular_solve(a, b, left_side=True, lower=True), _dominant_pair),
        case("triangular_solve_right_transposed_unit", ("triangular_solve",),
             lambda a, b: linalg.triangular_solve(a, lax.transpose(b, (0, 2, 1)), left_side=False, lower=False,
                                                  transpose_a=True, unit_diagonal=True), _dominant_pair),
        case("lu", ("lu",), lambda a: linalg.lu(a)[0], lambda rng: (rng.uniform(-1, 1, (2, 3, 3)) + 3 * np.eye(3),)),
        case("lu_wide", ("lu",), lambda a: linalg.lu(a)[0], _matrix(3, 4), second_order=False),
        case("qr", ("qr",), lambda a: _flat(*linalg.qr(a, full_matrices=False)), _matrix(2, 4, 3)),
        case("qr_wide", ("qr",), lambda a: _flat(*linalg.qr(a)), _matrix(3, 4), second_order=False),
        case("eigh", ("eigh",), lambda a: _flat(*linalg.eigh(a)), _spd, second_order=False),
        # NOTE: v * v does not change when LAPACK flips an eigenvector's sign between the
        # perturbed points of the second-order differences
        case("eigh_squares", ("eigh",), lambda a: _flat(*(lambda v, w: (lax.mul(v, v), w))(*linalg.eigh(a))), _spd),
        case("svd", ("svd",), lambda a: _flat(*linalg.svd(a, full_matrices=False)), _matrix(2, 4, 3)),
        case("svd_wide_values", ("svd",), lambda a: linalg.svd(a, compute_uv=False), _matrix(3, 5),
             second_order=False),
        # NOTE: eig's results are complex; the cases differentiate their real and imaginary parts
        # (the eigenvalues' derivative uses the eigenvectors, which have none of their own
        # without enable_eigvec_derivs: no second order, as in JAX)
        case("eig_values", ("eig",), lambda a: _parts(*linalg.eig(a, compute_left_eigenvectors=False,
                                                                  compute_right_eigenvectors=False)),
             _matrix(2, 3, 3), second_order=False),
        case("eig_vector_magnitudes", ("eig",), lambda a: _magnitudes(*linalg.eig(a, enable_eigvec_derivs=True)),
             _matrix(3, 3), second_order=False),
    ]


def _parts(*arrays):
    return _flat(*[part(array) for array in arrays for part in (lax_complex.real, lax_complex.imag)])


def _magnitudes(values, *vectors):
    """The eigenvalues' parts and the eigenvectors' squared magnitudes (free of their phases)."""
    squares = [lax_complex.real(lax.mul(vector, lax_complex.conj(vector))) for vector in vectors]
    return _flat(lax_complex.real(values), lax_complex.imag(values), *squares)
