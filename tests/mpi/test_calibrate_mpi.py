"""``meshjit calibrate --mpi 2``: all-reduces measured across two processes under mpiexec."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mpi4py", reason="the mpi extra is not installed: pip install -e '.[mpi]'")


def test_calibrate_across_processes_keeps_the_slower_link(tmp_path):
    if not (Path(sys.executable).parent / "mpiexec").exists():
        pytest.skip("no mpiexec beside the interpreter (install the mpi extra)")
    env = {**os.environ, "MESHJIT_CACHE_DIR": str(tmp_path), "MESHJIT_NUM_DEVICES": "8"}
    command = [sys.executable, "-m", "meshjit", "calibrate", "--mpi", "2", "--repeats", "1", "--sizes", "256,16384"]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "mpiexec -n 2: alpha" in result.stdout
    written = json.loads((tmp_path / "cost_model.json").read_text())
    assert written["source"] == "calibrated: in-process and mpiexec -n 2 (slower link)"
    assert written["latency_seconds"] > 0 and written["bandwidth_bytes_per_second"] > 0
