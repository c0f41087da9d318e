"""Division as JAX's compiled programs compute it (compiler/optimize/xla_arithmetic.py): XLA makes a
division by a constant a multiplication by its reciprocal and ``a / sqrt(b)`` a multiplication by
XLA's float32 rsqrt (ir/xla_rsqrt.py), so a jitted program's numbers are JAX's; eager division
stays IEEE division, as JAX's. Expected values are JAX 0.10.2's (data/make_xla_arithmetic.py)."""

import json
import pathlib

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit.ir import interpret
from meshjit.sharding import Mesh, NamedSharding, PartitionSpec as P
from xla_arithmetic_cases import CONTRACTED

_TABLE = {name: np.array(bits, np.uint32).view(np.float32)
          for name, bits in json.loads((pathlib.Path(__file__).parent / "data" / "jax_xla_arithmetic.json").read_text()).items()}


def _same_bits(got, expected):
    """Equal bits, NaNs alike; a subnormal result is compared as is only with meshjit's own
    expectation (JAX's CPU code flushes subnormals to zero, meshjit keeps them: docs/numpy.md)."""
    got, expected = np.asarray(got, np.float32), np.asarray(expected, np.float32)
    skipped = (np.isnan(got) & np.isnan(expected)) | ((np.abs(got) < np.finfo(np.float32).tiny) & (expected == 0))
    assert np.array_equal(got.view(np.uint32)[~skipped], expected.view(np.uint32)[~skipped])


def test_rsqrt_is_xlas_on_every_path():
    x = _TABLE["x"]
    _same_bits(jax.lax.rsqrt(jnp.asarray(x)), _TABLE["rsqrt"])
    _same_bits(jax.jit(jax.lax.rsqrt)(jnp.asarray(x)), _TABLE["rsqrt"])
    mesh = Mesh(np.array(jax.devices()[:8]), ("x",))
    padded = np.concatenate([x, np.ones(-len(x) % 8, np.float32)])
    sharded = jax.jit(jax.lax.rsqrt)(jax.device_put(padded, NamedSharding(mesh, P("x"))))
    _same_bits(np.asarray(sharded)[:len(x)], _TABLE["rsqrt"])
    module = jax.jit(jax.lax.rsqrt).lower(jnp.asarray(x)).module
    _same_bits(interpret(module, x)[0], _TABLE["rsqrt"])


def test_a_jitted_division_by_a_root_multiplies_by_rsqrt():
    x = _TABLE["x"]
    got = jax.jit(lambda a, b: a / jnp.sqrt(b))(jnp.full_like(x, 3.0), jnp.abs(jnp.asarray(x)))
    _same_bits(got, _TABLE["three_over_sqrt_abs"])


def test_a_jitted_division_by_a_constant_multiplies_by_its_reciprocal():
    x = _TABLE["x"]
    _same_bits(jax.jit(lambda a: a / 7.0)(jnp.asarray(x)), _TABLE["over_seven_jit"])
    _same_bits(jax.jit(lambda a: a / 7.0)(jnp.asarray(x)), x * (np.float32(1) / np.float32(7)))
    # eagerly too, as JAX's true_divide is jitted and broadcasts the scalar inside (checked in
    # JAX); only a 0-d quotient, whose divisor is not broadcast, is IEEE's division
    _same_bits(jnp.asarray(x) / 7.0, x * (np.float32(1) / np.float32(7)))
    assert float(jnp.float32(30.0) / 100.0) == np.float32(0.3)


@pytest.mark.parametrize("divisor", [
    lambda: 100.0,                              # a Python scalar (a broadcast constant)
    lambda: jnp.array([100.0, 100.0, 100.0]),   # an array made inside the function
    lambda: jnp.float32(50.0) * 2,              # computed from constants (XLA folds it first)
    lambda: jnp.sqrt(jnp.float32(10000.0)),     # a root of a constant is a constant too
])
def test_divisors_xla_folds_into_constants(divisor):
    assert float(jax.jit(lambda a: a / divisor())(jnp.full((3,), 30.0))[0]) == np.float32(0.29999998)


