"""examples/train_transformer.py under ``mpiexec -n 2`` (4 devices per process, the 'data' rows
on different processes) trains with the losses of the one-process run: only the order of the
cross-process sums differs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mpi4py", reason="the mpi extra is not installed: pip install -e '.[mpi]'")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from example_loader import EXAMPLE, ROOT, TINY, load_example, tiny_flags  # noqa: E402
from mpi_launch import find_mpiexec  # noqa: E402

STEPS = 10


def test_the_training_example_gives_the_one_process_losses_on_two_processes(tmp_path):
    mpiexec = find_mpiexec()
    losses = tmp_path / "losses.txt"
    command = [mpiexec, "-n", "2", sys.executable, str(EXAMPLE), f"--steps={STEPS}", f"--losses={losses}",
               "--quiet", *tiny_flags()]
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=300,
                            env={**os.environ, "MESHJIT_NUM_DEVICES": "4"})
    assert result.returncode == 0, result.stdout + result.stderr
    example = load_example()
    expected = example.losses(example.Config(**TINY), STEPS)
    np.testing.assert_allclose([float(line) for line in losses.read_text().split()], expected, rtol=2e-5)
