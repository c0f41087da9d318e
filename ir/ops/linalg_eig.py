"""The eigendecomposition of general square matrices, ``eig`` (``jax.lax.linalg.eig``): complex
eigenvalues and, when asked, left and right eigenvectors, normalised as LAPACK's geev does (unit
2-norm, the component of largest magnitude real). Part of the linalg family (linalg.py imports
it). The reference calls numpy's geev on the whole batch; numpy gives no left eigenvectors, so
they are the rows of the inverse of the right ones (``vl^H a = w vl^H``), normalised the same
way, with the largest component real and positive (geev's sign of a real left eigenvector is its
own choice)."""

from __future__ import annotations

import numpy as np

from ..dtypes import COMPLEX_OF
from ..reference import reference_impls
from ..shape_rules import COMPLEX, WIDE_FLOATS, bool_attr, expect_dtype, expect_operand_count, fail, shape_rules

OPS = ("eig",)

_FLAGS = ("compute_left_eigenvectors", "compute_right_eigenvectors", "enable_eigvec_derivs")


@shape_rules.register("eig")
def _eig(op, operands, attrs, regions, meshes):
    """``w`` (``[..., n]``), then ``vl`` and ``vr`` (``[..., n, n]``) as asked, all complex."""
    expect_operand_count(op, operands, 1)
    (operand,) = operands
    expect_dtype(op, "operand", operand, WIDE_FLOATS + COMPLEX)
    if operand.rank < 2 or operand.shape[-1] != operand.shape[-2]:
        fail(op, f"operand {operand} must be a square matrix (or a batch of them) in its last two dims")
    left, right, _ = (bool_attr(op, attrs, name) for name in _FLAGS)
    result = operand.with_dtype(COMPLEX_OF.get(operand.dtype, operand.dtype))
    return (result.with_shape(operand.shape[:-1]),) + (result,) * (int(left) + int(right))


def normalise_columns(vectors: np.ndarray) -> np.ndarray:
    """Each column scaled to unit 2-norm with its component of largest magnitude (the first of
    equals) real and positive; a zero column stays zero."""
    norms = np.linalg.norm(vectors, axis=-2, keepdims=True)
    unit = vectors / np.where(norms == 0, 1, norms)
    magnitudes = unit.real ** 2 + unit.imag ** 2
    largest = np.take_along_axis(unit, np.argmax(magnitudes, axis=-2)[..., None, :], axis=-2)
    size = np.abs(largest)
    phase = np.where(size == 0, 1, np.conj(largest) / np.where(size == 0, 1, size))
    return unit * phase


def _one_matrix_or_nan(matrix: np.ndarray, left: bool, right: bool) -> tuple:
    """``(w, vl, vr)`` of one matrix (NaN when geev does not converge)."""
    complex_type = np.result_type(matrix.dtype, np.complex64)
    size = matrix.shape[-1]
    try:
        with np.errstate(all="ignore"):
            values, vectors = np.linalg.eig(matrix) if left or right else (np.linalg.eigvals(matrix), None)
            inverse = np.linalg.inv(vectors) if left else None
    except np.linalg.LinAlgError:
        nan = np.full((size, size), np.nan, complex_type)
        return nan[0], nan, nan
    values = values.astype(complex_type)
    right_vectors = vectors.astype(complex_type) if right else None
    left_vectors = normalise_columns(np.conj(inverse.T)).astype(complex_type) if left else None
    if left and not np.iscomplexobj(matrix):
        # NOTE: a real eigenvalue's left eigenvector is real, as geev gives it
        left_vectors.imag[:, values.imag == 0] = 0
    return values, left_vectors, right_vectors


@reference_impls.register("eig")
def _eig_impl(attrs, operand):
    left, right = attrs["compute_left_eigenvectors"], attrs["compute_right_eigenvectors"]
    batch, size = operand.shape[:-2], operand.shape[-1]
    matrices = operand.reshape((-1, size, size))
    complex_type = np.result_type(operand.dtype, np.complex64)
    values = np.zeros((len(matrices), size), complex_type)
    vectors = {name: np.zeros((len(matrices), size, size), complex_type) for name in ("left", "right")}
    for index, matrix in enumerate(matrices):
        one_values, one_left, one_right = _one_matrix_or_nan(matrix, left, right)
        values[index] = one_values
        if left:
            vectors["left"][index] = one_left
        if right:
            vectors["right"][index] = one_right
    results = [values.reshape(batch + (size,))]
    results += [vectors[name].reshape(operand.shape) for name, asked in (("left", left), ("right", right)) if asked]
    return tuple(results)
