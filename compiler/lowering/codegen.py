"""Python source for fused elementwise kernels, compiled with Numba and cached on disk.

Each kernel file holds the prelude of helpers (``codegen_math.py``) and one entry point
``kernel(start, stop, n, ...)`` over 2-d views ``(leading positions, n elements)`` that runs the
flattened positions ``start .. stop``, so threads can share one call (runtime/threads.py).
Files are named by the hash of their source under ``MESHJIT_CACHE_DIR`` (default
``~/.cache/meshjit``), and Numba's own cache sits next to them, so a second process loads
machine code instead of compiling.
"""

from __future__ import annotations

import hashlib
import os
import threading

from meshjit.ir.config import cache_directory

from .codegen_math import PRELUDE
from .kernel_digest import object_digest
from .kernel_objects import ObjectKernel, split_source


KERNEL_DECORATOR = '@numba.njit(cache=True, nogil=True, error_model="numpy")'


def kernel_source(row_lines: list[str], element_lines: list[str], parameters: list[str]) -> str:
    """The entry point: ``row_lines`` view each input's part of a leading position ``lead``
    (columns ``first .. last``), ``element_lines`` run for each element ``k`` of those views.
    It covers the flattened (position, element) range ``start .. stop``, however many leading
    positions that crosses."""
    signature = ", ".join(["start", "stop", "n"] + parameters)
    rows = "\n".join("        " + line for line in row_lines)
    body = "\n".join("            " + line for line in element_lines)
    # NOTE: the element loop runs over views from 0: a loop from a computed start would keep
    # Numba's negative-index wraparound check on every access, and LLVM then does not vectorise
    entry = (
        f"{KERNEL_DECORATOR}\n"
        f"def kernel({signature}):\n"
        f"    position = start\n"
        f"    while position < stop:\n"
        f"        lead = position // n\n"
        f"        first = position - lead * n\n"
        f"        last = min(n, first + stop - position)\n"
        f"{rows}\n"
        f"        for k in range(last - first):\n"
        f"{body}\n"
        f"        position += last - first\n"
    )
    return PRELUDE + "\n\n" + entry


_LOADED: dict[str, ObjectKernel] = {}
_LOCK = threading.Lock()


def load_kernel(source: str, entry: str = "kernel") -> ObjectKernel:
    """The function ``entry`` of ``source``, written to the cache directory; it runs from the
    cached object code (kernel_objects.py), or through Numba the first time."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:20]
    with _LOCK:
        kernel = _LOADED.get((digest, entry))
        if kernel is None:
            directory = os.path.join(cache_directory(), "kernels")
            os.makedirs(directory, exist_ok=True)
            path = os.path.join(directory, f"fused_{digest}.py")
            if not os.path.exists(path):
                temporary = f"{path}.{os.getpid()}.tmp"
                with open(temporary, "w") as handle:
                    handle.write(source)
                os.replace(temporary, path)  # atomic: concurrent processes never see half a file
            objects = object_digest(*split_source(source, entry))
            kernel = _LOADED[(digest, entry)] = ObjectKernel(path, digest, entry, objects)
    return kernel
