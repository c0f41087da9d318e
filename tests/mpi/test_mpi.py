"""Multi-process runs under ``mpiexec``: the programs of programs/cases.py give the
single-process answer on 1, 2 and 4 processes (8 devices in all), and a failing, missing or
diverging process stops the whole job within seconds with the reason in the output.

Each test launches ``mpiexec -n P python programs/<program>.py`` in a subprocess with a
timeout; the mpi extra (mpi4py and MPICH's mpiexec from PyPI) must be installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mpi4py", reason="the mpi extra is not installed: pip install -e '.[mpi]'")

from mpi_launch import find_mpiexec  # noqa: E402

PROGRAMS = Path(__file__).resolve().parent / "programs"
LAUNCH_TIMEOUT = 120


def launch(processes: int, program: str, *arguments: str, **environment: str):
    """Run ``program`` on ``processes`` processes with 8 devices in all; returns the
    CompletedProcess and the seconds it took."""
    env = {**os.environ, "MESHJIT_NUM_DEVICES": str(8 // processes), **environment}
    command = [find_mpiexec(), "-n", str(processes), sys.executable, str(PROGRAMS / program), *arguments]
    start = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, env=env, cwd=PROGRAMS, timeout=LAUNCH_TIMEOUT)
    return result, time.monotonic() - start


@pytest.fixture(scope="module")
def single_process_results():
    """Every case of cases.py run in this process on 8 simulated devices."""
    sys.path.insert(0, str(PROGRAMS))
    try:
        import cases
    finally:
        sys.path.remove(str(PROGRAMS))
    results = {name: np.asarray(array) for case in cases.CASES.values() for name, array in case().items()}
    return results, cases.EXACT


@pytest.mark.parametrize("processes", [1, 2, 4])
def test_cases_give_the_single_process_answer(processes, single_process_results, tmp_path):
    expected, exact = single_process_results
    output = tmp_path / "results.npz"
    result, _ = launch(processes, "run_cases.py", str(output))
    assert result.returncode == 0, result.stdout + result.stderr
    got = np.load(output)
    assert sorted(got.files) == sorted(expected)
    for name, value in expected.items():
        if name in exact:
            np.testing.assert_array_equal(got[name], value, err_msg=f"{name} on {processes} processes")
        else:
            np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-5,
                                       err_msg=f"{name} on {processes} processes")


def test_a_process_that_raises_stops_the_job():
    result, seconds = launch(2, "faults.py", "raise")
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "ValueError: process 1 failed on purpose" in output
    assert "meshjit: process 1 of 2 failed with ValueError; aborting the MPI job" in output
    assert seconds < 30, f"the job took {seconds:.1f} s to stop"


def test_a_missing_process_becomes_a_timeout_naming_it():
    result, seconds = launch(2, "faults.py", "deadlock", MESHJIT_COLLECTIVE_TIMEOUT="3")
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "CollectiveTimeoutError: meshjit collective timed out after 3 s" in output
    assert "all_reduce(sum) over mesh axes ('x',)" in output
    assert "process(es) [1] did not arrive" in output
    assert seconds < 30, f"the job took {seconds:.1f} s to stop"


def test_processes_at_different_collectives_are_told_so():
    result, _ = launch(2, "faults.py", "mismatch")
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "CollectiveMismatchError" in output
    assert "the processes are running different programs" in output
