"""dot_general -> rows kernel [-> dot_general] run one slice at a time (compiler/contraction_fusion.py,
``ContractionChain``): attention's scores, softmax and weighted sum per (device, head).

Each program runs chained and unchained; the chained results must equal the unchained ones
bit for bit (the same GEMMs and the same kernel on the same rows) and the numpy reference to
float rounding, and the plan must hold the chain exactly where it should fire.
"""

from __future__ import annotations

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
import meshjit.nn as nn
from meshjit.compiler.lowering import codegen, compile_service, contraction_fusion, fusion
from meshjit.compiler.lowering.compile_service import CompileService
from meshjit.runtime import threads
from meshjit.runtime.plan import KernelStep
from meshjit.sharding import Mesh, NamedSharding, PartitionSpec as P

CHAIN = "dot_general+fused("


def _full_chains(names) -> int:
    return sum(name.startswith(CHAIN) and name.endswith("+dot_general") for name in names)


def _kernel_chains(names) -> int:
    return sum(name.startswith(CHAIN) and not name.endswith("+dot_general") for name in names)


@pytest.fixture
def small_chains(monkeypatch, tmp_path):
    """Chains and fused kernels for small shapes, in a cache directory of the test's own; the
    list it gives collects a record of every chain that ran slice by slice."""
    monkeypatch.setattr(contraction_fusion, "CHAIN_MIN_WORK", 0)
    monkeypatch.setattr(fusion, "FUSION_MIN_ELEMENTS", 0)
    monkeypatch.setenv("MESHJIT_CACHE_DIR", str(tmp_path))
    sliced = []

    def recording(function, total, *args, **kwargs):
        sliced.append(total)
        return threads.parallel_for(function, total, *args, **kwargs)

    monkeypatch.setattr(contraction_fusion, "parallel_for", recording)
    return sliced


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def _attention(q, k, v, mask=None, bias=None):
    scores = jnp.einsum("thk,shk->hts", q, k) / 4.0
    if mask is not None:
        scores = jnp.where(mask, scores, -1e9)
    if bias is not None:
        scores = scores + bias
    return jnp.einsum("hts,shk->thk", nn.softmax(scores, axis=-1), v)


def _attention_reference(q, k, v, mask=None, bias=None):
    scores = np.einsum("thk,shk->hts", q, k) / np.float32(4.0)
    if mask is not None:
        scores = np.where(mask, scores, np.float32(-1e9))
    if bias is not None:
        scores = scores + bias
    return np.einsum("hts,shk->thk", _softmax(scores), v)


def _steps(function, *arguments) -> list[str]:
    plan = jax.jit(function).lower(*arguments).compile().runtime_executable().plan
    return [step.name for step in plan.steps if isinstance(step, KernelStep)]


def _flat(result) -> np.ndarray:
    """A result, or all of a tuple of results, as one flat numpy array."""
    parts = result if isinstance(result, tuple) else (result,)
    return np.concatenate([np.asarray(part).ravel() for part in parts])


def _run_both(monkeypatch, function, *arguments):
    """(chained result, unchained result, the chained plan's kernel step names); results of
    several outputs come flattened into one array."""
    chained = _flat(jax.jit(function)(*arguments))
    names = _steps(function, *arguments)
    monkeypatch.setattr(contraction_fusion, "CHAIN_MIN_WORK", 1 << 62)
    unchained = _flat(jax.jit(function)(*arguments))
    assert not any(name.startswith(CHAIN) for name in _steps(function, *arguments))
    monkeypatch.setattr(contraction_fusion, "CHAIN_MIN_WORK", 0)
    return chained, unchained, names


def _inputs(t=16, s=16, h=4, d=8, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((t, h, d)).astype(np.float32), rng.standard_normal((s, h, d)).astype(np.float32),
            rng.standard_normal((s, h, d)).astype(np.float32))


def _placed(arrays, specs, mesh):
    return [jax.device_put(array, NamedSharding(mesh, P(*spec))) for array, spec in zip(arrays, specs)]


@pytest.mark.parametrize("devices, spec", [(4, (None, "model", None)), (2, (None, "model", None)), (1, None)])
def test_attention_is_one_chain_and_equals_the_unchained_steps(small_chains, monkeypatch, devices, spec):
    arrays = _inputs()
    if spec is None:
        arguments = arrays
    else:
        mesh = Mesh(np.array(jax.devices()[:devices]), ("model",))
        arguments = _placed(arrays, [spec] * 3, mesh)
    chained, unchained, names = _run_both(monkeypatch, _attention, *arguments)
    assert small_chains == [4]  # one step of 4 heads, whatever the devices
    assert _full_chains(names) == 1 and _kernel_chains(names) == 0
    assert not any(name.startswith("fused(") for name in names)  # the softmax runs inside the chain
    np.testing.assert_array_equal(chained, unchained)
    np.testing.assert_allclose(chained, _attention_reference(*arrays).ravel(), rtol=2e-5, atol=2e-5)


