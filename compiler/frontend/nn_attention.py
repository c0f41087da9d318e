"""``jax.nn.dot_product_attention``: scaled dot-product attention over ``(batch, length, heads,
head_dim)`` arrays, with grouped key/value heads, a bias, boolean masks (explicit, causal, local
window, sequence lengths), computed as JAX's XLA implementation computes it.

The query heads are split into ``(kv_heads, group)`` so that each group of query heads attends to
one key/value head through two einsums; the logits are masked with a large negative number (not
-inf, so a fully masked row stays finite) and the softmax runs in float32.
"""

from __future__ import annotations

import math

import numpy as np

from . import numpy_api as jnp
from .nn import logsumexp, softmax
from .numpy_api.arguments import array_operand
from .operands import dtype_of, shape_of
from .autodiff.markers import stop_gradient
from meshjit.ir.dtypes import to_numpy

__all__ = ("dot_product_attention",)


def _as_4d(value, name: str):
    operand = array_operand(value, f"dot_product_attention {name}")
    missing = 4 - len(shape_of(operand))
    return jnp.expand_dims(operand, tuple(range(missing))) if missing > 0 else operand


def _check(value, shape, dtype, name: str) -> None:
    """JAX's checks: rank, dtype (when given) and every dim that is not -1."""
    if value is None:
        return
    got = shape_of(value)
    if len(got) != len(shape):
        raise ValueError(f"{name} ndim should be {len(shape)}, but got {len(got)}")
    got_dtype = to_numpy(dtype_of(value).name)
    if dtype is not None and got_dtype != dtype:
        raise ValueError(f"{name} dtype should be {dtype}, but got {got_dtype}")
    if any(want not in (-1, have) for want, have in zip(shape, got)):
        raise ValueError(f"{name} shape should be {list(shape)}: but got {got}")


def _grouped(value, heads: int, kv_heads: int):
    """A ``(B, N or 1, T, S)`` bias or mask as ``(B, K, G, T, S)``."""
    if value is None:
        return None
    batch, given_heads, queries, keys = shape_of(value)
    group = heads // kv_heads
    if given_heads == 1:
        return jnp.broadcast_to(value[:, :, None], (batch, 1, group, queries, keys))
    if given_heads != heads:
        raise ValueError(f"bias and mask must have 1 or {heads} heads, got {given_heads}")
    return jnp.reshape(value, (batch, kv_heads, group, queries, keys))


def _combined_mask(shape, mask, is_causal, query_lengths, key_lengths, window):
    """Where attention is allowed, as a bool array broadcasting to the ``(B, K, G, T, S)``
    logits; None when nothing is masked."""
    queries, keys = shape[-2], shape[-1]
    allowed = None if mask is None else mask

    def both(extra):
        return extra if allowed is None else jnp.logical_and(allowed, extra)

    query_positions = jnp.arange(queries)[:, None]
    key_positions = jnp.arange(keys)[None, :]
    if is_causal:
        allowed = both(jnp.greater_equal(query_positions, key_positions))
    if window is not None:
        left, right = window
        inside = jnp.logical_and(
            jnp.less_equal(query_positions, key_positions + left),
            jnp.greater_equal(query_positions, key_positions - right),
        )
        allowed = both(inside)
    if query_lengths is not None:
        allowed = both(jnp.less(jnp.arange(queries)[None, :, None], query_lengths[:, None, None])[:, None, None])
    if key_lengths is not None:
        allowed = both(jnp.less(jnp.arange(keys)[None, None, :], key_lengths[:, None, None])[:, None, None])
    return allowed


def _large_negative(dtype) -> float:
    # Finite in float32 (the softmax's dtype) even for float64 logits.
    return -0.7 * min(float(np.finfo(dtype).max), float(np.finfo(np.float32).max))


