"""The derivative rule of the general eigendecomposition ``eig``, JAX's (hessenberg and schur
have none, as in JAX): an eigenvalue moves by the diagonal of ``V^{-1} dA V``; an eigenvector
(only with ``enable_eigvec_derivs``, else JAX's NotImplementedError) by non-degenerate
perturbation theory, with the free multiple of each vector fixed by LAPACK's normalisation
(unit 2-norm, largest component real). Left eigenvectors are the right ones of ``A^H`` with
conjugate eigenvalues. Everything is linear in the tangent
(products and LU solves with the primal eigenvectors), so reverse mode transposes it."""

from __future__ import annotations

from ..frontend import lax_complex
from ..frontend import lax_ops as lax
from ..frontend import numpy_api as jnp
from ..frontend.autodiff.evaluate import emit
from ..frontend.autodiff.registries import type_of
from ..frontend.lax_linalg import adjoint, diagonal, matmul
from ..frontend.scipy import linalg_solvers
from ..frontend.trace import bind
from ..tables import jvp_rules
from .linalg_autodiff import pairwise_inverse

# NOTE: JAX's message, word for word.
EIGENVECTOR_DERIVATIVES = (
    "Derivatives of non-symmetric eigenvectors are only valid under assumptions on the input that JAX cannot "
    "check (see the enable_eigvec_derivs argument to jax.lax.linalg.eig). Pass enable_eigvec_derivs=True to "
    "jax.lax.linalg.eig to opt in. See https://github.com/jax-ml/jax/issues/2748 for discussion.")


def _rotated(vectors, tangent):
    """``V^{-1} dA V`` (an LU solve with the primal eigenvectors)."""
    packed, _, permutation = linalg_solvers.factor(vectors)
    return matmul(linalg_solvers.lu_solve(packed, permutation, tangent), vectors)


def _vector_change(values, vectors, tangent):
    """``(dw, dv)`` of right eigenvectors ``vectors`` (columns) of eigenvalues ``values``."""
    rotated = _rotated(vectors, tangent)
    moved = matmul(vectors, lax.mul(pairwise_inverse(values, plus=False), rotated))
    # dv_j = u_j + c_j v_j: c_j keeps |v_j| = 1 (real part) and v_j's largest component real
    largest = jnp.argmax(jnp.abs(vectors), axis=-2)
    mask = (jnp.arange(vectors.shape[-2])[:, None] == largest[..., None, :]).astype(vectors.dtype)
    real = -jnp.real(jnp.sum(jnp.conj(vectors) * moved, axis=-2))
    imaginary = -jnp.imag(jnp.sum(mask * moved, axis=-2)) / jnp.real(jnp.sum(mask * vectors, axis=-2))
    scale = lax_complex.complex(real, imaginary)
    return diagonal(rotated), moved + vectors * scale[..., None, :]


@jvp_rules.register("eig")
def _eig(op, primals, tangents):
    (tangent,) = tangents
    attrs = op.attrs
    left, right = attrs["compute_left_eigenvectors"], attrs["compute_right_eigenvectors"]
    if tangent is None:
        outputs = emit(op, primals)
        return outputs, [None] * len(outputs)
    if (left or right) and not attrs["enable_eigvec_derivs"]:
        raise NotImplementedError(EIGENVECTOR_DERIVATIVES)
    full = bind("eig", list(primals), {**attrs, "compute_right_eigenvectors": True})
    values, right_vectors = full[0], full[-1]
    outputs = full if right else full[:-1]
    change = lax.convert_element_type(tangent, type_of(right_vectors).dtype)
    if not (left or right):
        return outputs, [diagonal(_rotated(right_vectors, change))]
    change_values, change_right = _vector_change(values, right_vectors, change)
    changes = [change_values]
    if left:
        changes.append(_vector_change(lax_complex.conj(values), full[1], adjoint(change))[1])
    if right:
        changes.append(change_right)
    return outputs, changes


@jvp_rules.register("hessenberg", "schur")
def _not_differentiable(op, primals, tangents):
    """The Hessenberg and Schur decompositions have no derivative in JAX either."""
    if tangents[0] is None:
        outputs = emit(op, primals)
        return outputs, [None] * len(outputs)
    raise NotImplementedError(f"Differentiation rule for '{op.name}' not implemented")
