"""Print the linear algebra programs of test_stablehlo_linalg.py with JAX 0.10.2 (8 CPU devices,
the batch sharded over x) and save their inputs and outputs: run from this folder with
``XLA_FLAGS=--xla_force_host_platform_device_count=8 python make_linalg_programs.py``."""

import pathlib

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

rng = np.random.default_rng(5)
base = rng.standard_normal((8, 4, 4)).astype(np.float32)
spd = (base @ np.swapaxes(base, 1, 2) + 4 * np.eye(4)).astype(np.float32)
tall = rng.standard_normal((8, 5, 3)).astype(np.float32)


def program(a, s, t):
    w, v = jnp.linalg.eigh(s)
    u, values, vh = jnp.linalg.svd(t, full_matrices=False)
    packed, pivots = jsl.lu_factor(a)
    return (jnp.linalg.cholesky(s), jnp.linalg.cholesky(s, upper=True), w, v * v, values, u * u, vh * vh,
            jnp.linalg.svdvals(a), packed, pivots, jsl.solve_triangular(a, t[:, :4, :], lower=True),
            jsl.solve_triangular(a, t[:, :4, :], trans="T", unit_diagonal=True), jnp.linalg.svd(a)[0] ** 2,
            jnp.linalg.det(a), jnp.linalg.inv(a))


mesh = jax.make_mesh((8,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
arguments = [jax.device_put(value, NamedSharding(mesh, P("x"))) for value in (base + 3 * np.eye(4, dtype=np.float32), spd, tall)]
jitted = jax.jit(program)
folder = pathlib.Path(__file__).parent
(folder / "linalg.mlir").write_text(jitted.lower(*arguments).as_text())
outputs = jitted(*arguments)
np.savez(folder / "linalg.npz", **{f"arg{i}": np.asarray(value) for i, value in enumerate(arguments)},
         **{f"out{i}": np.asarray(value) for i, value in enumerate(outputs)})
print("wrote linalg.mlir and linalg.npz")
