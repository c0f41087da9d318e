"""Fused reductions (compiler/fusion_groups.py, compiler/codegen_reductions.py): an elementwise
chain with its trailing or leading reductions runs as one kernel and equals the reference
interpreter, with NaN, infinities and overflow in the data, on sharded and unevenly sharded
(padded) values, and when its rows or columns are split over threads."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import meshjit as jax
import meshjit.nn as nn
import meshjit.numpy as jnp
from meshjit.compiler.lowering import codegen, fusion
from meshjit.compiler.lowering.fusion_groups import REDUCERS
from meshjit.runtime.plan import KernelStep
from meshjit.sharding import Mesh, NamedSharding, PartitionSpec as P
from python_scripts import run_without_jit

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def always_fuse(monkeypatch, tmp_path):
    monkeypatch.setattr(fusion, "FUSION_MIN_ELEMENTS", 0)
    monkeypatch.setenv("MESHJIT_CACHE_DIR", str(tmp_path))
    return tmp_path


@pytest.fixture(scope="module")
def mesh():
    return Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))


def _awkward(shape, seed=0) -> np.ndarray:
    """Normal values with NaN, infinities, a whole row of -inf, values whose exp overflows and
    tiny ones, in fixed places."""
    values = np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * 3
    flat = values.reshape(-1, shape[-1])
    flat[1, 2] = np.nan
    flat[2, 3] = np.inf
    flat[3, :] = -np.inf
    flat[4, 0] = 200.0     # exp overflows float32 unless the max is subtracted first
    flat[5, 1] = -1e30
    flat[0, :] = 1e-40     # denormal
    return values


def _layer_norm(x, gamma, beta):
    mean = jnp.mean(x, -1, keepdims=True)
    variance = jnp.mean(jnp.square(x - mean), -1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(variance + 1e-5) * gamma + beta


def _cross_entropy(logits, labels):
    return -jnp.mean(jnp.sum(labels * nn.log_softmax(logits, -1), -1))


# name -> (function of (x, gamma, beta, labels), reduction ops expected in one fused kernel)
PROGRAMS = {
    "softmax": (lambda x, g, b, labels: nn.softmax(x, axis=-1), {"reduce_max", "reduce_sum"}),
    "log_softmax": (lambda x, g, b, labels: nn.log_softmax(x, axis=-1), {"reduce_max", "reduce_sum"}),
    "logsumexp": (lambda x, g, b, labels: nn.logsumexp(x, -1), {"reduce_max", "reduce_sum"}),
    "layer_norm": (lambda x, g, b, labels: _layer_norm(x, g, b), {"reduce_sum"}),
    "cross_entropy": (lambda x, g, b, labels: _cross_entropy(x, labels), {"reduce_max", "reduce_sum"}),
    "mean_variance_rows": (lambda x, g, b, labels: (jnp.mean(x, -1), jnp.var(x, -1)), {"reduce_sum"}),
    "mean_variance_columns": (lambda x, g, b, labels: (jnp.mean(x * 2, 0), jnp.var(x, 0)), {"reduce_sum"}),
    "max_min_prod": (lambda x, g, b, labels: jnp.max(x, -1) - jnp.min(x * g, -1) + jnp.prod(jnp.tanh(x), -1),
                     {"reduce_max", "reduce_min", "reduce_prod"}),
    "sum_all": (lambda x, g, b, labels: jnp.sum(jnp.exp(-jnp.abs(x))), {"reduce_sum"}),
    "columns_and_full_output": (lambda x, g, b, labels: (x * 2 + b, jnp.max(x * 2 + b, 0)), {"reduce_max"}),
}


def _inputs(rows=16, columns=96):
    x = _awkward((rows, columns))
    gamma = np.linspace(0.5, 1.5, columns, dtype=np.float32)
    beta = np.linspace(-1, 1, columns, dtype=np.float32)
    labels = np.random.default_rng(1).random((rows, columns)).astype(np.float32)
    return x, gamma, beta, labels


def _fused_reductions(compiled) -> set[str]:
    steps = compiled.runtime_executable().plan.steps
    return {name for step in steps if isinstance(step, KernelStep) and step.name.startswith("fused(")
            for name in step.name[6:-1].split(",") if name in REDUCERS}


def _check(compiled, arguments):
    got = jax.tree_util.tree_leaves(compiled(*arguments))
    expected = jax.tree_util.tree_leaves(compiled.run_reference(*arguments))
    for value, reference in zip(got, expected):
        reference = np.asarray(reference)
        scale = float(np.nanmax(np.abs(np.where(np.isfinite(reference), reference, 0)), initial=1.0))
        np.testing.assert_allclose(np.asarray(value), reference, rtol=2e-5, atol=2e-6 * scale, equal_nan=True)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_fused_reduction_matches_the_reference(name, always_fuse):
    function, reductions = PROGRAMS[name]
    arguments = _inputs()
    compiled = jax.jit(function).lower(*arguments).compile()
    assert reductions <= _fused_reductions(compiled), compiled.runtime_executable().plan.steps
    _check(compiled, arguments)


@pytest.mark.parametrize("name", ["softmax", "layer_norm", "cross_entropy", "mean_variance_columns"])
@pytest.mark.parametrize("spec", [P("x", None), P(None, "y"), P("x", "y")])
def test_sharded_fused_reduction_matches_the_reference(name, spec, mesh, always_fuse):
    function, _ = PROGRAMS[name]
    x, gamma, beta, labels = _inputs()
    placed = [jax.device_put(x, NamedSharding(mesh, spec)), gamma, beta,
              jax.device_put(labels, NamedSharding(mesh, spec))]
    _check(jax.jit(function).lower(*placed).compile(), placed)


@pytest.mark.parametrize("name", ["softmax", "layer_norm", "sum_all", "mean_variance_columns"])
@pytest.mark.parametrize("spec", [P("y", "x"), P("x", "y")])  # 6 rows, or 90 columns, over 4 devices
def test_uneven_shards_keep_their_padding_out_of_the_reductions(name, spec, mesh, always_fuse):
    function, _ = PROGRAMS[name]
    x, gamma, beta, labels = _inputs(rows=6, columns=90)

    def uneven(x, gamma, beta, labels):
        x = jax.lax.with_sharding_constraint(x, NamedSharding(mesh, spec))
        return function(x, gamma, beta, labels)

    compiled = jax.jit(uneven).lower(x, gamma, beta, labels).compile()
    assert _fused_reductions(compiled)
    _check(compiled, (x, gamma, beta, labels))


@pytest.mark.parametrize("name", ["softmax", "mean_variance_columns", "sum_all"])
def test_rows_and_columns_split_over_threads_match(name, always_fuse, monkeypatch):
    monkeypatch.setattr(fusion, "PARALLEL_MIN_ELEMENTS", 1)
    function, _ = PROGRAMS[name]
    arguments = _inputs(rows=40, columns=200)
    _check(jax.jit(function).lower(*arguments).compile(), arguments)


def test_integer_and_boolean_reductions(always_fuse):
    rng = np.random.default_rng(2)
    ints = rng.integers(-2**31, 2**31 - 1, (8, 64), dtype=np.int64).astype(np.int32)
    compiled = jax.jit(lambda a: (jnp.sum(a * 3, -1), jnp.max(a - 1, -1), jnp.any(a > 0, -1),
                                  jnp.all(a > -2**30, 0))).lower(ints).compile()
    assert {"reduce_sum", "reduce_max"} <= _fused_reductions(compiled)
    for got, expected in zip(compiled(ints), compiled.run_reference(ints)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))  # int32 sums wrap


def test_expensive_values_are_kept_in_scratch_and_cheap_ones_recomputed(always_fuse, monkeypatch):
    # NOTE: a kernel an earlier test loaded in this process is not written again: start afresh
    monkeypatch.setattr(codegen, "_LOADED", {})
    x = _inputs()[0]
    compiled = jax.jit(lambda x: nn.softmax(x * 2, axis=-1)).lower(x).compile()
    step = next(step for step in compiled.runtime_executable().plan.steps if isinstance(step, KernelStep)
                and "reduce_sum" in step.name)
    digest = [name for name in os.listdir(always_fuse / "kernels") if name.endswith(".py")]
    sources = [(always_fuse / "kernels" / name).read_text() for name in digest]
    source = next(text for text in sources if "scratch" in text)
    assert source.count("scratch0[k] = ") == 1 and "_exp_f32" in source.split("scratch0[k] = ")[0].split("for ")[-1]
    assert step.name.count("reduce_") == 2
    _check(compiled, (x,))


def test_kernels_with_reductions_run_with_numba_jit_disabled(tmp_path):
    script = textwrap.dedent("""
        import numpy as np
        import meshjit as jax, meshjit.numpy as jnp, meshjit.nn as nn
        from meshjit.compiler.lowering import fusion
        fusion.FUSION_MIN_ELEMENTS = 0
        x = np.random.default_rng(0).standard_normal((6, 40)).astype(np.float32)
        x[1, 2] = np.nan
        x[2, :] = -np.inf
        for function in (lambda x: nn.softmax(x, -1), lambda x: jnp.var(jnp.tanh(x), 0),
                         lambda x: jnp.maximum(jnp.exp(x.astype(jnp.float32)) - 1, jnp.log(jnp.abs(x))),
                         lambda x: jax.nn.sigmoid(x) * jnp.sum(x, -1, keepdims=True)):
            compiled = jax.jit(function).lower(x).compile()
            assert any(step.name.startswith("fused(") for step in compiled.runtime_executable().plan.steps
                       if hasattr(step, "name"))
            np.testing.assert_allclose(np.asarray(compiled(x)), np.asarray(compiled.run_reference(x)),
                                       rtol=2e-5, atol=1e-6, equal_nan=True)
        print("ok")
    """)
    run_without_jit(script, tmp_path)


def test_a_warm_kernel_cache_runs_fused_programs_without_importing_numba(tmp_path):
    script = textwrap.dedent("""
        import sys
        import numpy as np
        import meshjit as jax, meshjit.nn as nn, meshjit.numpy as jnp
        x = np.random.default_rng(0).standard_normal((64, 256)).astype(np.float32)
        got = jax.jit(lambda x: (nn.softmax(x, -1), jnp.tanh(x * 2 + 1)))(x)
        np.testing.assert_allclose(np.asarray(got[0]), np.exp(x) / np.exp(x).sum(-1, keepdims=True), rtol=1e-5)
        np.testing.assert_allclose(np.asarray(got[1]), np.tanh(x * 2 + 1), rtol=1e-6)
        print("numba" in sys.modules)
    """)
    env = {**os.environ, "MESHJIT_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=ROOT,
                           timeout=300) for _ in range(2)]
    assert all(run.returncode == 0 for run in runs), [run.stderr for run in runs]
    assert [run.stdout.split()[-1] for run in runs] == ["True", "False"]  # compiled, then only loaded


@pytest.mark.parametrize("axis", [0, 1])
def test_a_rows_kernel_over_zero_columns_runs(always_fuse, axis):
    # a (0, 0) value's rows group: its launcher's grain once divided by the zero columns
    x = np.zeros((0, 0), np.float32)
    gradient = jax.jit(jax.grad(lambda v: jnp.sum(jnp.sin(v - jnp.max(v, axis, keepdims=True, initial=-2.0)))))
    assert np.asarray(gradient(x)).shape == (0, 0)
