"""``python -m benchmarks [--mpi] [NAME-FILTER ...]``: every workload against numpy on one
device, and against JAX on 8 CPU devices when a Python with JAX is found
(``MESHJIT_BENCH_JAX_PYTHON``, or the current interpreter if it can import jax). ``--mpi`` adds
a column with the same workload under ``mpiexec -n 2`` (4 devices per process). Prints a table;
times are medians."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from rich.console import Console
from rich.table import Table

from .mpi_runner import mpi_seconds
from .timing import median_seconds, peak_bytes
from .workloads import WORKLOADS, program_source

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _jax_python() -> str | None:
    configured = os.environ.get("MESHJIT_BENCH_JAX_PYTHON")
    if configured:
        return configured
    probe = subprocess.run([sys.executable, "-c", "import jax"], capture_output=True)
    return sys.executable if probe.returncode == 0 else None


def _subprocess_seconds(python: str, module: str, index: int, env: dict) -> float | None:
    result = subprocess.run([python, "-m", module, str(index)], capture_output=True, text=True, cwd=ROOT, env=env)
    if result.returncode != 0:
        print(f"  {module} {index} failed: {result.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return None
    return float(result.stdout.strip().splitlines()[-1])


def _first_calls(index: int) -> tuple[float | None, float | None]:
    """First call in a new process with an empty kernel cache, then with the cache it left."""
    directory = tempfile.mkdtemp(prefix="meshjit-bench-cache-")
    env = {**os.environ, "MESHJIT_CACHE_DIR": directory}
    try:
        cold = _subprocess_seconds(sys.executable, "benchmarks.first_call", index, env)
        warm = _subprocess_seconds(sys.executable, "benchmarks.first_call", index, env)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return cold, warm


def measure(index: int, jax_python: str | None, with_mpi: bool = False) -> dict:
    workload = WORKLOADS[index]
    arrays = workload.inputs()
    namespace: dict = {}
    exec(program_source(workload), namespace)
    function, placed = namespace["build"](arrays)
    expected = workload.numpy_function(*arrays)
    # f32 results, summed in a different order than numpy's: compare against the output's scale
    error = float(np.max(np.abs(np.asarray(function(*placed)) - expected)))
    scale = float(np.max(np.abs(expected))) or 1.0
    if error > 1e-3 * scale:
        raise AssertionError(f"{workload.name}: max |meshjit - numpy| = {error} (scale {scale})")
    row = {
        "numpy": median_seconds(lambda: workload.numpy_function(*arrays)),
        "meshjit": median_seconds(lambda: function(*placed)),
        "numpy peak": peak_bytes(lambda: workload.numpy_function(*arrays)),
        "meshjit peak": peak_bytes(lambda: function(*placed)),
    }
    row["cold"], row["warm"] = _first_calls(index)
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8"}
    row["jax"] = _subprocess_seconds(jax_python, "benchmarks.jax_runner", index, env) if jax_python else None
    row["mpi"] = mpi_seconds(index, 2) if with_mpi else None
    return row


def _rate(workload, seconds: float) -> str:
    if workload.flops:
        return f"{workload.flops / seconds / 1e9:.1f} GFLOP/s"
    return f"{workload.bytes_moved / seconds / 1e9:.2f} GB/s"


def _time(seconds) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1e6:.1f} µs" if seconds < 1e-3 else f"{seconds * 1e3:.2f} ms"


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    with_mpi = "--mpi" in argv
    argv = [word for word in argv if word != "--mpi"]
    selected = [i for i, w in enumerate(WORKLOADS) if not argv or any(word in w.name for word in argv)]
    jax_python = _jax_python()
    console = Console(width=220)
    console.print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
                  f"python {platform.python_version()}, numpy {np.__version__}; JAX: {jax_python or 'not found'}")
    table = Table(title="meshjit benchmarks (median time per call)")
    for column in ("workload", "numpy", "meshjit", "jax", "meshjit/numpy", "meshjit/jax", "first call cold",
                   "first call warm", "peak MB meshjit/numpy", "meshjit rate") + (("mpiexec -n 2",) if with_mpi else ()):
        table.add_column(column, justify="right" if column != "workload" else "left")
    for index in selected:
        workload = WORKLOADS[index]
        console.print(f"running {workload.name} ...")
        row = measure(index, jax_python, with_mpi)
        ratio_jax = f"{row['meshjit'] / row['jax']:.2f}" if row["jax"] else "-"
        table.add_row(workload.name, _time(row["numpy"]), _time(row["meshjit"]), _time(row["jax"]),
                      f"{row['meshjit'] / row['numpy']:.2f}", ratio_jax,
                      f"{row['cold']:.2f} s" if row["cold"] is not None else "-",
                      f"{row['warm']:.3f} s" if row["warm"] is not None else "-",
                      f"{row['meshjit peak'] / 1e6:.0f} / {row['numpy peak'] / 1e6:.0f}",
                      _rate(workload, row["meshjit"]), *((_time(row["mpi"]),) if with_mpi else ()))
    console.print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
