"""``python -m benchmarks.devices [COUNT ...]``: the same program (a 4-layer MLP, 512x64 input,
64x64 weights on a (data, model) mesh, model = 8) at 8 simulated devices and at each COUNT
(default 1024), each in a fresh process (``MESHJIT_NUM_DEVICES``): the first call (tracing,
partitioning, lowering, running) and the median per call, and their ratios to 8 devices.
Rounds alternate the device counts; figures are medians over rounds."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROUNDS = 3


def _worker() -> None:
    import meshjit as jax
    import meshjit.numpy as jnp
    from meshjit.sharding import Mesh, NamedSharding, PartitionSpec as P

    count = len(jax.devices())
    mesh = Mesh(np.array(jax.devices()).reshape(count // 8, 8), ("data", "model"))
    rng = np.random.default_rng(0)
    x = jax.device_put(rng.standard_normal((512, 64)).astype(np.float32), NamedSharding(mesh, P("data", None)))
    weights = [jax.device_put(rng.standard_normal((64, 64)).astype(np.float32) * 0.1,
                              NamedSharding(mesh, P(None, "model") if index % 2 == 0 else P("model", None)))
               for index in range(4)]

    def mlp(x, w0, w1, w2, w3):
        return jnp.tanh(jnp.tanh(x @ w0) @ w1 @ w2) @ w3

    function = jax.jit(mlp)
    start = time.perf_counter()
    function(x, *weights)
    first = time.perf_counter() - start
    times = []
    for _ in range(100):
        begin = time.perf_counter()
        function(x, *weights)
        times.append(time.perf_counter() - begin)
    print(f"{first:.6f} {float(np.median(times)):.9f}")


def _measure(count: int) -> tuple[float, float]:
    env = {**os.environ, "MESHJIT_NUM_DEVICES": str(count)}
    result = subprocess.run([sys.executable, "-m", "benchmarks.devices", "--worker"], capture_output=True,
                            text=True, cwd=ROOT, env=env, check=True)
    first, per_call = result.stdout.split()[-2:]
    return float(first), float(per_call)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == ["--worker"]:
        _worker()
        return 0
    counts = [8] + [int(word) for word in argv or ["1024"]]
    samples = {count: [] for count in counts}
    for _ in range(ROUNDS):
        for count in counts:
            samples[count].append(_measure(count))
    base_first = float(np.median([first for first, _ in samples[8]]))
    base_call = float(np.median([call for _, call in samples[8]]))
    print(f"load average {os.getloadavg()[0]:.2f}")
    print("| devices | first call | per call | first call / 8 devices | per call / 8 devices |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for count in counts:
        first = float(np.median([value for value, _ in samples[count]]))
        call = float(np.median([value for _, value in samples[count]]))
        print(f"| {count} | {first * 1e3:.1f} ms | {call * 1e6:.0f} µs | {first / base_first:.2f} | {call / base_call:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
