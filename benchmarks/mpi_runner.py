"""``python -m benchmarks.mpi_runner [NAME-FILTER] [--processes P]``: the median time per call of
each sharded workload in this process (8 simulated devices) beside the same program under
``mpiexec -n P`` (8 devices in all, 8 / P per process), so the cost of crossing processes shows.

``mpi_seconds(index, processes)`` runs one workload under mpiexec and returns its median seconds
per call (None when it cannot run), for other tables to add as a column.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time

import numpy as np
from rich.console import Console
from rich.table import Table

from .timing import median_seconds
from .workloads import WORKLOADS, program_source

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOTAL_DEVICES = 8
TIMING_BUDGET = 1.0


def _mpiexec() -> str | None:
    beside_python = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return beside_python if os.path.exists(beside_python) else shutil.which("mpiexec")


def mpi_seconds(index: int, processes: int = 2, *, timeout: float = 600) -> float | None:
    """Median seconds per call of workload ``index`` under ``mpiexec -n processes``."""
    mpiexec = _mpiexec()
    if mpiexec is None or not WORKLOADS[index].mesh_shape or TOTAL_DEVICES % processes:
        return None
    env = {**os.environ, "MESHJIT_NUM_DEVICES": str(TOTAL_DEVICES // processes)}
    command = [mpiexec, "-n", str(processes), sys.executable, "-m", "benchmarks.mpi_runner", "--worker", str(index)]
    try:
        result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"  mpiexec -n {processes} on workload {index} timed out after {timeout:g} s", file=sys.stderr)
        return None
    if result.returncode != 0:
        print(f"  mpiexec -n {processes} on workload {index} failed: {result.stderr.strip().splitlines()[-3:]}",
              file=sys.stderr)
        return None
    return float(result.stdout.strip().splitlines()[-1])


def _worker(index: int) -> None:
    """One process of the mpiexec job: check the answer, agree on a repetition count, time."""
    import meshjit
    from meshjit.experimental import multihost_utils

    meshjit.distributed.initialize()
    workload = WORKLOADS[index]
    arrays = workload.inputs()
    namespace: dict = {}
    exec(program_source(workload), namespace)
    function, placed = namespace["build"](arrays)
    result = function(*placed)
    value = multihost_utils.process_allgather(result)
    if workload.numpy_function is not None:
        expected = workload.numpy_function(*arrays)
        # NOTE: float32 sums with cancellation (attention) are only accurate relative to the largest value
        np.testing.assert_allclose(value if not result.is_fully_addressable else value[0], expected,
                                   rtol=2e-3, atol=2e-3 * max(1.0, float(np.abs(expected).max())))
    start = time.perf_counter()
    function(*placed)
    # NOTE: every process must make the same number of calls (each call has collectives), so
    # process 0 chooses the count from its first timed call and the others follow.
    repetitions = int(np.clip(TIMING_BUDGET / max(time.perf_counter() - start, 1e-6), 3, 200))
    repetitions = int(multihost_utils.broadcast_one_to_all(np.int32(repetitions)))
    multihost_utils.sync_global_devices("timing starts")
    times = []
    for _ in range(repetitions):
        begin = time.perf_counter()
        function(*placed)
        times.append(time.perf_counter() - begin)
    multihost_utils.sync_global_devices("timing ends")
    if meshjit.process_index() == 0:
        print(f"{float(np.median(times)):.9f}")


def _in_process_seconds(index: int) -> float:
    workload = WORKLOADS[index]
    namespace: dict = {}
    exec(program_source(workload), namespace)
    function, placed = namespace["build"](workload.inputs())
    function(*placed)
    return median_seconds(lambda: function(*placed), budget=TIMING_BUDGET)


def _time(seconds) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1e6:.1f} µs" if seconds < 1e-3 else f"{seconds * 1e3:.2f} ms"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mpi_runner", description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="run the workloads whose names contain one of these words")
    parser.add_argument("--processes", type=int, default=2, help="processes for mpiexec -n (a divisor of 8)")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.worker is not None:
        _worker(options.worker)
        return 0
    selected = [index for index, workload in enumerate(WORKLOADS) if workload.mesh_shape
                and (not options.names or any(word in workload.name for word in options.names))]
    console = Console(width=160)
    table = Table(title=f"meshjit in one process vs mpiexec -n {options.processes} (median time per call)")
    for column in ("workload", "in-process", f"mpiexec -n {options.processes}", "mpi/in-process"):
        table.add_column(column, justify="left" if column == "workload" else "right")
    for index in selected:
        console.print(f"running {WORKLOADS[index].name} ...")
        local, distributed = _in_process_seconds(index), mpi_seconds(index, options.processes)
        ratio = f"{distributed / local:.2f}" if distributed else "-"
        table.add_row(WORKLOADS[index].name, _time(local), _time(distributed), ratio)
    console.print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
