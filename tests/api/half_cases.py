"""The calls behind the float16/bfloat16 table: each takes the ``jax`` module (JAX itself when
``data/make_half_table.py`` makes the table, meshjit in the tests) and returns an array.

Inputs are small multiples of powers of two (no transcendental function makes them), so that
sums and matmuls accumulate exactly in f32 and every case in ``CASES`` is deterministic
arithmetic that must equal JAX bit for bit. ``CLOSE_CASES`` hold transcendental functions
(meshjit computes them with numpy's f32 functions, XLA with its own) and sums of inexact
values, whose order differs: within one ulp of the 16-bit type.

float16 chains of ops are cases only one op at a time: XLA compiles a fused f16 chain to native
f16 instructions where the CPU has them (AVX512-FP16 here), contracting ``a * b + c`` into one
rounding, so JAX's numbers for chains depend on the CPU; meshjit rounds after every op, as XLA
does for bfloat16 everywhere and for float16 without native f16 arithmetic. (So
``random.uniform`` in float16 with bounds other than [0, 1) is left out: on this CPU JAX's
``u * (maxval - minval) + minval`` rounds once.)
"""

from __future__ import annotations

import numpy as np

HALF = ("float16", "bfloat16")


def _values(seed: int, shape, scale: int = 16, span: int = 200) -> np.ndarray:
    """Deterministic f32 inputs: integers in [-span, span) over ``scale`` (exact in both types
    for the defaults: 8 significant bits at most)."""
    rng = np.random.default_rng(seed)
    return (rng.integers(-span, span, shape) / scale).astype(np.float32)


def _array(jax, seed, shape, dtype, **options):
    return jax.numpy.asarray(_values(seed, shape, **options)).astype(dtype)


def _chain(jax, dtype):
    x, y, z, w = (_array(jax, seed, (1000,), dtype, scale=64) for seed in range(4))
    return jax.jit(lambda x, y, z, w: (x * y + z) * w)(x, y, z, w)


def _mesh(jax):
    return jax.make_mesh((4, 2), ("x", "y"))


def _sharded(jax, value, *spec):
    return jax.device_put(value, jax.sharding.NamedSharding(_mesh(jax), jax.sharding.PartitionSpec(*spec)))


def _sharded_matmul(jax, dtype, activation=lambda value: value):
    a = _sharded(jax, _array(jax, 10, (12, 40), dtype), "x", None)
    b = _sharded(jax, _array(jax, 11, (40, 6), dtype), None, "y")
    return jax.jit(lambda a, b: activation(a @ b) * 2 + a[:, :6])(a, b)


def _psum(jax, dtype):
    mesh = jax.make_mesh((8,), ("x",))
    value = jax.device_put(_array(jax, 12, (8, 64), dtype, scale=1024, span=2**12),
                           jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("x")))
    spec = jax.sharding.PartitionSpec("x")
    return jax.jit(jax.shard_map(lambda a: jax.lax.psum(a, "x"), mesh=mesh, in_specs=spec,
                                 out_specs=jax.sharding.PartitionSpec()))(value)


def _grad(jax, dtype):
    x = _array(jax, 13, (8, 5), dtype, scale=4, span=8)
    w = _array(jax, 14, (5, 3), dtype, scale=4, span=8)
    return jax.grad(lambda w: jax.numpy.sum((x @ w) ** 2))(w)


# repeated rows: scatter-adds of them round after each update
_IDS = np.array([1, 4, 1, 0, 5, 1, 4], np.int32)


def _key(jax, seed=0):
    return jax.random.key(seed)


