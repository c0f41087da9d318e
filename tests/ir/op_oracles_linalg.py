"""Oracles of the linear algebra ops. Cholesky, the triangular solve and LU are written out
matrix by matrix in Python floats from their textbook definitions (LU pivots on the first row of
largest magnitude, as LAPACK); QR, eigh and SVD, whose signs are LAPACK's choice, call numpy's
LAPACK one matrix at a time, which checks the batching, the results' order and dtypes."""

from __future__ import annotations

import math

import numpy as np


def _matrices(array: np.ndarray):
    return array.reshape((math.prod(array.shape[:-2]),) + array.shape[-2:])


def _cholesky_one(matrix) -> np.ndarray:
    size = matrix.shape[0]
    factor = [[0.0] * size for _ in range(size)]
    for column in range(size):
        pivot = float(matrix[column, column]) - sum(factor[column][k] ** 2 for k in range(column))
        if not pivot > 0:
            return np.tril(np.full((size, size), math.nan))
        factor[column][column] = math.sqrt(pivot)
        for row in range(column + 1, size):
            value = float(matrix[row, column]) - sum(factor[row][k] * factor[column][k] for k in range(column))
            factor[row][column] = value / factor[column][column]
    return np.array(factor).reshape(matrix.shape)


def cholesky(attrs, x):
    factors = [_cholesky_one(matrix) for matrix in _matrices(x)]
    return (np.array(factors, x.dtype).reshape(x.shape) if factors else np.zeros(x.shape, x.dtype),)


def triangular_solve(attrs, a, b):
    """``op(a) x = b`` (or ``x op(a) = b``) by numpy's general solver on the triangle read."""
    results = []
    for matrix, rhs in zip(_matrices(a).astype(np.float64), _matrices(b).astype(np.float64)):
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
    packed = [[float(value) for value in row] for row in matrix]
    order, pivots = list(range(rows)), []
    for step in range(min(rows, columns)):
        magnitudes = [abs(packed[row][step]) for row in range(step, rows)]
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
    """``function`` on each matrix of ``x``, the results stacked over its batch dims."""
    batch = x.shape[:-2]
    outputs = [function(matrix) for matrix in _matrices(x)]
    if not outputs:
        return tuple(np.zeros(batch + item.shape, x.dtype) for item in template)
    return tuple(np.array([output[index] for output in outputs], x.dtype).reshape(batch + template[index].shape)
                 for index in range(len(template)))


def qr(attrs, x):
    mode = "complete" if attrs["full_matrices"] else "reduced"
    template = np.linalg.qr(np.zeros(x.shape[-2:], x.dtype), mode=mode)
    return _per_matrix(lambda matrix: np.linalg.qr(matrix, mode=mode), x, template)


def eigh(attrs, x):
    uplo = "L" if attrs["lower"] else "U"

    def one(matrix):
        values, vectors = np.linalg.eigh(matrix, UPLO=uplo)
        return vectors, values

    return _per_matrix(one, x, one(np.eye(x.shape[-1], dtype=x.dtype)))


def svd(attrs, x):
    if not attrs["compute_uv"]:
        return _per_matrix(lambda matrix: (np.linalg.svd(matrix, compute_uv=False),), x,
                           (np.zeros(min(x.shape[-2:])),))

    def one(matrix):
        u, values, vh = np.linalg.svd(matrix, full_matrices=attrs["full_matrices"])
        return values, u, vh

    return _per_matrix(one, x, one(np.zeros(x.shape[-2:], x.dtype)))
