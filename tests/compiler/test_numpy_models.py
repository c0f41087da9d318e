"""Whole programs written with meshjit.numpy and meshjit.nn: a two-layer MLP and an attention
block, traced (verified, round-tripped), jitted and eager, against numpy in float64."""

from __future__ import annotations

import numpy as np
import optree
import pytest
from helpers import MODES, run, traced_module
from meshjit.ir import parse_module, print_module, verify

import meshjit
import meshjit.numpy as jnp
from meshjit import nn

RNG = np.random.default_rng(7)


def _normal(*shape, scale=1.0):
    return (RNG.normal(size=shape) * scale).astype(np.float32)


# -- two-layer MLP --------------------------------------------------------------------------------
def mlp(x, w1, b1, w2, b2):
    hidden = nn.gelu(x @ w1 + b1)
    logits = jnp.dot(hidden, w2) + b2
    return logits, nn.log_softmax(logits, axis=-1)


def mlp_reference(x, w1, b1, w2, b2):
    x, w1, b1, w2, b2 = (array.astype(np.float64) for array in (x, w1, b1, w2, b2))
    pre = x @ w1 + b1
    hidden = 0.5 * pre * (1 + np.tanh(np.sqrt(2 / np.pi) * (pre + 0.044715 * pre**3)))
    logits = hidden @ w2 + b2
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return logits, shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


MLP_ARGS = (
    _normal(8, 16),
    _normal(16, 32, scale=0.25),
    _normal(32),
    _normal(32, 4, scale=0.25),
    _normal(4),
)


# -- attention block ------------------------------------------------------------------------------
HEADS = 4


def attention(x, wq, wk, wv, wo):
    batch, length, width = x.shape
    head_width = width // HEADS

    def heads(projection):
        return (x @ projection).reshape(batch, length, HEADS, head_width)

    q, k, v = heads(wq), heads(wk), heads(wv)
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(head_width)
    causal = jnp.tril(jnp.ones((length, length), dtype=bool))
    scores = jnp.where(causal, scores, -jnp.inf)
    weights = nn.softmax(scores, axis=-1)
    mixed = jnp.einsum("bhqk,bkhd->bqhd", weights, v).reshape(batch, length, width)
    return mixed @ wo


def attention_reference(x, wq, wk, wv, wo):
    x, wq, wk, wv, wo = (array.astype(np.float64) for array in (x, wq, wk, wv, wo))
    batch, length, width = x.shape
    head_width = width // HEADS
    q, k, v = ((x @ w).reshape(batch, length, HEADS, head_width) for w in (wq, wk, wv))
    scores = np.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(head_width)
    scores = np.where(np.tril(np.ones((length, length), bool)), scores, -np.inf)
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores) / np.exp(scores).sum(axis=-1, keepdims=True)
    return np.einsum("bhqk,bkhd->bqhd", weights, v).reshape(batch, length, width) @ wo


ATTENTION_ARGS = (_normal(2, 6, 16), *(_normal(16, 16, scale=0.25) for _ in range(4)))

PROGRAMS = {
    "mlp": (mlp, mlp_reference, MLP_ARGS),
    "attention": (attention, attention_reference, ATTENTION_ARGS),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_matches_numpy(name, mode):
    program, reference, args = PROGRAMS[name]
    if mode == "eager":
        args = tuple(meshjit.device_put(arg) for arg in args)
    actual = run(mode, program, *args)
    expected = reference(*(np.asarray(arg) for arg in args))
    actual_leaves, expected_leaves = optree.tree_leaves(actual), optree.tree_leaves(expected)
    assert len(actual_leaves) == len(expected_leaves)
    for leaf, reference_leaf in zip(actual_leaves, expected_leaves):
        assert leaf.dtype == np.float32
        np.testing.assert_allclose(leaf, reference_leaf, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_module_verifies_and_parses_back(name):
    program, _, args = PROGRAMS[name]
    traced, _ = traced_module(program, *args)
    verify(traced.module)
    text = print_module(traced.module)
    assert print_module(parse_module(text)) == text
    # Every op records the user's line, so errors and dumps point at the model code.
    assert all(
        op.location and op.location.startswith(__file__) for op in traced.module.main.body.ops
    )


def test_jitted_attention_lowers_to_parseable_text():
    text = meshjit.jit(attention).lower(*ATTENTION_ARGS).as_text()
    verify(parse_module(text))
    assert "dot_general" in text
