"""The buffer pool hands a large buffer out again only once nothing else refers to it."""

import numpy as np
import pytest
from meshjit.runtime import buffers
from meshjit.runtime.buffers import BufferPool

import meshjit as jax
import meshjit.numpy as jnp
from meshjit.sharding import Mesh, NamedSharding, PartitionSpec as P

LARGE = (512, 1024)  # 2 MiB of float32


def test_a_free_buffer_is_reused_and_a_referenced_one_is_not():
    pool = BufferPool(64 << 20)
    first = pool.empty(LARGE, np.float32)
    address = first.ctypes.data
    view = first.reshape(-1)[10:]  # a view keeps the buffer in use
    del first
    second = pool.empty(LARGE, np.float32)
    assert second.ctypes.data != address and pool.reused == 0
    del view
    third = pool.empty(LARGE, np.float32)
    assert third.ctypes.data == address and pool.reused == 1
    assert pool.empty(LARGE, np.float64).ctypes.data not in (address, second.ctypes.data)


def test_small_buffers_and_a_zero_limit_bypass_the_pool():
    pool = BufferPool(64 << 20)
    pool.empty((8, 8), np.float32)
    assert not pool.held
    off = BufferPool(0)
    off.empty(LARGE, np.float32)
    assert not off.held and off.bytes == 0


def test_a_full_pool_drops_free_buffers_to_make_room():
    pool = BufferPool(3 << 20)  # room for one 2 MiB buffer
    kept = pool.empty(LARGE, np.float32)
    other = pool.empty((1024, 512), np.float32)  # no room while `kept` is in use
    assert pool.bytes == 2 << 20 and all(buffer is not other for held in pool.held.values() for buffer in held)
    del kept
    again = pool.empty((1024, 512), np.float32)  # the free 512x1024 buffer is dropped for it
    assert pool.bytes == 2 << 20 and list(pool.held) == [((1024, 512), np.dtype(np.float32).str)]
    assert again.shape == (1024, 512)


def test_results_kept_by_the_caller_are_never_overwritten(monkeypatch):
    pool = BufferPool(256 << 20)
    monkeypatch.setattr(buffers, "POOL", pool)
    monkeypatch.setattr(buffers, "empty", pool.empty)
    from meshjit.compiler.lowering import launch
    monkeypatch.setattr(launch, "empty", pool.empty)
    mesh = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("x", "y"))
    rng = np.random.default_rng(0)
    values = [rng.standard_normal((1024, 1024)).astype(np.float32) for _ in range(3)]
    arrays = [jax.device_put(value, NamedSharding(mesh, P("x", "y"))) for value in values]
    f = jax.jit(lambda a: jnp.tanh(a) * 2)
    kept = [f(array) for array in arrays]
    for _ in range(2):
        np.asarray(f(arrays[0]))  # results dropped at once: their buffers go back to the pool
    assert pool.reused >= 1
    host = np.asarray(kept[1])
    f(arrays[2])
    for result, value in zip(kept, values):
        np.testing.assert_allclose(np.asarray(result), np.tanh(value) * 2, rtol=1e-6)
    np.testing.assert_allclose(host, np.tanh(values[1]) * 2, rtol=1e-6)


@pytest.mark.parametrize("limit", [0, 64 << 20])
def test_programs_give_the_same_values_with_and_without_the_pool(monkeypatch, limit):
    pool = BufferPool(limit)
    from meshjit.compiler.lowering import launch
    monkeypatch.setattr(launch, "empty", pool.empty)
    x = np.random.default_rng(1).standard_normal((1024, 512)).astype(np.float32)
    f = jax.jit(lambda x: jax.nn.softmax(x, axis=-1))
    first = f(x)
    second = f(x + 1)
    expected = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(np.asarray(first), expected / expected.sum(-1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(second), np.asarray(first), rtol=1e-5)


@pytest.mark.skipif(not buffers.MALLOC_TUNED, reason="glibc's mallopt is not available here")
def test_buffers_under_the_pool_size_are_reused_without_page_faults():
    resource = pytest.importorskip("resource")

    def one_step():
        # a step's worth of 256 KiB buffers alive at once, then freed (a scan's saved residuals)
        held = [np.ones((256, 256), np.float32) for _ in range(24)]
        return sum(float(buffer[0, 0]) for buffer in held)

    one_step()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(5):
        one_step()
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    assert faults < 100, f"{faults} page faults over 5 steps of 6 MiB each (1,536 pages a step untuned)"
