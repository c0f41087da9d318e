"""The guard against machine-dependent results: every value meshjit promises bit for bit
(bit_exact_values.py: the random table's calls and XLA's and glibc's arithmetic as meshjit spells
it) is computed again in a subprocess whose numpy runs other SIMD code, and must have the same
bits. numpy picks its loops for the CPU at import (np.tan, np.exp, ... are Intel's SVML on
AVX-512 machines, its own AVX2 code or the C library elsewhere), so a bit-exact path that
reaches one of numpy's transcendental functions fails here on any x86-64 machine.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from bit_exact_values import values

import meshjit

pytestmark = pytest.mark.usefixtures("restore_runtime_state")

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bit_exact_values.py")


def _numpy_cpu_tables():
    try:
        from numpy._core import _multiarray_umath
    except ImportError:  # numpy 1.x
        from numpy.core import _multiarray_umath
    return _multiarray_umath.__cpu_dispatch__, _multiarray_umath.__cpu_features__


def dispatch_targets_in_use() -> list[str]:
    """numpy's dispatch targets this CPU has (X86_V3 on AVX2 machines, X86_V4 and AVX512_* too on
    AVX-512 ones; AVX2, FMA3, AVX512F, AVX512_SKX ... with numpy 1.x): disabling them all makes
    numpy run its baseline loops instead."""
    dispatch, features = _numpy_cpu_tables()
    return [target for target in dispatch if features.get(target)]


TARGETS = dispatch_targets_in_use()


@pytest.mark.skipif(not TARGETS, reason="numpy dispatches no SIMD target on this CPU beyond its baseline, "
                    "so there is no other dispatch to compare with")
def test_bit_exact_values_do_not_depend_on_numpys_simd_dispatch(tmp_path):
    expected = values(meshjit)
    path = tmp_path / "values.npz"
    disabled = " ".join(TARGETS)
    environment = {**os.environ, "NPY_DISABLE_CPU_FEATURES": disabled}
    probe = "from test_dispatch_guard import dispatch_targets_in_use as t; assert not t(), t()"
    subprocess.run([sys.executable, "-c", probe], env=environment, check=True, cwd=os.path.dirname(SCRIPT))
    subprocess.run([sys.executable, SCRIPT, str(path)], env=environment, check=True, timeout=1800)
    got = np.load(path)
    assert sorted(got.files) == sorted(expected)
    differ = [name for name in expected if got[name].tobytes() != expected[name].tobytes()]
    assert not differ, f"with NPY_DISABLE_CPU_FEATURES={disabled!r} these differ: {differ}"
