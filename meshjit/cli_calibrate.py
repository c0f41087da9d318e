"""``meshjit calibrate``: measure the alpha-beta cost model on this machine and write it to the
cache directory (``MESHJIT_CACHE_DIR``), where jit's automatic sharding search and the
partitioner's tie-breaks read it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from meshjit.compiler.analysis.cost import save_cost_model

from ._calibration import SIZES, fit, measure_all_reduces, measure_flops, slower


class CalibrationError(RuntimeError):
    """A calibration run could not measure what it needs (no mpiexec, a failed run)."""


def _mpi_rows(processes: int, repeats: int, sizes) -> tuple[list[dict], float]:
    beside_python = Path(sys.executable).parent / "mpiexec"
    mpiexec = str(beside_python) if beside_python.exists() else shutil.which("mpiexec")
    if mpiexec is None:
        raise CalibrationError("--mpi needs mpiexec (install the mpi extra: pip install 'meshjit[mpi]')")
    devices = os.environ.get("MESHJIT_NUM_DEVICES", "8")
    per_process = max(1, int(devices) // processes)
    env = {**os.environ, "MESHJIT_NUM_DEVICES": str(per_process)}
    command = [mpiexec, "-n", str(processes), sys.executable, "-m", "meshjit._calibration", str(repeats),
               ",".join(str(size) for size in sizes)]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    if result.returncode != 0:
        raise CalibrationError(f"mpiexec -n {processes} failed: {result.stderr.strip()[-2000:]}")
    data = json.loads(result.stdout.strip().splitlines()[-1])
    return data["rows"], data["flops_per_second"]


def _sizes(text: str | None) -> tuple[int, ...]:
    """``--sizes``: comma-separated message sizes in f32 elements per device, at least two."""
    if text is None:
        return SIZES
    try:
        sizes = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise ValueError(f"--sizes must be comma-separated positive integers, got {text!r}") from None
    if len(sizes) < 2 or any(size < 1 for size in sizes):
        raise ValueError(f"--sizes needs at least two positive sizes (to fit alpha and beta), got {text!r}")
    return sizes


def run_calibrate(arguments) -> int:
    if arguments.repeats < 1 or arguments.mpi < 0:
        print("meshjit calibrate: error: --repeats must be at least 1 and --mpi at least 0", file=sys.stderr)
        return 2
    try:
        sizes = _sizes(arguments.sizes)
    except ValueError as error:
        print(f"meshjit calibrate: error: {error}", file=sys.stderr)
        return 2
    flops = measure_flops()
    rows = measure_all_reduces(arguments.repeats, sizes)
    model = fit(rows, flops, "calibrated: in-process")
    print(f"in-process (up to {rows[-1]['group']} devices): alpha {model.latency:.3e} s, "
          f"bandwidth {model.bandwidth:.3e} bytes/s, {flops:.3e} flop/s")
    if arguments.mpi:
        try:
            mpi_rows, mpi_flops = _mpi_rows(arguments.mpi, arguments.repeats, sizes)
        except (CalibrationError, subprocess.TimeoutExpired, ValueError, KeyError) as error:
            print(f"meshjit calibrate: error: {error}", file=sys.stderr)
            return 1
        across = fit(mpi_rows, mpi_flops, f"calibrated: mpiexec -n {arguments.mpi}")
        print(f"mpiexec -n {arguments.mpi}: alpha {across.latency:.3e} s, bandwidth {across.bandwidth:.3e} bytes/s")
        model = slower(model, across, f"calibrated: in-process and mpiexec -n {arguments.mpi} (slower link)")
    if arguments.dry_run:
        print(json.dumps(model.to_json(), indent=2))
        return 0
    print(f"wrote {save_cost_model(model)}")
    return 0
