"""jax.lax functions whose CPU form is a plain computation: ``approx_max_k``/``approx_min_k``
are the exact top k on CPU (XLA's CPU backend ignores the recall target), and ``composite``
runs its decomposition (XLA inlines a composite it has no kernel for)."""

from __future__ import annotations

import functools

from . import lax_ops as lax
from .lax_slicing import top_k
from .numpy_api.arguments import normalize_axis
from .operands import as_operand, shape_of

# NOTE: the public names, re-exported by the facade (``meshjit.lax``).
__all__ = ("approx_max_k", "approx_min_k", "composite")


def _exact_k(operand, k: int, reduction_dimension: int, largest: bool):
    operand = as_operand(operand)
    rank = len(shape_of(operand))
    axis = normalize_axis(reduction_dimension, rank, "approx_max_k" if largest else "approx_min_k")
    values, indices = top_k(operand if largest else lax.neg(operand), k, axis=axis)
    return [values if largest else lax.neg(values), indices]  # a list, as JAX returns


def approx_max_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):
    """``[values, indices]`` of the ``k`` largest along ``reduction_dimension`` (exact on CPU)."""
    return _exact_k(operand, k, reduction_dimension, True)


def approx_min_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):
    """``[values, indices]`` of the ``k`` smallest along ``reduction_dimension`` (exact on CPU)."""
    return _exact_k(operand, k, reduction_dimension, False)


def composite(decomposition, name: str, version: int = 0):
    """``decomposition`` as lax's named composite: called, it computes the decomposition."""
    if not callable(decomposition):
        raise TypeError(f"lax.composite: decomposition must be callable, got {decomposition!r}")

    @functools.wraps(decomposition)
    def call(*args, **kwargs):
        return decomposition(*args, **kwargs)

    return call