def dot_product_attention(
    query,
    key,
    value,
    bias=None,
    mask=None,
    *,
    scale=None,
    is_causal: bool = False,
    query_seq_lengths=None,
    key_value_seq_lengths=None,
    local_window_size=None,
    implementation=None,
    return_residual: bool = False,
):
    """``softmax(query @ key.T * scale + bias, masked) @ value`` per head, for ``(B, T, N, H)``
    queries and ``(B, S, K, H)`` keys and values (``N`` a multiple of ``K``; 3-d inputs lack B).
    ``return_residual`` also gives the logsumexp of each query's logits, ``(B, T, N)``."""
    if implementation not in (None, "xla"):
        if implementation == "cudnn":
            raise ValueError("dot_product_attention: implementation='cudnn' needs a CUDA GPU; "
                             "meshjit's devices are CPUs, use implementation=None or 'xla'")
        raise ValueError(f"Unsupported implementation option: {implementation}")
    output_shape = shape_of(array_operand(query, "dot_product_attention query"))
    query, key, value = (_as_4d(part, name) for part, name in ((query, "query"), (key, "key"), (value, "value")))
    bias = None if bias is None else _as_4d(bias, "bias")
    mask = None if mask is None else _as_4d(mask, "mask")
    batch, keys, kv_heads, head_dim = shape_of(key)
    key_dtype = to_numpy(dtype_of(key).name)
    _check(value, (batch, keys, kv_heads, head_dim), key_dtype, "value")
    _check(query, (batch, -1, -1, head_dim), key_dtype, "query")
    _check(mask, (-1,) * 4, np.dtype(bool), "mask")
    _check(bias, (-1,) * 4, None, "bias")
    lengths = [None if v is None else jnp.asarray(v) for v in (query_seq_lengths, key_value_seq_lengths)]
    _check(lengths[0], (batch,), np.dtype(np.int32), "query_seq_lengths")
    _check(lengths[1], (batch,), np.dtype(np.int32), "key_value_seq_lengths")
    _, queries, heads, _ = shape_of(query)
    if heads % kv_heads:
        raise ValueError(f"The number of query heads must be a multiple of key/value heads, but got {heads} vs {kv_heads}")
    if isinstance(local_window_size, int):
        local_window_size = (local_window_size, local_window_size)
    group = heads // kv_heads
    logits_dtype = jnp.promote_types(key_dtype, np.float32)
    grouped_query = jnp.reshape(query, (batch, queries, kv_heads, group, head_dim))
    logits = jnp.einsum("btkgh,bskh->bkgts", grouped_query, key, preferred_element_type=logits_dtype)
    logits = jnp.multiply(logits, jnp.asarray(1.0 / math.sqrt(head_dim) if scale is None else scale, dtype=logits_dtype))
    if bias is not None:
        logits = jnp.add(logits, _grouped(bias, heads, kv_heads)).astype(logits_dtype)
    allowed = _combined_mask(
        shape_of(logits), _grouped(mask, heads, kv_heads), is_causal, lengths[0], lengths[1], local_window_size
    )
    if allowed is not None:
        logits = jnp.where(allowed, logits, jnp.asarray(_large_negative(logits_dtype), dtype=logits_dtype))
    logits = logits.astype(np.float32)
    probabilities = softmax(logits, axis=-1).astype(key_dtype)
    encoded = jnp.einsum("bkgts,bskh->btkgh", probabilities, value)
    if lengths[0] is not None:
        valid = jnp.less(jnp.arange(queries)[None, :], lengths[0][:, None])
        encoded = jnp.multiply(encoded, valid[:, :, None, None, None].astype(encoded.dtype))
    encoded = jnp.reshape(encoded, output_shape)
    if not return_residual:
        return encoded
    residual = logsumexp(logits, axis=-1).astype(key_dtype)  # (B, K, G, T)
    residual = jnp.reshape(jnp.transpose(residual, (0, 3, 1, 2)), output_shape[:-1])
    return encoded, stop_gradient(residual)