def test_kernel_inputs_of_every_kind_are_read_per_slice(small_chains, monkeypatch):
    # a mask of the scores' shape (a full input), a per-key bias broadcast over the rows (per
    # column) and a per-query one (per row), on heads split over 2 devices and batches
    q, k, v = _inputs(t=8, s=32, h=4, d=8)
    rng = np.random.default_rng(1)
    mask = rng.random((4, 8, 32)) > 0.2
    column_bias = rng.standard_normal(32).astype(np.float32)
    row_bias = rng.standard_normal((4, 8, 1)).astype(np.float32)
    mesh = Mesh(np.array(jax.devices()[:2]), ("model",))
    arguments = _placed([q, k, v, mask, column_bias, row_bias],
                        [(None, "model", None)] * 3 + [("model", None, None), (None,), ("model", None, None)], mesh)

    def function(q, k, v, mask, column_bias, row_bias):
        return _attention(q, k, v, mask, column_bias + row_bias * 0.5)

    chained, unchained, names = _run_both(monkeypatch, function, *arguments)
    assert _full_chains(names) == 1 and small_chains == [4]
    np.testing.assert_array_equal(chained, unchained)
    expected = _attention_reference(q, k, v, mask, column_bias + row_bias * np.float32(0.5))
    np.testing.assert_allclose(chained, expected.ravel(), rtol=2e-5, atol=2e-5)


def test_two_batch_dims_and_a_replicated_operand(small_chains, monkeypatch, x64):
    # batch and heads both batch dims; the keys replicated while queries and values are split
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((2, 4, 16, 8)).astype(np.float64) for _ in range(3))
    mesh = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ("data", "model"))
    arguments = _placed([q, k, v], [("data", "model"), (), ("data", "model")], mesh)

    def function(q, k, v):
        scores = jnp.einsum("bhtd,bhsd->bhts", q, k)
        return jnp.einsum("bhts,bhsd->bhtd", nn.softmax(scores, axis=-1), v)

    chained, unchained, names = _run_both(monkeypatch, function, *arguments)
    assert _full_chains(names) == 1 and small_chains == [8]  # 2 x 2 devices, 2 batch rows each
    np.testing.assert_array_equal(chained, unchained)
    scores = np.einsum("bhtd,bhsd->bhts", q, k)
    np.testing.assert_allclose(chained, np.einsum("bhts,bhsd->bhtd", _softmax(scores), v).ravel(), rtol=1e-10, atol=1e-13)


def test_slices_that_do_not_balance_over_the_threads_run_unchained(small_chains):
    calls = small_chains
    q, k, v = _inputs(h=3)  # 3 heads on one device, 2 threads: the chain's step runs the three steps
    count = threads.thread_count()
    threads.set_thread_count(2)
    try:
        unbalanced = np.asarray(jax.jit(_attention)(q, k, v))
        assert not calls
        q4, k4, v4 = _inputs(h=4)
        jax.jit(_attention)(q4, k4, v4)
        assert calls
    finally:
        threads.set_thread_count(count)
    assert any(name.startswith(CHAIN) for name in _steps(_attention, q, k, v))
    np.testing.assert_allclose(unbalanced, _attention_reference(q, k, v), rtol=2e-5, atol=2e-5)


def test_the_kernel_alone_joins_the_first_dot_where_the_second_cannot(small_chains, monkeypatch):
    q, k, v = _inputs()

    def weights_returned(q, k, v):  # the weights are read twice: written out in full
        weights = nn.softmax(jnp.einsum("thk,shk->hts", q, k), axis=-1)
        return jnp.einsum("hts,shk->thk", weights, v), weights

    def contracted_over_rows(q, k, v):  # the second dot does not contract the kernel's columns
        weights = nn.softmax(jnp.einsum("thk,shk->hts", q, k), axis=-1)
        return jnp.einsum("hts,thk->hsk", weights, v)

    for function in (weights_returned, contracted_over_rows):
        small_chains.clear()
        chained, unchained, names = _run_both(monkeypatch, function, q, k, v)
        assert _full_chains(names) == 0 and _kernel_chains(names) == 1, function.__name__
        assert small_chains == [4]
        np.testing.assert_array_equal(chained, unchained)
    weights = _softmax(np.einsum("thk,shk->hts", q, k))
    np.testing.assert_allclose(chained, np.einsum("hts,thk->hsk", weights, v).ravel(), rtol=2e-5, atol=2e-5)


