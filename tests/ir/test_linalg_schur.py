"""The Schur reference (ir/ops/linalg_schur.py) on matrices that stress the QR iteration:
random real and complex ones, symmetric ones, Jordan blocks (defective), integer matrices with
repeated eigenvalues, rotations (complex pairs only), 1 x 1 to 12 x 12. Each result must be a
Schur form: ``Z T Z^H = a``, ``Z`` unitary, ``T`` upper triangular (complex) or quasi-upper
triangular with 2 x 2 blocks only for complex conjugate pairs, in LAPACK's standard form."""

import numpy as np
import pytest

from meshjit.ir.ops.linalg_schur import schur_one

RNG = np.random.default_rng(32)


def _matrix(kind: str, size: int) -> np.ndarray:
    a = RNG.standard_normal((size, size))
    if kind == "complex":
        return a + 1j * RNG.standard_normal((size, size))
    if kind == "symmetric":
        return a + a.T
    if kind == "jordan":
        return 2 * np.eye(size) + np.eye(size, k=1)
    if kind == "integer":
        return RNG.integers(-2, 3, (size, size)).astype(np.float64)
    if kind == "rotation":
        return np.kron(np.eye(size // 2 + 1), [[0.0, 1.0], [-1.0, 0.0]])[:size, :size]
    return a


def _check_blocks(form: np.ndarray) -> None:
    below = np.diag(form, -1)
    for row, entry in enumerate(below):
        if entry == 0:
            continue
        assert row + 1 == len(below) or below[row + 1] == 0, "two consecutive subdiagonal entries"
        block = form[row:row + 2, row:row + 2]
        assert block[0, 0] == block[1, 1] and block[0, 1] * block[1, 0] < 0, f"block not standard: {block}"


@pytest.mark.parametrize("kind", ["real", "complex", "symmetric", "jordan", "integer", "rotation"])
@pytest.mark.parametrize("size", [1, 2, 3, 5, 8, 12])
def test_schur_form(kind, size):
    a = _matrix(kind, size)
    form, vectors = schur_one(a)
    scale = max(1.0, np.abs(a).max())
    assert np.abs(vectors @ form @ vectors.conj().T - a).max() < 1e-12 * scale * size
    assert np.abs(vectors.conj().T @ vectors - np.eye(size)).max() < 1e-12 * size
    if np.iscomplexobj(a):
        assert not np.tril(form, -1).any()
    else:
        assert not np.tril(form, -2).any()
        _check_blocks(form)
