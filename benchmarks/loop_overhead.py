"""``python -m benchmarks.loop_overhead``: what one trip of a loop costs in the Plan's executor.

Each body runs as a scan of 1 and of N steps on an 8x8 float32 carry, unsharded and sharded
over 8 devices; the difference over N - 1 is the cost of one trip (loop bookkeeping plus the
body's kernels and collectives), printed in microseconds (medians of several runs). The
``identity`` body measures the loop step alone.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

import meshjit as jax
import meshjit.numpy as jnp
from meshjit import lax
from meshjit.sharding import Mesh, NamedSharding
from meshjit.sharding import PartitionSpec as P

STEPS = 4001
BODIES = {
    "identity": lambda c, _: (c, None),
    "one add": lambda c, _: (c + c, None),
    "axpy with constants": lambda c, _: (c * 0.5 + 1.0, None),
    "rnn cell (dot, add, tanh)": lambda c, _: (jnp.tanh(c @ c + 1.0), None),
}


def _seconds(function, value, repeats: int = 7) -> float:
    np.asarray(function(value))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        np.asarray(function(value))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def per_trip_microseconds(body, value) -> float:
    short = jax.jit(lambda c: lax.scan(body, c, length=1)[0])
    long = jax.jit(lambda c: lax.scan(body, c, length=STEPS)[0])
    return (_seconds(long, value) - _seconds(short, value)) / (STEPS - 1) * 1e6


def main() -> None:
    mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))
    carry = np.ones((8, 8), np.float32)
    layouts = {"unsharded": carry, "sharded 2x4": jax.device_put(carry, NamedSharding(mesh, P("x", "y")))}
    print(f"{'body':28s}" + "".join(f"{name:>16s}" for name in layouts))
    for name, body in BODIES.items():
        cells = [per_trip_microseconds(body, value) for value in layouts.values()]
        print(f"{name:28s}" + "".join(f"{cell:13.1f} us" for cell in cells))


if __name__ == "__main__":
    main()
