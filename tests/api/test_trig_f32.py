"""float32 sin, cos, tan and cbrt equal JAX 0.10.2's (glibc 2.36's sinf, cosf, tanf and cbrtf,
which XLA's CPU code calls) bit for bit: eager and under jit, unsharded and split over 8 devices,
through the fused kernels (alone and inside a fused expression) and through the reference interpreter, and sin's and cos's derivatives. Expected values: data/jax_trig_values.npz (made by data/make_trig_table.py) over
the whole float range with its edges (signed zeros, denormals, glibc's branch points, near
multiples of pi/2, arguments to 3.4e38, infinities, NaN)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import meshjit
import meshjit.numpy as jnp
from meshjit.sharding import NamedSharding, PartitionSpec as P
from float_bits import assert_same_bits

pytestmark = pytest.mark.usefixtures("restore_runtime_state")

TABLE = np.load(os.path.join(os.path.dirname(__file__), "data", "jax_trig_values.npz"))
SIZE = TABLE["x"].size // 8 * 8  # divisible over 8 devices
FUNCTIONS = {"sin": jnp.sin, "cos": jnp.cos, "tan": jnp.tan, "cbrt": jnp.cbrt}
X, EXPECTED = TABLE["x"][:SIZE], {name: TABLE[name][:SIZE] for name in FUNCTIONS}


def _assert_same_bits(label: str, got, expected) -> None:
    assert_same_bits(label, got, expected, X)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_eager_and_jit_equal_jax(name):
    function = FUNCTIONS[name]
    _assert_same_bits(f"{name} eager", function(X), EXPECTED[name])
    compiled = meshjit.jit(function).lower(X).compile()
    _assert_same_bits(f"{name} (kernel)", compiled(X), EXPECTED[name])
    _assert_same_bits(f"{name} (reference)", compiled.run_reference(X), EXPECTED[name])


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_lone_kernel_equals_jax(name):
    # 2^16 elements and more: a lone sin, cos, tan or cbrt is a kernel of its own
    x, expected = np.tile(X, 2), np.tile(EXPECTED[name], 2)
    compiled = meshjit.jit(FUNCTIONS[name]).lower(x).compile()
    assert [getattr(step, "name", "") for step in compiled.runtime_executable().plan.steps] == [f"fused({name})"]
    _assert_same_bits(f"{name} (kernel)", compiled(x), expected)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_sharded_equals_jax(name, mesh_8):
    sharded = meshjit.device_put(X, NamedSharding(mesh_8, P("x")))
    _assert_same_bits(f"{name} sharded, jit", meshjit.jit(FUNCTIONS[name])(sharded), EXPECTED[name])
    _assert_same_bits(f"{name} sharded, eager", FUNCTIONS[name](sharded), EXPECTED[name])


def test_fused_expression_equals_jax(mesh_8):
    # sin * 2 is exact, so the one rounding of the sum is the same with or without a contraction
    expected = EXPECTED["sin"] * np.float32(2) + EXPECTED["cos"]
    function = meshjit.jit(lambda x: jnp.sin(x) * 2 + jnp.cos(x))
    compiled = function.lower(X).compile()
    # one kernel (XLA's contraction makes the multiply-add one fma, exact here)
    assert any(name.startswith("fused(") and "sin" in name and "cos" in name
               for name in [getattr(step, "name", "") for step in compiled.runtime_executable().plan.steps])
    _assert_same_bits("fused", compiled(X), expected)
    _assert_same_bits("fused (reference)", compiled.run_reference(X), expected)
    _assert_same_bits("fused, sharded", function(meshjit.device_put(X, NamedSharding(mesh_8, P("x")))), expected)


def test_fused_tan_and_cbrt_equal_jax():
    # the negations are exact, so the kernel's values are JAX's tan and cbrt bit for bit
    function = meshjit.jit(lambda x: (-jnp.tan(x), -jnp.cbrt(x)))
    compiled = function.lower(X).compile()
    assert any("tan" in name and "cbrt" in name for name in
               [getattr(step, "name", "") for step in compiled.runtime_executable().plan.steps])
    tan, cbrt = compiled(X)
    _assert_same_bits("fused tan", tan, -EXPECTED["tan"])
    _assert_same_bits("fused cbrt", cbrt, -EXPECTED["cbrt"])


def test_derivatives_are_cos_and_minus_sin():
    finite = np.isfinite(X)
    x = X[finite]
    _assert_same_bits("grad sin", meshjit.grad(lambda x: jnp.sin(x).sum())(x), EXPECTED["cos"][finite])
    _assert_same_bits("grad cos", meshjit.grad(lambda x: jnp.cos(x).sum())(x), -EXPECTED["sin"][finite])


def test_scalars():
    assert np.asarray(jnp.sin(jnp.float32(1.0))).view(np.uint32) == 0x3F576AA4  # 0.84147096
    assert np.asarray(jnp.cos(jnp.float32(1.0))).view(np.uint32) == np.float32(0.5403023).view(np.uint32)
