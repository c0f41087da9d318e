"""``python -m benchmarks [--mpi] [--rounds N] [NAME-FILTER ...]``: every workload against numpy on
one device and against JAX on 8 CPU devices (``MESHJIT_BENCH_JAX_PYTHON``, or the current
interpreter if it can import jax), in one run: each workload's timings alternate numpy, meshjit
and JAX rounds, and the figure is the median of the rounds' medians. The machine's memory
bandwidth and GEMM rate are measured in the same run, and each workload's time is set against
what they allow. ``--mpi`` adds the same workload under ``mpiexec -n 2``. Prints a table (and
the same as markdown)."""

from __future__ import annotations

import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
from rich.console import Console
from rich.table import Table

from . import limits
from .mpi_runner import mpi_seconds
from .timing import median_seconds, peak_bytes
from .workloads import WORKLOADS, program_source

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROUND_BUDGET = 0.25
# NOTE: after a GEMM on several threads, OpenBLAS's idle threads spin for about 0.11 s (a whole
# core, measured) before they sleep, so a round that starts right after a round that used them
# (numpy's reference runs on BLAS's threads) shares the cores with them: the Megatron MLP's
# meshjit round measured 60.4 ms right after numpy's and 51.9 ms after this pause
SETTLE_SECONDS = 0.15


def _jax_python() -> str | None:
    configured = os.environ.get("MESHJIT_BENCH_JAX_PYTHON")
    if configured:
        return configured
    probe = subprocess.run([sys.executable, "-c", "import jax"], capture_output=True)
    return sys.executable if probe.returncode == 0 else None


def _jax_env() -> dict:
    return {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8"}


def _subprocess_seconds(command: list[str], env: dict) -> float | None:
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env)
    if result.returncode != 0:
        print(f"  {' '.join(command[-3:])} failed: {result.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return None
    return float(result.stdout.strip().splitlines()[-1])


def _first_calls(index: int) -> tuple[float | None, float | None]:
    """First call in a new process with an empty kernel cache, then with the cache it left."""
    directory = tempfile.mkdtemp(prefix="meshjit-bench-cache-")
    env = {**os.environ, "MESHJIT_CACHE_DIR": directory}
    command = [sys.executable, "-m", "benchmarks.first_call", str(index)]
    try:
        return _subprocess_seconds(command, env), _subprocess_seconds(command, env)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


class _JaxServer:
    """A JAX process that builds and times workloads on request (benchmarks/jax_runner.py)."""

    def __init__(self, python: str):
        self.process = subprocess.Popen([python, "-m", "benchmarks.jax_runner", "--serve"], cwd=ROOT,
                                        env=_jax_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(self, line: str) -> str:
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline().strip()
        if not answer:
            raise RuntimeError(f"the JAX process gave no answer to {line!r}")
        return answer

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)


def _check(workload, function, placed, arrays) -> None:
    if workload.numpy_function is None:
        value = float(np.asarray(function(*placed)))
        if not np.isfinite(value):
            raise AssertionError(f"{workload.name}: the result is {value}")
        return
    expected = workload.numpy_function(*arrays)
    # f32 results, summed in a different order than numpy's: compare against the output's scale
    error = float(np.max(np.abs(np.asarray(function(*placed)) - expected)))
    scale = float(np.max(np.abs(expected))) or 1.0
    if error > 1e-3 * scale:
        raise AssertionError(f"{workload.name}: max |meshjit - numpy| = {error} (scale {scale})")


def measure(index: int, jax: _JaxServer | None, jax_python: str | None, rounds: int, with_mpi: bool) -> dict:
    workload = WORKLOADS[index]
    arrays = workload.inputs()
    namespace: dict = {}
    exec(program_source(workload), namespace)
    function, placed = namespace["build"](arrays)
    _check(workload, function, placed, arrays)
    if jax is not None:
        jax.ask(f"build {index}")
    samples: dict[str, list[float]] = {"numpy": [], "meshjit": [], "jax": []}
    for _ in range(rounds):
        time.sleep(SETTLE_SECONDS)
        if workload.numpy_function is not None:
            samples["numpy"].append(median_seconds(lambda: workload.numpy_function(*arrays), budget=ROUND_BUDGET))
            time.sleep(SETTLE_SECONDS)
        samples["meshjit"].append(median_seconds(lambda: function(*placed), budget=ROUND_BUDGET))
        if jax is not None:
            time.sleep(SETTLE_SECONDS)
            samples["jax"].append(float(jax.ask(f"time {index} {ROUND_BUDGET}")))
    row = {name: float(np.median(values)) if values else None for name, values in samples.items()}
    row["numpy peak"] = peak_bytes(lambda: workload.numpy_function(*arrays)) if workload.numpy_function else None
    row["meshjit peak"] = peak_bytes(lambda: function(*placed))
    row["cold"], row["warm"] = _first_calls(index)
    row["jax first"] = (_subprocess_seconds([jax_python, "-m", "benchmarks.jax_runner", "--first", str(index)],
                                            _jax_env()) if jax_python else None)
    row["mpi"] = mpi_seconds(index, 2) if with_mpi else None
    return row


def _limit_seconds(workload, machine: dict) -> float:
    """The time the machine's limit allows: bytes over bandwidth, or FLOP over GEMM rate."""
    if workload.flops:
        return workload.flops / machine["gemm"]
    return workload.bytes_moved / machine["bandwidth"]


def _time(seconds) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1e6:.1f} µs" if seconds < 1e-3 else f"{seconds * 1e3:.2f} ms"


