"""Oracles of the linear algebra ops. Cholesky, the triangular solve and LU are written out
matrix by matrix in Python floats (complex numbers) from their textbook definitions (LU pivots on
the first row of largest magnitude, LAPACK's |re| + |im| for complex numbers); QR, eigh, SVD and
eig, whose signs are LAPACK's choice, call numpy's LAPACK one matrix at a time, which checks the
batching, the results' order and dtypes; eig's left eigenvectors are the right ones of the
conjugate transpose, paired by eigenvalue."""

from __future__ import annotations

import math

import numpy as np


def _matrices(array: np.ndarray):
    return array.reshape((math.prod(array.shape[:-2]),) + array.shape[-2:])


def _scalar(matrix):
    """Python's number type for the matrix's entries."""
    return complex if np.iscomplexobj(matrix) else float


def _cholesky_one(matrix) -> np.ndarray:
    size, number = matrix.shape[0], _scalar(matrix)
    factor = [[number(0)] * size for _ in range(size)]
    for column in range(size):
        pivot = number(matrix[column, column]).real - sum(abs(factor[column][k]) ** 2 for k in range(column))
        if not pivot > 0:
            return np.tril(np.full((size, size), math.nan))
        factor[column][column] = number(math.sqrt(pivot))
        for row in range(column + 1, size):
            value = number(matrix[row, column]) - sum(factor[row][k] * factor[column][k].conjugate()
                                                      for k in range(column))
            factor[row][column] = value / factor[column][column]
    return np.array(factor).reshape(matrix.shape)


def cholesky(attrs, x):
    factors = [_cholesky_one(matrix) for matrix in _matrices(x)]
    return (np.array(factors, x.dtype).reshape(x.shape) if factors else np.zeros(x.shape, x.dtype),)


def triangular_solve(attrs, a, b):
    """``op(a) x = b`` (or ``x op(a) = b``) by numpy's general solver on the triangle read."""
    results = []
    wide = np.complex128 if np.iscomplexobj(a) else np.float64
    for matrix, rhs in zip(_matrices(a).astype(wide), _matrices(b).astype(wide)):
        triangle = np.tril(matrix) if attrs["lower"] else np.triu(matrix)
        if attrs["unit_diagonal"]:
            np.fill_diagonal(triangle, 1.0)
        if attrs["transpose_a"]:
            triangle = triangle.T
        if attrs["left_side"]:
            results.append(np.linalg.solve(triangle, rhs))
        else:
            results.append(np.linalg.solve(triangle.T, rhs.T).T)
    return (np.array(results, b.dtype).reshape(b.shape) if results else np.zeros(b.shape, b.dtype),)


def _lu_one(matrix):
    rows, columns = matrix.shape
    number = _scalar(matrix)
    packed = [[number(value) for value in row] for row in matrix]
    order, pivots = list(range(rows)), []
    for step in range(min(rows, columns)):
        magnitudes = [abs(packed[row][step].real) + abs(packed[row][step].imag) for row in range(step, rows)]
        pivot = step + magnitudes.index(max(magnitudes))
        pivots.append(pivot)
        packed[step], packed[pivot] = packed[pivot], packed[step]
        order[step], order[pivot] = order[pivot], order[step]
        if packed[step][step] == 0:
            continue
        for row in range(step + 1, rows):
            packed[row][step] /= packed[step][step]
            for column in range(step + 1, columns):
                packed[row][column] -= packed[row][step] * packed[step][column]
    return np.array(packed).reshape(matrix.shape), pivots, order


def lu(attrs, x):
    rows, columns = x.shape[-2:]
    batch = x.shape[:-2]
    results = [_lu_one(matrix) for matrix in _matrices(x)]
    if not results:
        return (np.zeros(x.shape, x.dtype), np.zeros(batch + (min(rows, columns),), np.int32),
                np.zeros(batch + (rows,), np.int32))
    packed = np.array([item[0] for item in results], x.dtype).reshape(x.shape)
    pivots = np.array([item[1] for item in results], np.int32).reshape(batch + (min(rows, columns),))
    order = np.array([item[2] for item in results], np.int32).reshape(batch + (rows,))
    return packed, pivots, order


def _per_matrix(function, x, template):
    """``function`` on each matrix of ``x``, the results stacked over its batch dims, each in
    the dtype of ``template``'s result of that position."""
    batch = x.shape[:-2]
    outputs = [function(matrix) for matrix in _matrices(x)]
    if not outputs:
        return tuple(np.zeros(batch + item.shape, item.dtype) for item in template)
    return tuple(np.array([output[index] for output in outputs], template[index].dtype)
                 .reshape(batch + template[index].shape) for index in range(len(template)))


def _real_of(dtype) -> np.dtype:
    return np.zeros(0, dtype).real.dtype


