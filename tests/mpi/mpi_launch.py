"""The mpiexec the MPI tests launch: the one beside the interpreter (the mpi extra installs
MPICH's there), else the first on PATH; the calling test is skipped where there is none."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest


def find_mpiexec() -> str:
    beside_python = Path(sys.executable).parent / "mpiexec"
    found = str(beside_python) if beside_python.exists() else shutil.which("mpiexec")
    if found is None:
        pytest.skip("no mpiexec found (install the mpi extra: pip install -e '.[mpi]')")
    return found
