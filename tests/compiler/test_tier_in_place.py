"""The first tier writes an op's result into the buffer of an intermediate no later op of the
group reads (tiers.py ``_reusable``): the same bits as the kernels, never into a group's input,
an output, or a buffer another value still shares."""

from __future__ import annotations

import numpy as np
import pytest

import meshjit as jax
import meshjit.nn as nn
from meshjit.compiler.lowering import fusion, tiers
from tier_helpers import bits, tiered_steps

pytestmark = pytest.mark.usefixtures("restore_runtime_state")


@pytest.fixture
def reused(monkeypatch):
    """Small groups fused; the list it gives records every buffer the first tier reused."""
    monkeypatch.setattr(fusion, "FUSION_MIN_ELEMENTS", 0)
    found, reusable = [], tiers._reusable

    def spy(*args):
        buffer = reusable(*args)
        if buffer is not None:
            found.append(buffer.shape)
        return buffer

    monkeypatch.setattr(tiers, "_reusable", spy)
    return found


def _both_tiers(monkeypatch, program, *arguments):
    results = []
    for mode in ("never", "sync"):
        monkeypatch.setenv("MESHJIT_COMPILE", mode)
        function = jax.jit(program)
        if mode == "never":
            assert tiered_steps(function, *arguments)
        results.append([np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(function(*arguments))])
    return results


X = np.random.default_rng(0).standard_normal((16, 300)).astype(np.float32)
Y = np.random.default_rng(1).standard_normal((16, 300)).astype(np.float32)


PROGRAMS = {
    "chain": lambda x, y: ((x * 2.0 + y) * 3.0 - y) * x,
    "softmax": lambda x, y: nn.softmax(x * 2.0, axis=-1) * y,
    "an intermediate also returned": lambda x, y: ((x * 2.0) * y, x * 2.0 + 1.0, (x * 2.0)),
    "a reshaped intermediate": lambda x, y: ((x * 2.0).reshape(16, 3, 100) * 3.0).reshape(16, 300) + (x * 2.0),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_reused_buffers_give_the_kernels_bits(monkeypatch, reused, name):
    x, y = X.copy(), Y.copy()
    first, kernel = _both_tiers(monkeypatch, PROGRAMS[name], x, y)
    assert [bits(a) for a in first] == [bits(b) for b in kernel]
    assert bits(x) == bits(X) and bits(y) == bits(Y)  # the inputs are never written
    if name in ("chain", "softmax"):
        assert reused


def test_an_output_or_shared_buffer_is_never_taken():
    a = np.ones((4, 5), np.float32)
    view = a.reshape(20)
    values = {1: a, 2: view, 3: np.zeros((4, 5), np.float32)}
    assert tiers._reusable(values, [1], [a, values[3]], np.dtype(np.float32)) is None  # 2 shares it
    values = {1: a, 3: np.zeros((4, 5), np.float32)}
    assert tiers._reusable(values, [1], [a, values[3]], np.dtype(np.float32)) is a
    assert tiers._reusable(values, [1], [a, values[3]], np.dtype(np.float64)) is None  # another dtype
    assert tiers._reusable(values, [1], [a[:, :1], values[3]], np.dtype(np.float32)) is a  # broadcast shape
    assert tiers._reusable({1: a[:, :1].copy(), 3: a}, [1], [a[:, :1], a], np.dtype(np.float32)) is None