def qr(attrs, x):
    mode = "complete" if attrs["full_matrices"] else "reduced"
    template = tuple(part.astype(x.dtype) for part in np.linalg.qr(np.zeros(x.shape[-2:], x.dtype), mode=mode))
    return _per_matrix(lambda matrix: np.linalg.qr(matrix, mode=mode), x, template)


def eigh(attrs, x):
    uplo = "L" if attrs["lower"] else "U"

    def one(matrix):
        values, vectors = np.linalg.eigh(matrix, UPLO=uplo)
        return vectors.astype(x.dtype), values.astype(_real_of(x.dtype))

    return _per_matrix(one, x, one(np.eye(x.shape[-1], dtype=x.dtype)))


def svd(attrs, x):
    if not attrs["compute_uv"]:
        return _per_matrix(lambda matrix: (np.linalg.svd(matrix, compute_uv=False),), x,
                           (np.zeros(min(x.shape[-2:]), _real_of(x.dtype)),))

    def one(matrix):
        u, values, vh = np.linalg.svd(matrix, full_matrices=attrs["full_matrices"])
        return values.astype(_real_of(x.dtype)), u.astype(x.dtype), vh.astype(x.dtype)

    return _per_matrix(one, x, one(np.zeros(x.shape[-2:], x.dtype)))


def _unit_columns(vectors: np.ndarray) -> np.ndarray:
    """Columns of unit norm whose largest component (the first of equals) is real positive."""
    result = []
    for column in vectors.T:
        column = column / np.linalg.norm(column)
        largest = column[int(np.argmax(np.abs(column) ** 2))]
        result.append(column * (abs(largest) / largest if largest != 0 else 1))
    return np.array(result).T.reshape(vectors.shape)


def _left_vectors(matrix, values):
    """Right eigenvectors of ``matrix^H`` for ``conj(values)``, paired by nearest eigenvalue."""
    conjugate_values, vectors = np.linalg.eig(np.conj(matrix.T))
    order = [int(np.argmin(np.abs(conjugate_values - np.conj(value)))) for value in values]
    left = _unit_columns(vectors[:, order].astype(np.complex128))
    if not np.iscomplexobj(matrix):
        left[:, np.imag(values) == 0] = left[:, np.imag(values) == 0].real
    return left


def eig(attrs, x):
    complex_type = np.result_type(x.dtype, np.complex64)
    left, right = attrs["compute_left_eigenvectors"], attrs["compute_right_eigenvectors"]

    def one(matrix):
        values, vectors = np.linalg.eig(matrix)
        results = [values.astype(complex_type)]
        if left:
            results.append(_left_vectors(matrix, values).astype(complex_type))
        if right:
            results.append(vectors.astype(complex_type))
        return tuple(results)

    return _per_matrix(one, x, one(np.diag(np.arange(1.0, x.shape[-1] + 1)).astype(x.dtype)))


def _hessenberg_one(matrix):
    """gehrd by Householder reflections written out on the dense matrix (``H = I - tau v v^H``,
    ``v[0] = 1``, ``beta = -sign(Re alpha) ||x||``), the packed result and the taus."""
    a = matrix.astype(np.complex128 if np.iscomplexobj(matrix) else np.float64)
    size = a.shape[0]
    taus = np.zeros(max(size - 1, 0), a.dtype)
    stored = {}
    for step in range(size - 1):
        x = a[step + 1:, step].copy()
        alpha, rest = x[0], x[1:]
        if not rest.any() and np.imag(alpha) == 0:
            continue
        beta = -math.copysign(math.sqrt(abs(alpha) ** 2 + float(np.sum(np.abs(rest) ** 2))), np.real(alpha))
        tau = (beta - alpha) / beta
        v = np.concatenate([[1.0], rest / (alpha - beta)]).astype(a.dtype)
        reflection = np.eye(size, dtype=a.dtype)
        reflection[step + 1:, step + 1:] -= tau * np.outer(v, np.conj(v))
        a = np.conj(reflection.T) @ a @ reflection
        stored[step], taus[step] = v[1:], tau
    for step, vector in stored.items():
        a[step + 2:, step] = vector
    return a, taus


def hessenberg(attrs, x):
    size = x.shape[-1]
    template = (np.zeros((size, size), x.dtype), np.zeros(max(size - 1, 0), x.dtype))
    return _per_matrix(_hessenberg_one, x, template)


def schur(attrs, x):
    """The reference's Schur form per matrix (the QR iteration is its own definition; the op
    table checks the batching, the dtypes and the results' count; tests/api checks the forms'
    invariants and JAX's eigenvalues)."""
    from meshjit.ir.ops.linalg_schur import schur_one

    size = x.shape[-1]
    template = (np.zeros((size, size), x.dtype),) * (2 if attrs["compute_schur_vectors"] else 1)
    return _per_matrix(lambda matrix: schur_one(matrix)[:len(template)], x, template)
