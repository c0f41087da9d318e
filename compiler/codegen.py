"""Python source for fused elementwise kernels, compiled with Numba and cached on disk.

Each kernel file holds a small prelude of helpers (XLA's float-to-int conversion, NaN-aware
max/min, integer powers) and two entry points over 2-d views ``(leading positions, elements)``:
a serial one and a ``prange`` one for large arrays. Files are named by the hash of their
source under ``MESHJIT_CACHE_DIR`` (default ``~/.cache/meshjit``), and Numba's own cache sits
next to them, so a second process loads machine code instead of compiling.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import threading

PRELUDE = '''\
import math
import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def _fmax(x, y):
    if x != x:
        return x
    if y != y:
        return y
    return x if x > y else y


@numba.njit(cache=True, nogil=True)
def _fmin(x, y):
    if x != x:
        return x
    if y != y:
        return y
    return x if x < y else y


@numba.njit(cache=True, nogil=True)
def _float_to_int(x, low, high):
    # XLA: truncate toward zero, NaN -> 0, saturate out of range
    if x != x:
        return 0
    t = np.trunc(x)
    if t < low:
        return low
    if t > high:
        return high
    return int(t)


@numba.njit(cache=True, nogil=True)
def _round_away(x):
    t = np.trunc(x)
    if abs(x - t) >= 0.5:
        return t + (1.0 if x > 0 else -1.0)
    return t


@numba.njit(cache=True, nogil=True)
def _sign(x):
    if x != x or x == 0:
        return x
    return 1.0 if x > 0 else -1.0
'''


def cache_directory() -> str:
    configured = os.environ.get("MESHJIT_CACHE_DIR")
    if configured:
        return configured
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "meshjit")


def kernel_source(row_lines: list[str], element_lines: list[str], parameters: list[str]) -> str:
    """Both entry points: ``row_lines`` pick each input's row for a leading position,
    ``element_lines`` run for each element ``k`` of it. The parallel one splits the flattened
    (position, element) space into a few contiguous chunks per thread: one parallel region per
    call, however many leading positions there are."""
    signature = ", ".join(["lead_count", "n"] + parameters)
    serial_rows = "\n".join("        " + line for line in row_lines)
    serial_body = "\n".join("            " + line for line in element_lines)
    parallel_rows = "\n".join("            " + line for line in row_lines)
    parallel_body = "\n".join("                " + line for line in element_lines)
    serial = (
        f"@numba.njit(cache=True, nogil=True)\n"
        f"def kernel_serial({signature}):\n"
        f"    for lead in range(lead_count):\n"
        f"{serial_rows}\n"
        f"        for k in range(n):\n"
        f"{serial_body}\n"
    )
    parallel_signature = ", ".join(["lead_count", "n", "chunks"] + parameters)
    parallel = (
        f"@numba.njit(cache=True, nogil=True, parallel=True)\n"
        f"def kernel_parallel({parallel_signature}):\n"
        f"    total = lead_count * n\n"
        f"    size = (total + chunks - 1) // chunks\n"
        f"    for chunk in numba.prange(chunks):\n"
        f"        start = chunk * size\n"
        f"        stop = min(total, start + size)\n"
        f"        while start < stop:\n"
        f"            lead = start // n\n"
        f"            first = start - lead * n\n"
        f"            last = min(n, first + stop - start)\n"
        f"{parallel_rows}\n"
        f"            for k in range(first, last):\n"
        f"{parallel_body}\n"
        f"            start += last - first\n"
    )
    return PRELUDE + "\n\n" + serial + "\n\n" + parallel


_LOADED: dict[str, object] = {}
_LOCK = threading.Lock()


def load_kernels(source: str):
    """(serial, parallel) entry points of ``source``, written to the cache directory and imported."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:20]
    with _LOCK:
        module = _LOADED.get(digest)
        if module is None:
            directory = os.path.join(cache_directory(), "kernels")
            os.makedirs(directory, exist_ok=True)
            path = os.path.join(directory, f"fused_{digest}.py")
            if not os.path.exists(path):
                temporary = f"{path}.{os.getpid()}.tmp"
                with open(temporary, "w") as handle:
                    handle.write(source)
                os.replace(temporary, path)  # atomic: concurrent processes never see half a file
            name = f"meshjit_kernels.fused_{digest}"
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
            _LOADED[digest] = module
    return module.kernel_serial, module.kernel_parallel
