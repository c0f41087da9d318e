"""Measuring the cost model: time ring all-reduces of several sizes over every device (a
jitted shard_map ``psum``, minus the same program without it), fit the alpha-beta line
``seconds = steps * alpha + bytes / bandwidth`` by least squares, and time a GEMM for the flop
rate. ``python -m meshjit._calibration`` is what ``meshjit calibrate --mpi P`` runs under
``mpiexec`` (arguments: repeats, then comma-separated sizes; process 0 prints the measurements
as JSON)."""

from __future__ import annotations

import json
import statistics
import sys
import time

import numpy as np

from meshjit.compiler.analysis.cost import CostModel, all_reduce_bytes, ring_steps

SIZES = (256, 4096, 65536, 262144, 1048576)  # f32 elements per device


def _median_seconds(function, argument, repeats: int) -> float:
    function(argument).block_until_ready()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        function(argument).block_until_ready()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def measure_all_reduces(repeats: int = 5, sizes=None) -> list[dict]:
    """Per group size (2 or the process count, doubling up to every device) and message size: the bytes each device
    sends, the ring steps, and the seconds an all-reduce took (its program's time minus that of
    the same program returning its input, which holds the dispatch overhead)."""
    import meshjit as jax
    from meshjit import lax
    from meshjit.sharding import Mesh, NamedSharding
    from meshjit.sharding import PartitionSpec as P

    devices = jax.devices()
    rows = []
    # NOTE: devices are process-major; a stride spreads each group over every process
    count = max(2, jax.process_count())
    while count <= len(devices):
        mesh = Mesh(np.array(devices[::len(devices) // count][:count]), ("all",))
        with_psum = jax.jit(jax.shard_map(lambda x: lax.psum(x, "all"), mesh=mesh, in_specs=P("all"),
                                          out_specs=P()))
        baseline = jax.jit(jax.shard_map(lambda x: x, mesh=mesh, in_specs=P("all"), out_specs=P("all")))
        for size in sizes or SIZES:
            value = jax.device_put(np.ones((count * size,), np.float32), NamedSharding(mesh, P("all")))
            seconds = _median_seconds(with_psum, value, repeats) - _median_seconds(baseline, value, repeats)
            rows.append({"group": count, "bytes": all_reduce_bytes(4.0 * size, count),
                         "steps": ring_steps("all_reduce", count), "seconds": max(seconds, 0.0)})
        count *= 2
    return rows


def measure_flops(size: int = 512, repeats: int = 5) -> float:
    """Flops per second of one float32 GEMM of ``size``^3 on this process."""
    a = np.ones((size, size), np.float32)
    times = []
    for _ in range(repeats + 1):
        started = time.perf_counter()
        a @ a
        times.append(time.perf_counter() - started)
    return 2.0 * size ** 3 / statistics.median(times[1:])


def fit(rows: list[dict], flops_per_second: float, source: str) -> CostModel:
    """Least squares for ``seconds = steps * alpha + bytes * beta``; alpha and beta are kept
    positive (noise can tip a tiny one below zero)."""
    steps = np.array([row["steps"] for row in rows], dtype=float)
    sent = np.array([row["bytes"] for row in rows], dtype=float)
    seconds = np.array([row["seconds"] for row in rows], dtype=float)
    (alpha, beta), *_ = np.linalg.lstsq(np.stack([steps, sent], axis=1), seconds, rcond=None)
    alpha = max(float(alpha), 1e-9)
    beta = max(float(beta), 1e-13)
    return CostModel(alpha, 1.0 / beta, flops_per_second, source)


def slower(first: CostModel, second: CostModel, source: str) -> CostModel:
    """The model of the slower link of two (larger latency, smaller bandwidth)."""
    return CostModel(max(first.latency, second.latency), min(first.bandwidth, second.bandwidth),
                     min(first.flops_per_second, second.flops_per_second), source)


def main(argv: list[str]) -> int:
    """Under mpiexec: join the job, measure, and print the rows from process 0."""
    import meshjit as jax

    jax.distributed.initialize()
    repeats = int(argv[0]) if argv else 5
    sizes = tuple(int(size) for size in argv[1].split(",")) if len(argv) > 1 else None
    rows = measure_all_reduces(repeats, sizes)
    if jax.process_index() == 0:
        print(json.dumps({"rows": rows, "flops_per_second": measure_flops()}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