def test_no_chain_where_the_first_product_is_read_elsewhere(small_chains):
    q, k, v = _inputs()

    def scores_returned(q, k, v):
        scores = jnp.einsum("thk,shk->hts", q, k)
        return jnp.einsum("hts,shk->thk", nn.softmax(scores, axis=-1), v), scores

    assert not any(name.startswith(CHAIN) for name in _steps(scores_returned, q, k, v))


def test_an_elementwise_kernel_stays_apart_from_the_gemm_before_it(small_chains):
    # the Megatron MLP: the gelu after the first GEMM is a kernel of its own step
    rng = np.random.default_rng(3)
    x, w1, w2 = (rng.standard_normal(shape).astype(np.float32) * 0.3 for shape in ((16, 32), (32, 64), (64, 32)))
    mesh = Mesh(np.array(jax.devices()[:4]), ("model",))
    arguments = _placed([x, w1, w2], [(None, None), (None, "model"), ("model", None)], mesh)
    names = _steps(lambda x, w1, w2: nn.gelu(x @ w1) @ w2, *arguments)
    assert not any(name.startswith(CHAIN) for name in names)
    assert any(name.startswith("fused(") for name in names)


def test_rows_stacked_into_one_gemm_stay_unchained(small_chains):
    # data parallel: every device's rows times the same weights is one GEMM in the dot kernel,
    # which the chain leaves to it rather than repacking the weights per device
    calls = small_chains
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal((32, 16)).astype(np.float32), rng.standard_normal((16, 24)).astype(np.float32)
    mesh = Mesh(np.array(jax.devices()[:4]), ("data",))
    arguments = _placed([x, w], [("data", None), (None, None)], mesh)
    function = lambda x, w: nn.softmax(x @ w, axis=-1)  # noqa: E731
    assert _kernel_chains(_steps(function, *arguments)) == 1
    np.testing.assert_allclose(np.asarray(jax.jit(function)(*arguments)), _softmax(x @ w), rtol=1e-5, atol=1e-6)
    assert not calls


def test_small_chains_stay_unchained_by_default(monkeypatch, tmp_path):
    monkeypatch.setenv("MESHJIT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(fusion, "FUSION_MIN_ELEMENTS", 0)
    q, k, v = _inputs()
    assert not any(name.startswith(CHAIN) for name in _steps(_attention, q, k, v))


def test_a_gemm_that_ends_one_chain_does_not_start_another(small_chains):
    # an MLP's layers: x @ w1 -> add, relu -> @ w2 is one chain, whose second GEMM the next
    # layer's kernel also reads; the next chain must not take it (it dropped the first chain)
    rng = np.random.default_rng(5)
    shapes = ((8, 16), (16, 8), (8,), (8, 8), (8,), (8, 4))
    x, w1, b1, w2, b2, w3 = (rng.standard_normal(shape).astype(np.float32) for shape in shapes)

    def mlp(x, w1, b1, w2, b2, w3):
        hidden = jnp.maximum(x @ w1 + b1, 0)
        return jnp.maximum(hidden @ w2 + b2, 0) @ w3

    names = _steps(mlp, x, w1, b1, w2, b2, w3)
    assert _full_chains(names) == 1
    expected = np.maximum(np.maximum(x @ w1 + b1, 0) @ w2 + b2, 0) @ w3
    np.testing.assert_allclose(np.asarray(jax.jit(mlp)(x, w1, b1, w2, b2, w3)), expected, rtol=1e-5, atol=1e-5)


def test_a_chain_runs_unchained_on_the_first_tier_until_its_kernel_is_in(small_chains, monkeypatch):
    # background mode, a worker of the test's own: call 1 must not wait for the softmax kernel
    monkeypatch.setenv("MESHJIT_COMPILE", "background")
    monkeypatch.setattr(codegen, "_LOADED", {})  # NOTE: not a kernel an earlier test loaded from its cache
    service = CompileService(workers=1)
    previous = compile_service.replace_service(service)
    try:
        arguments = _inputs()
        function = jax.jit(_attention)
        first = np.asarray(function(*arguments))
        assert small_chains == []  # the steps ran unchained, the softmax on its first tier
        assert not service.jobs
        second = np.asarray(function(*arguments))
        assert small_chains == [] and len(service.jobs) == 1
        assert service.idle(timeout=600)
        later = np.asarray(function(*arguments))
        assert small_chains == [4]  # the kernel is in: the chain runs slice by slice
    finally:
        service.close()
        compile_service.replace_service(previous)
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(first, later)
