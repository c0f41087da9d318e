"""Tiered fused kernels (compiler/tiers.py, compile_service.py): the first tier gives the
kernel's bits exactly, steps switch to their kernels between calls once a worker has compiled
them, and a worker that dies or fails leaves programs on the first tier with one warning."""

from __future__ import annotations


import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit import lax
from meshjit.sharding import Mesh, NamedSharding, PartitionSpec as P
from tier_helpers import bits, tiered_steps

pytestmark = pytest.mark.usefixtures("restore_runtime_state")

SHAPE = (64, 128)


def _special(dtype, rng) -> np.ndarray:
    """Values of ``dtype`` with the edge cases (signed zeros, infinities, NaN, subnormals,
    extremes) among random ones."""
    if np.issubdtype(dtype, np.floating):
        info = np.finfo(dtype)
        edges = [0.0, -0.0, np.inf, -np.inf, np.nan, info.tiny / 4, -info.tiny / 4, info.max, -info.max, 1.0, -1.5]
        values = rng.standard_normal(SHAPE) * rng.choice([1e-30, 1.0, 1e30], SHAPE)
    elif dtype == np.bool_:
        return rng.random(SHAPE) < 0.5
    else:
        info = np.iinfo(dtype)
        edges = [0, 1, -1, info.min, info.max, info.min + 1, info.max - 1]
        values = rng.integers(-1000, 1000, SHAPE)
    values = values.astype(dtype)
    values.flat[:len(edges)] = np.array(edges, dtype=dtype)
    return values.reshape(SHAPE)


def _bits_on_both_tiers(monkeypatch, program, *arguments, expect_tiered=True):
    """The results under MESHJIT_COMPILE=never (first tier) and sync (kernels), as bytes."""
    results = {}
    for mode in ("never", "sync"):
        monkeypatch.setenv("MESHJIT_COMPILE", mode)
        function = jax.jit(program)
        if mode == "never" and expect_tiered:
            assert tiered_steps(function, *arguments), "no step ran on the first tier"
        out = function(*arguments)
        results[mode] = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(out)]
    for first, kernel in zip(results["never"], results["sync"]):
        assert first.dtype == kernel.dtype and first.shape == kernel.shape
        assert bits(first) == bits(kernel)



FLOAT_OPS = {
    "add": lambda x, y: (x + y) - x, "sub": lambda x, y: (x - y) * x, "mul": lambda x, y: x * y + x,
    "div": lambda x, y: x / y - y, "neg": lambda x, y: -x + y, "abs": lambda x, y: jnp.abs(x) * y, "sqrt": lambda x, y: lax.sqrt(x) - y,
    "floor": lambda x, y: jnp.floor(x * y), "ceil": lambda x, y: jnp.ceil(x - y),
    "compare": lambda x, y: jnp.where(x < y, x, y * 2), "ne": lambda x, y: jnp.where(x != y, x * y, y),
    "is_finite": lambda x, y: jnp.where(jnp.isfinite(x + y), x, y),
    "square": lambda x, y: lax.integer_pow(x, 2) + y, "cube": lambda x, y: lax.integer_pow(x - y, 3),
    "scalar": lambda x, y: (x * 3.0 + 1.0) / y, "via_f32": lambda x, y: (x.astype(jnp.float32) * y.astype(jnp.float32)).astype(x.dtype) + y,
    # the helpers (tier_math.py) and the ops spelled in numpy (tier_ops.py)
    "exp": lambda x, y: jnp.exp(x * y), "log": lambda x, y: jnp.log(x + y), "tanh": lambda x, y: jnp.tanh(x - y),
    "logistic": lambda x, y: jax.nn.sigmoid(x * y), "exp_scaled": lambda x, y: jnp.exp(x * 1e-30 * y) + jnp.log(x * 1e30),
    "max": lambda x, y: jnp.maximum(x, y) * 2, "min": lambda x, y: jnp.minimum(x * y, y),
    "relu": lambda x, y: jnp.maximum(x * y, 0.0), "rsqrt": lambda x, y: lax.rsqrt(x * y),
    "pow4": lambda x, y: lax.integer_pow(x + y, 4), "square_op": lambda x, y: lax.square(x - y) * y,
}
INT_OPS = {
    "add": lambda x, y: (x + y) - x, "sub": lambda x, y: (x - y) * x, "mul": lambda x, y: x * y + x,
    "neg": lambda x, y: -x * y,
    "max": lambda x, y: jnp.maximum(x, y) + 1, "min": lambda x, y: jnp.minimum(x, y) * y, "abs": lambda x, y: jnp.abs(x) - y,
    "to_float": lambda x, y: (x + y).astype(jnp.float32) * 3.0, "to_bool": lambda x, y: (x * y).astype(jnp.bool_) & (x > 0),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(FLOAT_OPS))
def test_first_tier_gives_the_kernels_bits_float(monkeypatch, name, dtype):
    if dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(len(name))
    x, y = _special(np.dtype(dtype), rng), _special(np.dtype(dtype), rng)[::-1].copy()
    _bits_on_both_tiers(monkeypatch, FLOAT_OPS[name], x, y)


