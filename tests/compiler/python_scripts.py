"""Running a test's script in a fresh Python process with Numba's JIT off, so fused kernels run
as their Python source and their bodies are covered."""

from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_without_jit(script: str, cache_directory) -> None:
    """Run ``script`` under NUMBA_DISABLE_JIT=1 with its own kernel cache; it must exit cleanly
    and print "ok" last."""
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1", "MESHJIT_CACHE_DIR": str(cache_directory)}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=ROOT,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("ok")
