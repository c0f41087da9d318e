"""float32 arctan and arctan2 equal JAX 0.10.2's (glibc 2.36's atanf/atan2f, which XLA's CPU
code calls with denormals read as zero and flushed) bit for bit: eager and under jit, through
the fused kernels (codegen_libm_f32.py), the first tier and the reference interpreter
(ir/libm_atanf.py), unsharded and split over 8 devices; float16 and bfloat16 through float32 as
XLA computes them. Expected values: data/jax_atan_values.npz (made by data/make_atan_table.py)
over the whole float range with its edges (signed zeros, denormals, atanf's branch points,
every pair of special values, magnitudes far apart, infinities, NaN)."""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import pytest

import meshjit
import meshjit.numpy as jnp
from meshjit.compiler.lowering import tiers
from meshjit.sharding import NamedSharding, PartitionSpec as P
from float_bits import assert_same_bits, step_names

pytestmark = pytest.mark.usefixtures("restore_runtime_state")

TABLE = np.load(os.path.join(os.path.dirname(__file__), "data", "jax_atan_values.npz"))
SIZE = TABLE["x"].size // 8 * 8  # divisible over 8 devices
PAIRS = TABLE["y2"].size // 8 * 8
X, ARCTAN = TABLE["x"][:SIZE], TABLE["arctan"][:SIZE]
Y2, X2, ARCTAN2 = TABLE["y2"][:PAIRS], TABLE["x2"][:PAIRS], TABLE["arctan2"][:PAIRS]




def test_arctan_eager_jit_and_reference_equal_jax():
    assert_same_bits("arctan eager", jnp.arctan(X), ARCTAN)
    compiled = meshjit.jit(jnp.arctan).lower(X).compile()
    assert_same_bits("arctan jit", compiled(X), ARCTAN)
    assert_same_bits("arctan reference", compiled.run_reference(X), ARCTAN)


def test_arctan2_eager_jit_and_reference_equal_jax():
    assert_same_bits("arctan2 eager", jnp.arctan2(Y2, X2), ARCTAN2)
    compiled = meshjit.jit(jnp.arctan2).lower(Y2, X2).compile()
    assert_same_bits("arctan2 jit", compiled(Y2, X2), ARCTAN2)
    assert_same_bits("arctan2 reference", compiled.run_reference(Y2, X2), ARCTAN2)


def test_fused_kernels_equal_jax(mesh_8):
    # the negations are exact, so the kernel's values are JAX's bit for bit
    function = meshjit.jit(lambda y, x, t: (-jnp.arctan2(y, x), -jnp.arctan(t)))
    compiled = function.lower(Y2, X2, X).compile()
    assert [name for name in step_names(compiled) if "atan2" in name and "neg" in name], step_names(compiled)
    got2, got = compiled(Y2, X2, X)
    assert_same_bits("fused arctan2", got2, -ARCTAN2)
    assert_same_bits("fused arctan", got, -ARCTAN)
    split = NamedSharding(mesh_8, P("x"))
    got2, got = function(*(meshjit.device_put(value, split) for value in (Y2, X2, X)))
    assert_same_bits("fused arctan2, sharded", got2, -ARCTAN2)
    assert_same_bits("fused arctan, sharded", got, -ARCTAN)


def test_first_tier_equals_jax(monkeypatch):
    monkeypatch.setenv("MESHJIT_COMPILE", "never")
    function = meshjit.jit(lambda y, x: -jnp.arctan2(y, x))
    plan = function.lower(Y2, X2).compile().runtime_executable().plan
    assert any(isinstance(getattr(step, "function", None), tiers.TieredKernel) for step in plan.steps)
    assert_same_bits("first tier arctan2", function(Y2, X2), -ARCTAN2)


def test_sharded_equals_jax(mesh_8):
    split = NamedSharding(mesh_8, P("x"))
    y, x = meshjit.device_put(Y2, split), meshjit.device_put(X2, split)
    assert_same_bits("arctan2 sharded, jit", meshjit.jit(jnp.arctan2)(y, x), ARCTAN2)
    assert_same_bits("arctan2 sharded, eager", jnp.arctan2(y, x), ARCTAN2)
    assert_same_bits("arctan sharded", jnp.arctan(meshjit.device_put(X, split)), ARCTAN)


@pytest.mark.parametrize("name, dtype", [("f16", np.float16), ("bf16", ml_dtypes.bfloat16)])
def test_narrow_floats_equal_jax(name, dtype):
    every = np.arange(2 ** 16, dtype=np.uint16).view(dtype)
    expected = TABLE[f"arctan_{name}"].view(dtype)
    assert_same_bits(f"arctan {name} eager", jnp.arctan(every), expected)
    assert_same_bits(f"arctan {name} jit", meshjit.jit(jnp.arctan)(every), expected)
    y, x = TABLE[f"y_{name}"].view(dtype), TABLE[f"x_{name}"].view(dtype)
    expected2 = TABLE[f"arctan2_{name}"].view(dtype)
    assert_same_bits(f"arctan2 {name} eager", jnp.arctan2(y, x), expected2)
    assert_same_bits(f"arctan2 {name} jit", meshjit.jit(jnp.arctan2)(y, x), expected2)


def test_known_values():
    # JAX: arctan keeps a denormal argument (x = 1 skips the division); arctan2 of two
    # denormals divides zero by zero
    assert np.asarray(jnp.arctan(np.float32(1e-40))).view(np.uint32) == np.float32(1e-40).view(np.uint32)
    assert np.isnan(np.asarray(jnp.arctan2(np.float32(1e-40), np.float32(1e-40))))
    assert np.asarray(jnp.arctan2(np.float32(1e-40), np.float32(2.0))).view(np.uint32) == 0
    assert np.asarray(jnp.arctan(np.float32(1.0))).view(np.uint32) == 0x3F490FDB
