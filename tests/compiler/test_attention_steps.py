"""The attention benchmark's steps: dot_generals of one left operand as one step
(compiler/lowering/sibling_contractions.py: the q, k and v projections), and the chain of scores,
softmax and weighted sum writing its result in the layout the output projection's GEMM reads
(contraction_fusion.py, ``_result_order``). Each must give the bits the plain steps give (the
same GEMMs), equal the reference interpreter to float rounding, and leave alone what it cannot
join."""

from __future__ import annotations

import numpy as np
import pytest

import meshjit as jax
import meshjit.nn as nn
import meshjit.numpy as jnp
from meshjit.compiler.lowering import contraction_fusion, fusion, lower, matmul_kernels, sibling_contractions
from meshjit.runtime import threads
from meshjit.runtime.plan import KernelStep
from meshjit.sharding import Mesh, NamedSharding, PartitionSpec as P


@pytest.fixture
def small_gemms(monkeypatch):
    """Whole GEMMs handed to the threads, and chains and fused kernels formed, at test sizes
    (on 2 threads); the list it gives records the number of GEMMs of every joined job."""
    monkeypatch.setattr(threads, "MATMUL_GRAIN", 1 << 10)
    monkeypatch.setattr(contraction_fusion, "CHAIN_MIN_WORK", 0)
    monkeypatch.setattr(fusion, "FUSION_MIN_ELEMENTS", 0)
    count = threads.thread_count()
    threads.set_thread_count(2)
    jobs = []

    def recording(function, total, *args, **kwargs):
        jobs.append(total)
        return threads.parallel_for(function, total, *args, **kwargs)

    monkeypatch.setattr(sibling_contractions, "parallel_for", recording)
    yield jobs
    threads.set_thread_count(count)


def _attention(x, wq, wk, wv, wo):
    """The benchmark's "attention heads sharded" program."""
    q = jnp.einsum("td,dhk->thk", x, wq)
    k = jnp.einsum("td,dhk->thk", x, wk)
    v = jnp.einsum("td,dhk->thk", x, wv)
    scores = jnp.einsum("thk,shk->hts", q, k) / float(np.sqrt(q.shape[-1]))
    out = jnp.einsum("hts,shk->thk", nn.softmax(scores, axis=-1), v)
    return jnp.einsum("thk,hkd->td", out, wo)


def _attention_arguments(devices=4, t=64, d=32, h=8, dh=8):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(shape).astype(np.float32)
              for shape in ((t, d), (d, h, dh), (d, h, dh), (d, h, dh), (h, dh, d))]
    mesh = Mesh(np.array(jax.devices()[:devices]), ("model",))
    specs = [(None, None)] + [(None, "model", None)] * 3 + [("model", None, None)]
    return [jax.device_put(array, NamedSharding(mesh, P(*spec))) for array, spec in zip(arrays, specs)]


def _compiled(function, arguments):
    return jax.jit(function).lower(*arguments).compile()


def _kernel_steps(compiled) -> list[str]:
    return [step.name for step in compiled.runtime_executable().plan.steps if isinstance(step, KernelStep)]


def _unjoined(monkeypatch, function, arguments):
    """The program compiled with the siblings left as separate steps."""
    with monkeypatch.context() as patch:
        patch.setattr(lower, "fuse_sibling_contractions", lambda ops, lead: ops)
        compiled = _compiled(function, arguments)
        assert not any(name.startswith("dot_general x") for name in _kernel_steps(compiled))
        return np.asarray(compiled(*arguments))


def test_attention_projections_are_one_job_with_the_separate_steps_bits(small_gemms, monkeypatch):
    arguments = _attention_arguments()
    compiled = _compiled(_attention, arguments)
    names = _kernel_steps(compiled)
    # q, k, v in one step; scores, softmax and weighted sum one chain; the output projection
    # and its all_reduce one GEMM; the one transpose left is the einsum's own (thk), a view
    assert names.count("dot_general x3") == 1
    assert sum(name.startswith("dot_general+fused(") and name.endswith("+dot_general") for name in names) == 1
    assert names.count("dot_general+all_reduce") == 1 and names.count("transpose") == 1
    assert not any(name == "dot_general" for name in names)
    joined = np.asarray(compiled(*arguments))
    assert small_gemms == [12]  # 3 projections x 4 devices, in one job
    np.testing.assert_array_equal(joined, _unjoined(monkeypatch, _attention, arguments))
    np.testing.assert_allclose(joined, np.asarray(compiled.run_reference(*arguments)), rtol=2e-5, atol=2e-5)


def test_small_siblings_run_as_their_own_kernels(monkeypatch):
    # under the matmul grain the GEMMs stay on the calling thread, dot by dot, as before
    jobs = []
    monkeypatch.setattr(sibling_contractions, "parallel_for", lambda *args, **kwargs: jobs.append(args))
    arguments = _attention_arguments()
    compiled = _compiled(_attention, arguments)
    assert "dot_general x3" in _kernel_steps(compiled)
    result = np.asarray(compiled(*arguments))
    assert not jobs
    np.testing.assert_array_equal(result, _unjoined(monkeypatch, _attention, arguments))


def test_a_sibling_whose_right_operand_comes_later_stays_apart(small_gemms, monkeypatch):
    rng = np.random.default_rng(1)
    mesh = Mesh(np.array(jax.devices()[:2]), ("model",))
    x, w1, w2, w3 = (rng.standard_normal(shape).astype(np.float32) for shape in ((64, 32), (32, 64), (32, 64), (32, 64)))
    placed = [jax.device_put(x, NamedSharding(mesh, P()))] + [
        jax.device_put(w, NamedSharding(mesh, P(None, "model"))) for w in (w1, w2, w3)]

    def function(x, w1, w2, w3):
        first = x @ w1
        later = w2 * jnp.sum(first)  # computed from the first product: cannot join it
        return x @ later + x @ w3

    compiled = _compiled(function, placed)
    names = _kernel_steps(compiled)
    assert names.count("dot_general x2") == 1 and names.count("dot_general") == 1
    result = np.asarray(compiled(*placed))
    assert small_gemms == [4]  # the first and third products on 2 devices
    np.testing.assert_array_equal(result, _unjoined(monkeypatch, function, placed))
    first = x @ w1
    np.testing.assert_allclose(result, x @ (w2 * first.sum()) + x @ w3, rtol=1e-4, atol=1e-3)


def test_the_output_projection_reads_the_chain_result_without_a_copy(small_gemms, monkeypatch):
    # the weighted sum (heads, tokens, head dims) is read by the output projection, after the
    # einsum's transpose, as tokens x (devices, heads, head dims): the chain writes it so
    arguments = _attention_arguments()
    laid_out = _compiled(_attention, arguments)
    reads = []

    def recording(array, shape):
        reads.append(array.flags.c_contiguous)
        return array.reshape(shape)

    monkeypatch.setattr(matmul_kernels, "reshaped", recording)
    result = np.asarray(laid_out(*arguments))
    # the last step's reads: its left operand, then its right one, as views, no copies
    assert reads[-2:] == [True, True]
    with monkeypatch.context() as patch:
        patch.setattr(contraction_fusion, "_result_order", lambda *args: None)
        plain = _compiled(_attention, arguments)
    reads.clear()
    np.testing.assert_array_equal(result, np.asarray(plain(*arguments)))
    assert reads[-2:] == [False, True]  # row-major, the left operand is copied
    np.testing.assert_allclose(result, np.asarray(laid_out.run_reference(*arguments)), rtol=2e-5, atol=2e-5)