# reductions in their kernels' order (tier_reductions.py): over the leading dims (columns
# kernels: each column's rows in order), and the order-free ones over the trailing dims
REDUCTIONS = {
    "col_sum": lambda x, y: (x * y).sum(axis=0), "col_mean_square": lambda x, y: ((x - y) ** 2).mean(axis=0),
    "col_prod": lambda x, y: (x * 0.25 + y).prod(axis=0), "col_max": lambda x, y: jnp.maximum(x, y).max(axis=0),
    "col_min": lambda x, y: (x - y).min(axis=0), "col_zeros": lambda x, y: (x * 0.0 * y).sum(axis=0),
    "col_zero_max": lambda x, y: (x * 0.0 * y).max(axis=0), "col_zero_min": lambda x, y: (x * 0.0 + y * 0.0).min(axis=0),
    "col_sum_and_max": lambda x, y: ((x + y).sum(axis=0), (x + y).max(axis=0)),
    "row_max": lambda x, y: (x * y).max(axis=-1), "row_min_shifted": lambda x, y: x - (x * y).min(axis=-1, keepdims=True),
    "row_zero_max": lambda x, y: (x * 0.0 * y).max(axis=-1), "row_zero_min": lambda x, y: (x * 0.0 + y).min(axis=-1),
    "row_any": lambda x, y: jnp.any(x * y > 1.0, axis=-1), "row_all": lambda x, y: jnp.all(x + y > -1.0, axis=-1),
    "row_max_scaled": lambda x, y: (x * y).max(axis=-1) / 3.0,
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_first_tier_reductions_give_the_kernels_bits(monkeypatch, name, dtype):
    if dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(len(name) + 7)
    x, y = _special(np.dtype(dtype), rng), _special(np.dtype(dtype), rng)[::-1].copy()
    _bits_on_both_tiers(monkeypatch, REDUCTIONS[name], x, y)


@pytest.mark.parametrize("name", ["col_sum", "col_max", "row_max"])
def test_first_tier_int_reductions_give_the_kernels_bits(monkeypatch, name):
    rng = np.random.default_rng(5)
    x, y = _special(np.dtype(np.int32), rng), _special(np.dtype(np.int32), rng)[::-1].copy()
    _bits_on_both_tiers(monkeypatch, REDUCTIONS[name], x, y)


def test_first_tier_reductions_on_sharded_buffers(monkeypatch):
    mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))
    rng = np.random.default_rng(1)
    x = jax.device_put(_special(np.dtype(np.float32), rng), NamedSharding(mesh, P("x", "y")))
    y = jax.device_put(rng.standard_normal(SHAPE).astype(np.float32), NamedSharding(mesh, P(None, "y")))
    _bits_on_both_tiers(monkeypatch, lambda x, y: ((x * y).sum(axis=0), jnp.exp(x - y).max(axis=-1)), x, y)


@pytest.mark.parametrize("name", sorted(INT_OPS))
def test_first_tier_gives_the_kernels_bits_int(monkeypatch, name):
    rng = np.random.default_rng(len(name))
    x, y = _special(np.dtype(np.int32), rng), _special(np.dtype(np.int32), rng)[::-1].copy()
    _bits_on_both_tiers(monkeypatch, INT_OPS[name], x, y)


def test_first_tier_gives_the_kernels_bits_unsigned(monkeypatch):
    """Random bits' arithmetic: wrapping products and sums, shifts by amounts up to and past
    the width (XLA: every bit shifted out)."""
    rng = np.random.default_rng(9)
    x = rng.integers(0, 2**32, SHAPE, dtype=np.uint32)
    amounts = rng.integers(0, 40, SHAPE, dtype=np.uint32)
    amounts.flat[:4] = [0, 31, 32, 39]

    def program(x, amounts):
        mixed = (x * np.uint32(0x9E3779B9) + amounts) ^ x
        return (mixed >> amounts) | (x << (amounts + np.uint32(1))), lax.shift_right_logical(mixed, jnp.full(SHAPE, 9, jnp.uint32))

    _bits_on_both_tiers(monkeypatch, program, x, amounts)


def test_first_tier_on_sharded_buffers(monkeypatch):
    mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))
    rng = np.random.default_rng(0)
    x = jax.device_put(_special(np.dtype(np.float32), rng), NamedSharding(mesh, P("x", "y")))
    y = jax.device_put(rng.standard_normal(SHAPE).astype(np.float32), NamedSharding(mesh, P(None, "y")))
    _bits_on_both_tiers(monkeypatch, lambda x, y: (x * y + 2.0) * x - y, x, y)


@pytest.mark.parametrize("name", ["exp", "exp2", "expm1", "log", "log1p", "tanh", "logistic", "erf"])
def test_xla_float32_functions_first_tier_gives_the_kernels_bits(monkeypatch, name):
    # XLA's algorithms (ir/xla_math.py) on both tiers
    function = {"logistic": lax.logistic, "erf": lax.erf}.get(name) or getattr(jnp, name)
    x = _special(np.dtype(np.float32), np.random.default_rng(5))
    _bits_on_both_tiers(monkeypatch, lambda x: function(x * 0.75) * 3.0, x)


def test_erf_inv_first_tier_gives_the_kernels_bits(monkeypatch):
    rng = np.random.default_rng(3)
    x = (_special(np.dtype(np.float32), rng) * 1e-30).clip(-1.5, 1.5)
    x.flat[11:17] = [1.0, -1.0, 0.999999, -0.9999999, 0.5, 2.0]
    _bits_on_both_tiers(monkeypatch, lambda x: lax.erf_inv(x * 0.999), x)


def test_ops_without_an_identical_first_tier_wait_for_their_kernel(monkeypatch):
    monkeypatch.setenv("MESHJIT_COMPILE", "never")
    x = np.ones(SHAPE, np.float32)
    for program in (lambda x: (x * 2.0).astype(jnp.int32), lambda x: lax.pow(x * 2.0, x),
                    lambda x: (x * 2.0).prod(axis=-1), lambda x: x / (x * 2.0).prod(axis=-1, keepdims=True)):
        assert not tiered_steps(jax.jit(program), x)
