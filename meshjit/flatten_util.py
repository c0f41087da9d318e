"""``jax.flatten_util``: a pytree of arrays as one flat vector and back.

``ravel_pytree`` concatenates the leaves, each raveled in tree order and converted to the leaves'
common dtype; the function it returns splits such a vector into the tree again, each leaf back in
its own shape and dtype. Both trace, so they run under ``jit``, ``grad`` and ``vmap`` (optimisers
that work on one flat parameter vector are the usual user)."""

from __future__ import annotations

import warnings

import numpy as np

from . import lax, tree_util
from . import numpy as jnp
from .dtypes import result_type

__all__ = ["ravel_pytree"]


def ravel_pytree(pytree):
    """``(flat, unravel)``: the leaves of ``pytree`` raveled into one 1-d array of their common
    dtype (float32 for a tree without leaves), and the function that rebuilds a tree of the same
    structure, shapes and dtypes from such an array."""
    leaves, treedef = tree_util.tree_flatten(pytree)
    flat, unravel_leaves = _ravel_leaves(leaves)
    return flat, _Unravel(treedef, unravel_leaves)


class _Unravel:
    """The inverse of one ``ravel_pytree`` call: a flat array back into that tree."""

    def __init__(self, treedef, unravel_leaves):
        self._treedef = treedef
        self._unravel_leaves = unravel_leaves

    def __call__(self, flat):
        return tree_util.tree_unflatten(self._treedef, self._unravel_leaves(flat))


def _leaf_dtype(leaf) -> np.dtype:
    """A leaf's dtype as it would be staged (a Python scalar takes its canonical dtype)."""
    return np.dtype(jnp.asarray(leaf).dtype)


def _ravel_leaves(leaves):
    if not leaves:
        return jnp.zeros((0,), jnp.float32), lambda flat: []
    dtypes = [_leaf_dtype(leaf) for leaf in leaves]
    shapes = [np.shape(leaf) for leaf in leaves]
    common = np.dtype(result_type(*dtypes))
    flat = jnp.concatenate([jnp.ravel(lax.convert_element_type(leaf, common)) for leaf in leaves])
    sizes = [int(np.prod(shape, dtype=np.int64)) for shape in shapes]

    def unravel_leaves(array):
        given = np.dtype(jnp.asarray(array).dtype)
        if given != common:
            raise TypeError(f"unravel function given array of dtype {given}, but expected dtype {common}")
        pieces = lax.split(array, sizes)
        return [_restore(piece, shape, dtype) for piece, shape, dtype in zip(pieces, shapes, dtypes)]

    return flat, unravel_leaves


def _restore(piece, shape, dtype):
    """One chunk of the flat vector back in its leaf's shape and dtype (a complex vector's
    imaginary part is dropped with numpy's warning, as a real leaf cannot hold it)."""
    if jnp.iscomplexobj(piece) and not np.issubdtype(dtype, np.complexfloating):
        warnings.warn("Casting complex values to real discards the imaginary part", np.exceptions.ComplexWarning,
                      stacklevel=3)
        piece = jnp.real(piece)
    return lax.convert_element_type(jnp.reshape(piece, shape), dtype)