def _ratio(top, bottom) -> str:
    return f"{top / bottom:.2f}" if top and bottom else "-"


def _seconds(value) -> str:
    return f"{value:.3f} s" if value is not None else "-"


COLUMNS = ("workload", "numpy", "meshjit", "jax", "meshjit/numpy", "meshjit/jax", "first call cold",
           "first call warm", "jax first call", "peak MB meshjit/numpy", "limit", "of limit")


def _cells(workload, row: dict, machine: dict) -> list[str]:
    limit = _limit_seconds(workload, machine)
    return [workload.name, _time(row["numpy"]), _time(row["meshjit"]), _time(row["jax"]),
            _ratio(row["meshjit"], row["numpy"]), _ratio(row["meshjit"], row["jax"]), _seconds(row["cold"]),
            _seconds(row["warm"]), _seconds(row["jax first"]),
            f"{row['meshjit peak'] / 1e6:.0f} / {row['numpy peak'] / 1e6:.0f}" if row["numpy peak"] else
            f"{row['meshjit peak'] / 1e6:.0f} / -",
            ("BLAS " if workload.flops else "memory ") + _time(limit), f"{limit / row['meshjit']:.0%}"]


def _geomean(values) -> str:
    values = [value for value in values if value]
    return f"{math.exp(sum(math.log(value) for value in values) / len(values)):.2f}" if values else "-"


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    with_mpi = "--mpi" in argv
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 5
    argv = [word for position, word in enumerate(argv) if word not in ("--mpi", "--rounds")
            and (position == 0 or argv[position - 1] != "--rounds")]
    selected = [i for i, w in enumerate(WORKLOADS) if not argv or any(word in w.name for word in argv)]
    jax_python = _jax_python()
    console = Console(width=240)
    load_before = os.getloadavg()
    machine = {"bandwidth every core": limits.bandwidth(), "bandwidth one thread": limits.bandwidth(1),
               "gemm": limits.gemm_rate()}
    # NOTE: the limit is the best the machine showed: on a shared machine one core may be busy
    machine["bandwidth"] = max(machine["bandwidth every core"], machine["bandwidth one thread"])
    console.print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, python "
                  f"{platform.python_version()}, numpy {np.__version__}; BLAS: {limits.blas_description()}; "
                  f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'unset')}; JAX: {jax_python or 'not found'}")
    console.print(f"limits: copy bandwidth {machine['bandwidth every core'] / 1e9:.1f} GB/s on every core "
                  f"({machine['bandwidth one thread'] / 1e9:.1f} GB/s on one), float32 GEMM "
                  f"{machine['gemm'] / 1e9:.0f} GFLOP/s; load average before {load_before[0]:.2f}")
    jax = _JaxServer(jax_python) if jax_python else None
    table = Table(title=f"meshjit benchmarks (median of {rounds} interleaved rounds' medians per call)")
    for column in COLUMNS + (("mpiexec -n 2",) if with_mpi else ()):
        table.add_column(column, justify="right" if column != "workload" else "left")
    rows = []
    try:
        for index in selected:
            console.print(f"running {WORKLOADS[index].name} ...")
            row = measure(index, jax, jax_python, rounds, with_mpi)
            rows.append((WORKLOADS[index], row))
            table.add_row(*_cells(WORKLOADS[index], row, machine), *((_time(row["mpi"]),) if with_mpi else ()))
    finally:
        if jax is not None:
            jax.close()
    console.print(table)
    console.print(f"geomean meshjit/jax {_geomean([row['meshjit'] / row['jax'] for _, row in rows if row['jax']])}, "
                  f"meshjit/numpy {_geomean([row['meshjit'] / row['numpy'] for _, row in rows if row['numpy']])}; "
                  f"load average before {load_before[0]:.2f}, after {os.getloadavg()[0]:.2f}")
    print("\n| " + " | ".join(COLUMNS) + " |\n|" + " --- |" * len(COLUMNS))
    for workload, row in rows:
        print("| " + " | ".join(_cells(workload, row, machine)) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
