"""``python -m benchmarks.auto_sharding_search``: how long the automatic sharding search takes
on a 100-op program (a four-block MLP with biases and layer norms, every weight and bias AUTO,
the batch split over "data" on a 2 x 4 mesh), and what it chose. Prints one line per run."""

from __future__ import annotations

import sys
import time

import numpy as np

import meshjit as jax
import meshjit.numpy as jnp
from meshjit import nn
from meshjit.sharding import AUTO, Mesh, NamedSharding
from meshjit.sharding import PartitionSpec as P

BATCH, WIDTH, HIDDEN, BLOCKS = 16, 256, 1024, 3


def _norm(x):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    centred = x - mean
    return centred / jnp.sqrt(jnp.mean(centred * centred, axis=-1, keepdims=True) + 1e-5)


def blocks(x, *params):
    for index in range(0, len(params), 4):
        w1, b1, w2, b2 = params[index:index + 4]
        x = x + nn.gelu(_norm(x) @ w1 + b1) @ w2 + b2
    return x


def arguments(seed: int = 0):
    rng = np.random.default_rng(seed)
    params = []
    for _ in range(BLOCKS):
        params += [rng.standard_normal((WIDTH, HIDDEN)).astype(np.float32) / 16, np.zeros(HIDDEN, np.float32),
                   rng.standard_normal((HIDDEN, WIDTH)).astype(np.float32) / 32, np.zeros(WIDTH, np.float32)]
    return [rng.standard_normal((BATCH, WIDTH)).astype(np.float32)] + params


def main(budget: int | None = 3_000_000) -> None:
    mesh = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("data", "model"))
    batch = NamedSharding(mesh, P("data"))
    args = arguments()
    f = jax.jit(blocks, in_shardings=(batch,) + (AUTO(mesh),) * (len(args) - 1), out_shardings=batch,
                memory_budget_bytes=budget)
    lowered = f.lower(*args)
    ops = len(lowered.module.main.body.ops)
    started, cpu_started = time.perf_counter(), time.process_time()
    compiled = lowered.compile()
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    report = compiled.program.search
    print(f"{ops} ops, {len(args) - 1} AUTO arguments: search {report.seconds:.2f} s ({report.evaluations} "
          f"candidates, {report.seconds / report.evaluations * 1000:.0f} ms each), compile in all {seconds:.2f} s "
          f"wall, {cpu_seconds:.2f} s of CPU; budget {budget}")
    print(report.format(top=3))
    print("collectives:", [str(record) for record in compiled.collectives()])


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3_000_000)
