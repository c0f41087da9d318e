"""The dot kernel's ways of running a sharded matmul (compiler/lowering/matmul_kernels.py) give numpy's values:
the devices' rows stacked into one GEMM or one GEMM per device, and a contraction over a mesh
axis as one GEMM over the devices' shards side by side or as each device's product summed."""

from __future__ import annotations

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit.compiler.lowering import matmul_kernels as dot
from meshjit.sharding import Mesh, NamedSharding, PartitionSpec as P


@pytest.fixture
def mesh():
    return Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("data", "model"))


def run(mesh, x, w, x_spec, w_spec):
    f = jax.jit(lambda x, w: x @ w, out_shardings=NamedSharding(mesh, P()))
    return np.asarray(f(jax.device_put(x, NamedSharding(mesh, x_spec)), jax.device_put(w, NamedSharding(mesh, w_spec))))


@pytest.mark.parametrize("rows, inner, columns, stacked", [(16, 8, 16, True), (256, 64, 16, False)])
def test_weights_shared_by_the_data_devices(mesh, rows, inner, columns, stacked):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((rows, inner)).astype(np.float32), rng.standard_normal((inner, columns)).astype(np.float32)
    local = ((rows // 2, inner), (inner, columns // 4))
    assert (local[0][0] * (inner + columns // 4) < dot.STACK_MAX_ELEMENTS) == stacked
    np.testing.assert_allclose(run(mesh, x, w, P("data", None), P(None, "model")), x @ w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rows, inner, columns, summed", [
    (16, 256, 8, True),     # a small product of large operands (a weight's gradient): summed
    (64, 32, 64, False),    # a product as large as its operands: one GEMM
])
def test_a_contraction_over_the_model_devices(mesh, rows, inner, columns, summed):
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((rows, inner)).astype(np.float32), rng.standard_normal((inner, columns)).astype(np.float32)
    local_rows, local_inner = rows // 2, inner // 4
    assert (local_rows * columns < local_inner * (local_rows + columns)) == summed
    np.testing.assert_allclose(run(mesh, x, w, P("data", "model"), P("model", None)), x @ w, rtol=1e-5, atol=1e-4)
    # the same along the data axis too (each product counted once per data device's copy)
    got = run(mesh, x[:2].repeat(rows // 2, 0), w, P(None, "model"), P("model", None))
    np.testing.assert_allclose(got, x[:2].repeat(rows // 2, 0) @ w, rtol=1e-5, atol=1e-4)


def test_a_summed_integer_contraction_keeps_its_dtype_and_wraps(mesh):
    x = np.full((16, 256), 1 << 20, np.int32)
    w = np.full((256, 8), 1 << 4, np.int32)
    got = run(mesh, x, w, P("data", "model"), P("model", None))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, (x.astype(np.int64) @ w.astype(np.int64)).astype(np.int32))


def test_a_gradient_summed_over_the_batch_devices_matches_numpy(mesh):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((32, 16)).astype(np.float32)
    w = rng.standard_normal((16, 8)).astype(np.float32)

    def loss(w, x):
        return jnp.sum(jnp.tanh(x @ w))

    grad = jax.jit(jax.grad(loss))(jax.device_put(w, NamedSharding(mesh, P(None, "model"))),
                                   jax.device_put(x, NamedSharding(mesh, P("data", None))))
    np.testing.assert_allclose(np.asarray(grad), x.T @ (1 - np.tanh(x @ w) ** 2), rtol=1e-4, atol=1e-4)
