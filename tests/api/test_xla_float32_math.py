"""float32 exp, exp2, expm1, log, log1p, log2, log10, tanh, logistic and erf equal JAX 0.10.2's
(XLA's own polynomials with its fused multiply-adds and denormal flushing, ir/xla_math.py), and
x ** y (glibc's powf, ir/libm_powf.py), bit for bit: eager (small arrays on the numpy oracle, larger ones as kernels) and under jit,
unsharded and split over 8 devices, alone and inside a fused expression, through the first
tier and through the reference interpreter. Expected values: data/jax_xla_math_values.npz (made
by data/make_xla_math_table.py) over the whole float range with XLA's branch points, denormals,
infinities and NaN."""

from __future__ import annotations

import os

import numpy as np
import pytest

import meshjit
import meshjit.numpy as jnp
from meshjit.compiler.lowering import tier_math
from meshjit.ir import xla_math
from meshjit.sharding import NamedSharding, PartitionSpec as P
from float_bits import assert_same_bits, step_names

pytestmark = pytest.mark.usefixtures("restore_runtime_state")

TABLE = np.load(os.path.join(os.path.dirname(__file__), "data", "jax_xla_math_values.npz"))
SIZE = TABLE["x"].size // 8 * 8  # divisible over 8 devices
FUNCTIONS = {"exp": jnp.exp, "exp2": jnp.exp2, "expm1": jnp.expm1, "log": jnp.log, "log1p": jnp.log1p,
             "log2": jnp.log2, "log10": jnp.log10, "tanh": jnp.tanh, "logistic": meshjit.nn.sigmoid,
             "erf": meshjit.scipy.special.erf}
X, EXPECTED = TABLE["x"][:SIZE], {name: TABLE[name][:SIZE] for name in FUNCTIONS}


def _assert_same_bits(label: str, got, expected, x=X) -> None:
    assert_same_bits(label, got, expected, x)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_jit_kernel_and_reference_equal_jax(name):
    compiled = meshjit.jit(FUNCTIONS[name]).lower(X).compile()
    assert any(step.startswith("fused(") for step in step_names(compiled)), step_names(compiled)
    _assert_same_bits(f"{name} (kernel)", compiled(X), EXPECTED[name])
    _assert_same_bits(f"{name} (reference)", compiled.run_reference(X), EXPECTED[name])


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_eager_equals_jax(name):
    # under 1024 elements a lone op runs the numpy oracle, from 1024 a kernel
    _assert_same_bits(f"{name} eager", FUNCTIONS[name](X), EXPECTED[name])
    small = [FUNCTIONS[name](X[start:start + 500]) for start in range(0, SIZE, 500)]
    _assert_same_bits(f"{name} eager, 500 at a time", np.concatenate(small), EXPECTED[name])
    scalars = [FUNCTIONS[name](X[index]) for index in range(0, SIZE, 97)]
    _assert_same_bits(f"{name} eager scalars", np.array(scalars), EXPECTED[name][::97], X[::97])


@pytest.mark.parametrize("name", sorted(set(FUNCTIONS) - {"log2", "log10"}))
def test_first_tier_and_oracle_equal_jax(name):
    with np.errstate(all="ignore"):
        _assert_same_bits(f"{name} first tier", tier_math.HELPERS[f"_{name}_f32"](X), EXPECTED[name])
        _assert_same_bits(f"{name} oracle", xla_math.FUNCTIONS[name](X), EXPECTED[name])


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_sharded_equals_jax(name, mesh_8):
    sharded = meshjit.device_put(X, NamedSharding(mesh_8, P("x")))
    _assert_same_bits(f"{name} sharded, jit", meshjit.jit(FUNCTIONS[name])(sharded), EXPECTED[name])
    _assert_same_bits(f"{name} sharded, eager", FUNCTIONS[name](sharded), EXPECTED[name])


def test_fused_expression_equals_jax(mesh_8):
    # exp * 2 and tanh * 4 are exact, so one rounding of the sum whether or not it is contracted
    function = meshjit.jit(lambda x: jnp.exp(x) * 2 + (jnp.tanh(x) * 4 + meshjit.scipy.special.erf(x)))
    with np.errstate(over="ignore"):
        expected = EXPECTED["exp"] * np.float32(2) + (EXPECTED["tanh"] * np.float32(4) + EXPECTED["erf"])
    compiled = function.lower(X).compile()
    fused = [name for name in step_names(compiled) if name.startswith("fused(")]
    assert len(fused) == 1 and all(f"{name}," in fused[0] for name in ("exp", "tanh", "erf")), fused
    _assert_same_bits("fused", compiled(X), expected)
    _assert_same_bits("fused (reference)", compiled.run_reference(X), expected)
    _assert_same_bits("fused, sharded", function(meshjit.device_put(X, NamedSharding(mesh_8, P("x")))), expected)


POW_SIZE = TABLE["pow"].size // 8 * 8
BASES, EXPONENTS, POWERS = (TABLE[name][:POW_SIZE] for name in ("pow_x", "pow_y", "pow"))


def test_pow_equals_jax(mesh_8):
    # glibc's powf (XLA calls it) under XLA's denormal mode: the numpy twin (ir/libm_powf.py) in
    # small eager ops and the reference, the C library's powf in kernels
    _assert_same_bits("pow eager", jnp.power(BASES, EXPONENTS), POWERS, BASES)
    small = [jnp.power(BASES[start:start + 500], EXPONENTS[start:start + 500]) for start in range(0, POW_SIZE, 500)]
    _assert_same_bits("pow eager, 500 at a time", np.concatenate(small), POWERS, BASES)
    compiled = meshjit.jit(lambda x, y: x ** y).lower(BASES, EXPONENTS).compile()
    _assert_same_bits("pow (kernel)", compiled(BASES, EXPONENTS), POWERS, BASES)
    _assert_same_bits("pow (reference)", compiled.run_reference(BASES, EXPONENTS), POWERS, BASES)
    sharding = NamedSharding(mesh_8, P("x"))
    sharded = [meshjit.device_put(value, sharding) for value in (BASES, EXPONENTS)]
    _assert_same_bits("pow sharded", meshjit.jit(lambda x, y: x ** y)(*sharded), POWERS, BASES)


def test_scalars_print_jaxs_numbers():
    assert float(jnp.exp(jnp.float32(1.0))) == float(np.float32(2.7182817))
    assert float(jnp.tanh(jnp.float32(0.5))) == float(np.float32(0.46211717))
    assert float(jnp.exp(jnp.float32(-87.5))) == 0.0  # e^-87.5 is denormal: flushed, as XLA's CPU mode
    assert float(jnp.log(jnp.float32(1e-40))) == -np.inf  # a denormal reads as zero
