"""Every optimisation on per-device modules earns its place: each scenario below compiles a
program through the public jit and shows what the pass removes, then replaces the pass with a
no-op and shows the difference come back. A pass added to ``pipeline.OPTIMISATIONS`` needs a
scenario here."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from meshjit.compiler import pipeline
from meshjit.compiler.frontend.lax_collectives import psum

import meshjit as jax
import meshjit.numpy as jnp
from meshjit.shard_map_api import shard_map
from meshjit.sharding import Mesh, NamedSharding
from meshjit.sharding import PartitionSpec as P


def _mesh(shape, names):
    return Mesh(np.array(jax.devices()[: int(np.prod(shape))]).reshape(shape), names)


def _collectives(compiled):
    return [(record.kind, record.axes, record.bytes) for record in compiled.collectives()]


def _one_product_used_twice():
    # x @ w is written twice, and each copy's partial sums are all-reduced for its consumer
    mesh = _mesh((8,), ("x",))
    x, w = np.ones((4, 16), np.float32), np.full((16, 4), 1 / 16, np.float32)
    f = jax.jit(lambda x, w: jnp.exp(x @ w) + jnp.tanh(x @ w),
                in_shardings=(NamedSharding(mesh, P(None, "x")), NamedSharding(mesh, P("x", None))))
    return f, (x, w), np.exp(x @ w) + np.tanh(x @ w)


def _nested_psums():
    mesh = _mesh((2, 4), ("x", "y"))
    f = jax.jit(shard_map(lambda a: psum(psum(a * a, "x"), "y"), mesh=mesh, in_specs=P("x", "y"), out_specs=P()))
    a = np.arange(64, dtype=np.float32).reshape(8, 8) / 64
    squares = (a * a).reshape(2, 4, 4, 2).sum(axis=(0, 2))
    return f, (a,), squares


def _unused_value():
    mesh = _mesh((8,), ("x",))
    f = jax.jit(lambda x: (x + 1, jnp.exp(x))[0], in_shardings=NamedSharding(mesh, P("x")))
    x = np.arange(8, dtype=np.float32)
    return f, (x,), x + 1


def _product_added():
    # XLA's CPU code rounds a product added to something once (a fused multiply-add)
    mesh = _mesh((8,), ("x",))
    f = jax.jit(lambda x, y: x * 0.3 + y, in_shardings=NamedSharding(mesh, P("x")))
    x, y = np.linspace(0.5, 2, 16, dtype=np.float32), np.linspace(-1, 1, 16, dtype=np.float32)
    return f, (x, y), x * np.float32(0.3) + y


def _divided_by_seven():
    # XLA divides by a constant as it multiplies by the constant's reciprocal
    mesh = _mesh((8,), ("x",))
    f = jax.jit(lambda x: x / 7.0, in_shardings=NamedSharding(mesh, P("x")))
    x = np.linspace(0.5, 2, 16, dtype=np.float32)
    return f, (x,), x / np.float32(7)


def _ops(compiled):
    return [line.split("=", 1)[1].split("(")[0].strip() for line in compiled.as_text().splitlines()
            if line.strip().startswith("%")]


# pass -> (program, what the optimised program shows, what it shows with the pass a no-op)
SCENARIOS = {
    "eliminate_common_subexpressions": (
        _one_product_used_twice,
        lambda compiled: _collectives(compiled) == [("all_reduce", ("x",), 112)],
        lambda compiled: _collectives(compiled) == [("all_reduce", ("x",), 112)] * 2),
    "merge_chained_collectives": (
        _nested_psums,
        lambda compiled: _collectives(compiled) == [("all_reduce", ("x", "y"), 56)],
        lambda compiled: _collectives(compiled) == [("all_reduce", ("x",), 32), ("all_reduce", ("y",), 48)]),
    "contract_multiply_adds": (
        _product_added,
        lambda compiled: "fma" in _ops(compiled) and "mul" not in _ops(compiled),
        lambda compiled: "fma" not in _ops(compiled) and "mul" in _ops(compiled)),
    "rewrite_divisions": (
        _divided_by_seven,
        lambda compiled: "mul" in _ops(compiled) and "div" not in _ops(compiled),
        lambda compiled: "div" in _ops(compiled) and "mul" not in _ops(compiled)),
    "eliminate_dead_code": (
        _unused_value,
        lambda compiled: "exp" not in _ops(compiled),
        lambda compiled: "exp" in _ops(compiled)),
}


def test_every_optimisation_has_a_scenario():
    assert sorted(SCENARIOS) == sorted(spec.name for spec in pipeline.OPTIMISATIONS)


@pytest.mark.parametrize("pass_name", sorted(SCENARIOS))
def test_optimisation_changes_the_program(pass_name: str, monkeypatch):
    program, optimised, without = SCENARIOS[pass_name]
    f, args, expected = program()
    compiled = f.lower(*args).compile()
    assert optimised(compiled), compiled.as_text()
    np.testing.assert_allclose(np.asarray(f(*args)), expected, rtol=1e-5)
    monkeypatch.setattr(pipeline, "OPTIMISATIONS", tuple(
        replace(spec, function=lambda module: module) if spec.name == pass_name else spec
        for spec in pipeline.OPTIMISATIONS))
    f, args, expected = program()
    compiled = f.lower(*args).compile()
    assert without(compiled), compiled.as_text()
    np.testing.assert_allclose(np.asarray(f(*args)), expected, rtol=1e-5)