def test_divisions_that_stay_divisions():
    thirty = jnp.float32(30.0)
    assert float(thirty / 100.0) == np.float32(0.3)  # eager
    assert float(jax.jit(lambda b: thirty / b)(jnp.float32(100.0))) == np.float32(0.3)  # divisor varies
    hundred = jnp.float32(100.0)
    # NOTE: a closed-over device array is an argument of meshjit's program (JAX folds it)
    assert float(jax.jit(lambda a: a / hundred)(thirty)) == np.float32(0.3)
    assert jax.jit(lambda a: a // 3)(jnp.int32(7)) == 2  # integers divide exactly


def test_library_means_and_percentiles_divide_as_jaxs_jitted_library_does():
    x = jnp.zeros(100).at[0].set(30.0)
    for mean in (jnp.mean, jax.jit(jnp.mean)):
        assert float(mean(x)) == np.float32(0.29999998)  # JAX's jnp.mean is jitted even eagerly
    assert float(jnp.percentile(jnp.arange(10.0), 30)) == np.float32(2.6999998)
    np.testing.assert_array_equal(jax.nn.standardize(jnp.array([0.0, 0.0, 3.0])),
                                  np.array([-0.70710504, -0.70710504, 1.4142101], np.float32))


def test_in_a_loop_body_and_complex():
    body = jax.jit(lambda a: jax.lax.scan(lambda c, _: (c / 100.0, None), a, None, length=1)[0])
    assert float(body(jnp.float32(30.0))) == np.float32(0.29999998)
    assert complex(jax.jit(lambda a: a / 100.0)(jnp.complex64(30 + 3j))) == np.complex64(0.29999998 + 0.03j)


def test_divisions_of_divisions_as_xla_rewrites_them():
    a, b, c, d = (jnp.asarray(_TABLE[f"chain_{name}"]) for name in "abcd")
    _same_bits(jax.jit(lambda a, b, c: (a / b) / c)(a, b, c), _TABLE["a_over_b_over_c"])
    _same_bits(jax.jit(lambda a, b, c, d: (a / b) / (c / d))(a, b, c, d), _TABLE["a_over_b_over_c_over_d"])
    _same_bits(jax.jit(lambda a, b, c: a / (b / c))(a, b, c), _TABLE["a_over_quotient"])


def test_divisions_by_exponentials_and_powers_become_products():
    a, b = jnp.asarray(_TABLE["chain_a"]), jnp.asarray(_TABLE["chain_b"])
    exp, power = jax.jit(jnp.exp), jax.jit(jnp.power)
    _same_bits(jax.jit(lambda a, b: a / jnp.exp(b))(a, b), a * exp(-b))
    _same_bits(jax.jit(lambda a, b: jnp.exp(a) / jnp.exp(b))(a, b), exp(a - b))
    _same_bits(jax.jit(lambda a, b: a / jnp.power(b, a))(a, b), a * power(b, -a))
    _same_bits(jax.jit(lambda a, b: a / jax.lax.rsqrt(b))(a, b), a * jnp.sqrt(b))


@pytest.mark.parametrize("name", sorted(CONTRACTED))
def test_products_added_contract_into_fused_multiply_adds_as_xlas(name):
    a, b, c = (jnp.asarray(_TABLE[f"chain_{name}"]) for name in "abc")
    result = jax.jit(CONTRACTED[name](jax, jnp))(a, b, c)
    _same_bits(result[0] if isinstance(result, tuple) else result, _TABLE[f"fma_{name}"])


def test_eager_arithmetic_is_not_contracted():
    a, b, c = (_TABLE[f"chain_{name}"] for name in "abc")
    _same_bits(jnp.asarray(a) * b + c, a * b + c)