def _per_dtype(dtype):
    pair = (_array, 20), (_array, 21)

    def operands(jax):
        return tuple(make(jax, seed, (7, 9), dtype) for make, seed in pair)

    return {
        f"add_{dtype}": lambda jax: jax.numpy.add(*operands(jax)),
        f"sub_{dtype}": lambda jax: operands(jax)[0] - operands(jax)[1],
        f"mul_{dtype}": lambda jax: operands(jax)[0] * operands(jax)[1],
        f"div_{dtype}": lambda jax: operands(jax)[0] / operands(jax)[1],
        f"sqrt_{dtype}": lambda jax: jax.numpy.sqrt(jax.numpy.abs(operands(jax)[0])),
        f"max_{dtype}": lambda jax: jax.numpy.maximum(*operands(jax)),
        f"floor_{dtype}": lambda jax: jax.numpy.floor(operands(jax)[0] / 3),
        f"round_{dtype}": lambda jax: jax.numpy.round(operands(jax)[0] * 3.25),
        f"weak_float_{dtype}": lambda jax: operands(jax)[0] * 2.7 + 1,
        f"from_f32_{dtype}": lambda jax: jax.numpy.asarray(_values(22, (50,), scale=977, span=10**6)).astype(dtype),
        f"to_i32_{dtype}": lambda jax: (_array(jax, 23, (40,), dtype, scale=1, span=2**15) * 2**20).astype("int32"),
        f"less_{dtype}": lambda jax: operands(jax)[0] < operands(jax)[1],
        f"sum_{dtype}": lambda jax: jax.numpy.sum(operands(jax)[0], axis=1),
        f"mean_{dtype}": lambda jax: jax.numpy.mean(operands(jax)[0], axis=0),
        f"max_reduce_{dtype}": lambda jax: jax.numpy.max(operands(jax)[0], axis=0),
        f"matmul_{dtype}": lambda jax: _array(jax, 24, (16, 48), dtype) @ _array(jax, 25, (48, 8), dtype),
        f"grad_{dtype}": lambda jax: _grad(jax, dtype),
        f"psum_{dtype}": lambda jax: _psum(jax, dtype),
        f"uniform_{dtype}": lambda jax: jax.random.uniform(_key(jax), (257,), dtype),
        f"uniform_2d_{dtype}": lambda jax: jax.random.uniform(_key(jax, 3), (6, 5), dtype),
        f"normal_{dtype}": lambda jax: jax.random.normal(_key(jax, 1), (257,), dtype),
        f"finfo_{dtype}": lambda jax: np.array([getattr(jax.numpy.finfo(dtype), name) for name in (
            "eps", "max", "min", "tiny", "smallest_subnormal", "resolution")], np.float64),
    }


CASES = {
    **_per_dtype("float16"),
    **_per_dtype("bfloat16"),
    "chain_bfloat16": lambda jax: _chain(jax, "bfloat16"),
    "uniform_bounds_bfloat16": lambda jax: jax.random.uniform(_key(jax, 2), (300,), "bfloat16", -2.0, 3.0),
    "sharded_matmul_bfloat16": lambda jax: _sharded_matmul(jax, "bfloat16"),
    "promote_bf16_f16": lambda jax: _array(jax, 30, (5,), "bfloat16") + _array(jax, 31, (5,), "float16"),
    "promote_bf16_i32": lambda jax: _array(jax, 32, (5,), "bfloat16") * jax.numpy.arange(5),
    "take_bfloat16": lambda jax: jax.numpy.take(_array(jax, 33, (6, 4), "bfloat16"), _IDS, axis=0),
    "scatter_add_bfloat16": lambda jax: _array(jax, 34, (6, 4), "bfloat16").at[_IDS].add(
        _array(jax, 35, (7, 4), "bfloat16", scale=977)),
    "scatter_add_float16": lambda jax: _array(jax, 36, (6, 4), "float16").at[_IDS].add(
        _array(jax, 37, (7, 4), "float16", scale=977)),
    "embedding_grad_bfloat16": lambda jax: jax.grad(lambda table: jax.numpy.sum(jax.numpy.take(table, _IDS, axis=0) ** 2))(
        _array(jax, 38, (6, 4), "bfloat16", scale=977)),
    "bits_uint8": lambda jax: jax.random.bits(_key(jax, 4), (101,), "uint8"),
    "bits_uint16": lambda jax: jax.random.bits(_key(jax, 5), (3, 33), "uint16"),
}

# the cases compared within one ulp of their dtype (see the module docstring)
CLOSE_CASES = {
    "exp_bfloat16": lambda jax: jax.numpy.exp(_array(jax, 40, (300,), "bfloat16")),
    "tanh_bfloat16": lambda jax: jax.jit(jax.numpy.tanh)(_array(jax, 41, (300,), "bfloat16")),
    "logistic_float16": lambda jax: jax.nn.sigmoid(_array(jax, 42, (300,), "float16")),
    "log_float16": lambda jax: jax.numpy.log(jax.numpy.abs(_array(jax, 43, (300,), "float16")) + 1),
    "softmax_bfloat16": lambda jax: jax.nn.softmax(_array(jax, 44, (6, 50), "bfloat16"), axis=-1),
    "sharded_matmul_tanh_bfloat16": lambda jax: _sharded_matmul(jax, "bfloat16", jax.numpy.tanh),
    "var_bfloat16": lambda jax: jax.numpy.var(_array(jax, 47, (7, 9), "bfloat16"), axis=1),
    "var_float16": lambda jax: jax.numpy.var(_array(jax, 48, (7, 9), "float16"), axis=0),
    "matmul_inexact_bfloat16": lambda jax: _array(jax, 45, (32, 64), "bfloat16", scale=977)
    @ _array(jax, 46, (64, 16), "bfloat16", scale=977),
}


def as_table_entry(value) -> np.ndarray:
    """A numpy array that ``np.savez`` keeps: 16-bit floats as their uint16 bits."""
    array = np.asarray(value)
    return array.view(np.uint16) if array.dtype.itemsize == 2 and array.dtype.kind not in "iu" else array
