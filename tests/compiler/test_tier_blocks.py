"""A large group's first tier runs a block of leading (mesh) positions at a time on every core
(tiers.py ``in_blocks``): the same bits as the kernels and as the whole-array first tier, for
outputs that vary along the blocked dim, outputs that do not (computed from replicated inputs
alone), outputs broadcast to their shape, and an input returned as it is."""

from __future__ import annotations

import numpy as np
import pytest

import meshjit as jax
import meshjit.nn as nn
import meshjit.numpy as jnp
from meshjit.compiler.lowering import fusion, tiers
from meshjit.sharding import Mesh, NamedSharding, PartitionSpec as P
from tier_helpers import bits, tiered_steps

pytestmark = pytest.mark.usefixtures("restore_runtime_state")

MESH = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("x", "y"))
RNG = np.random.default_rng(3)
A = RNG.standard_normal((16, 96)).astype(np.float32)
B = RNG.standard_normal((16, 96)).astype(np.float32)

PROGRAMS = {
    "softmax": lambda a, b: nn.softmax(a * 2.0, axis=-1) * b,
    "cross-entropy": lambda a, b: -jnp.mean(jnp.sum(b * nn.log_softmax(a, axis=-1), axis=-1)),
    "an output of replicated inputs alone": lambda a, b: (jnp.exp(a * b) + 1.0, jnp.tanh(b * 3.0) - b),
    "an input returned": lambda a, b: (a * b + 2.0, a, jnp.exp(b)),
    "a broadcast output": lambda a, b: (jnp.exp(a * b) * 2.0,
                                        jnp.broadcast_to(jnp.sum(b * a + 1.0, axis=-1, keepdims=True) * 2.0, (16, 96))),
}
SPECS = {"rows on x, b replicated": (P("x", None), P()), "both on x and y": (P("x", "y"), P("x", "y")),
         "a on y, b on x": (P(None, "y"), P("x", None))}


@pytest.fixture
def blocked(monkeypatch):
    """Every fused group large enough to block; the list records the leading extents blocked."""
    monkeypatch.setattr(fusion, "FUSION_MIN_ELEMENTS", 0)
    monkeypatch.setattr(tiers, "BLOCKED_MIN_ELEMENTS", 0)
    found, parallel_for = [], tiers.parallel_for

    def spy(function, total, *args, **kwargs):
        found.append(total)
        return parallel_for(function, total, *args, **kwargs)

    monkeypatch.setattr(tiers, "parallel_for", spy)
    return found


def _results(monkeypatch, mode: str, program, specs) -> list:
    monkeypatch.setenv("MESHJIT_COMPILE", mode)
    placed = [jax.device_put(array, NamedSharding(MESH, spec)) for array, spec in zip((A, B), specs)]
    function = jax.jit(program)
    if mode == "never":
        assert tiered_steps(function, *placed)
    return [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(function(*placed))]


@pytest.mark.parametrize("spec", list(SPECS))
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_blocks_give_the_kernels_and_the_whole_arrays_bits(monkeypatch, blocked, name, spec):
    first = _results(monkeypatch, "never", PROGRAMS[name], SPECS[spec])
    assert blocked, "no group ran in blocks"
    monkeypatch.setattr(tiers, "BLOCKED_MIN_ELEMENTS", 1 << 62)
    whole = _results(monkeypatch, "never", PROGRAMS[name], SPECS[spec])
    kernel = _results(monkeypatch, "sync", PROGRAMS[name], SPECS[spec])
    for a, b, c in zip(first, whole, kernel, strict=True):
        assert a.shape == b.shape == c.shape and bits(a) == bits(b) == bits(c)


def test_blocked_outputs_are_fresh_and_writable_across_calls(monkeypatch, blocked):
    """The outputs come from the buffer pool: a result handed out (read-only) and dropped is
    written again by the next call's blocks."""
    monkeypatch.setenv("MESHJIT_COMPILE", "never")
    placed = [jax.device_put(array, NamedSharding(MESH, P("x", None))) for array in (A, B)]
    function = jax.jit(PROGRAMS["softmax"])
    expected = bits(np.asarray(function(*placed)))
    for _ in range(3):
        assert bits(np.asarray(function(*placed))) == expected


def test_an_output_the_same_along_the_blocked_dim_is_written_once(monkeypatch, blocked):
    """A group whose outputs have different leading shapes (one computed from an input that is
    the same along the first mesh dim): each output keeps its own leading shape, the blocked
    one filled block by block, the other by the first block."""
    from meshjit.compiler.lowering.fusion_groups import Group
    from meshjit.ir import Op, Value
    from meshjit.ir.types import TensorType

    local = TensorType((8, 96), "f32")
    a, b = Value.fresh(local, "a"), Value.fresh(local, "b")
    product, doubled = Value.fresh(local), Value.fresh(local)
    group = Group(shape=(8, 96), ops=[Op("mul", (a, b), (product,)), Op("add", (b, b), (doubled,))])
    run = tiers.first_tier(group, [a, b], [product, doubled])
    left = RNG.standard_normal((4, 1, 8, 96)).astype(np.float32)  # varies along both mesh dims
    right = RNG.standard_normal((1, 2, 8, 96)).astype(np.float32)  # the same along the first
    first, second = run(left, right)
    assert blocked == [4]
    assert first.shape == (4, 2, 8, 96) and bits(first) == bits(left * right)
    assert second.shape == (1, 2, 8, 96) and bits(second) == bits(right + right)
