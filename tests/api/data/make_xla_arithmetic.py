"""Regenerate ``jax_xla_arithmetic.json`` from JAX: run with a Python that has JAX 0.10.2 (on
CPU): ``python tests/api/data/make_xla_arithmetic.py``. float32 bit patterns of the inputs,
``lax.rsqrt`` of them, ``3 / sqrt(|x|)`` under jit (XLA makes it ``3 * rsqrt(|x|)``) and
``x / 7`` under jit (XLA makes it ``x * (1 / 7)``)."""

import json
import pathlib
import sys

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).parent.parent))
from xla_arithmetic_cases import CONTRACTED  # noqa: E402

rng = np.random.default_rng(7)
magnitudes = np.float32(10.0) ** rng.integers(-37, 38, 3000).astype(np.float32)
specials = [0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, 1e-45, 1e-39, 1.17549435e-38, 3.4e38, 1.0, 4.0, 0.25, 2.00001]
x = np.concatenate([rng.random(3000, dtype=np.float32) * magnitudes, np.array(specials, np.float32)]).astype(np.float32)
table = {
    "x": x,
    "rsqrt": jax.lax.rsqrt(jnp.asarray(x)),
    "three_over_sqrt_abs": jax.jit(lambda a, b: a / jnp.sqrt(b))(jnp.full_like(x, 3.0), jnp.asarray(np.abs(x))),
    "over_seven_jit": jax.jit(lambda a: a / 7.0)(jnp.asarray(x)),
}
path = pathlib.Path(__file__).parent / "jax_xla_arithmetic.json"
path.write_text(json.dumps({name: np.asarray(values).view(np.uint32).tolist() for name, values in table.items()}) + "\n")
print(f"wrote {len(x)} points to {path.name}")

# XLA's rules for divisions of divisions, on positive operands
rng = np.random.default_rng(8)
a, b, c, d = (jnp.asarray(rng.random(2000, dtype=np.float32) + np.float32(0.5)) for _ in range(4))
chains = {
    "chain_a": a, "chain_b": b, "chain_c": c, "chain_d": d,
    "a_over_b_over_c": jax.jit(lambda a, b, c: (a / b) / c)(a, b, c),
    "a_over_b_over_c_over_d": jax.jit(lambda a, b, c, d: (a / b) / (c / d))(a, b, c, d),
    "a_over_quotient": jax.jit(lambda a, b, c: a / (b / c))(a, b, c),
}
table = json.loads(path.read_text())
table.update({name: np.asarray(values).view(np.uint32).tolist() for name, values in chains.items()})
path.write_text(json.dumps(table) + "\n")

# XLA's CPU code contracts a product and an add into one fused multiply-add (xla_arithmetic_cases)
table = json.loads(path.read_text())
for name, case in CONTRACTED.items():
    result = jax.jit(case(jax, jnp))(a, b, c)
    table[f"fma_{name}"] = np.asarray(result[0] if isinstance(result, tuple) else result).view(np.uint32).tolist()
path.write_text(json.dumps(table) + "\n")
