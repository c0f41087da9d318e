"""The installation's library of per-op kernels: one precompiled elementwise kernel per costly
prelude helper and dtype (tanh, exp, log, erf, logistic, rsqrt, sin, ... and the fused
multiply-add), each a loop over contiguous 1-D buffers calling the very helper the fused
kernels call, so it gives their bits. The first tier (tiers.py, tier_ops.py) calls one for such
an op instead of emulating the helper in numpy, so a large group calling a transcendental
helper runs at once while its fused kernel compiles (docs/execution.md "Tiered execution").

The library belongs to the installation, not to a program or ``MESHJIT_CACHE_DIR``: its objects
live in ``compiler/lowering/kernel_library`` inside the package (gitignored), or, where that
cannot be written (a site-packages install), in ``$XDG_CACHE_HOME/meshjit-kernel-library``;
``MESHJIT_KERNEL_LIBRARY`` names one directory instead, or ``off`` (no library: the first tier
emulates the helpers in numpy, as without it). Each object is named as a fused
kernel's (kernel_objects.ObjectKernel.stem): by the prelude definitions its entry reaches, the
argument kinds, the CPU and the Numba version, so a changed helper or another machine finds no
object and builds it again, never a stale one. ``make install`` builds it
(``op_library.build()``); a program that needs a missing entry has
the compile workers build it ahead of everything else (``request_missing``).
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import json
import os
import sys
import threading

import numpy as np

from . import kernel_objects
from .codegen_math import PRELUDE
from .kernel_digest import object_digest
from .kernel_objects import ObjectKernel, split_source

# helper -> (entry point, operand count, dtype): every helper the first tier would emulate with
# FMAs in numpy (tier_math.HELPERS, erf_inv's), and the fused multiply-add itself
_UNARY_F32 = ("exp", "exp2", "expm1", "log", "log1p", "tanh", "logistic", "erf", "erf_inv", "sin", "cos", "tan",
              "cbrt", "rsqrt")
ENTRIES = {f"_{name}_f32": (f"library_{name}_f32", 1, "f32") for name in _UNARY_F32}
ENTRIES.update({f"_{name}_f64": (f"library_{name}_f64", 1, "f64") for name in ("exp", "log", "tanh", "logistic")})
ENTRIES["_atan2_f32"] = ("library_atan2_f32", 2, "f32")
ENTRIES.update({("_fma", dtype): (f"library_fma_{dtype}", 3, dtype) for dtype in ("f32", "f64")})
_NUMPY = {"f32": np.dtype(np.float32), "f64": np.dtype(np.float64)}
_PACKAGED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernel_library")
# NOTE: a call shorter than this runs on the calling thread (the fused kernels' grain is similar)
_GRAIN = 1 << 14


def _entry_source(helper: str, entry: str, arity: int) -> str:
    """A loop over ``start .. stop`` of 1-D views calling ``helper`` on each element (views from
    0, as the fused kernels' loops: a computed start keeps Numba's wraparound checks). A call
    whose ``out`` is one of its operands (the first tier writes into dying buffers) takes a loop
    writing that operand's view: LLVM vectorizes the plain loop only behind a check that ``out``
    overlaps no operand, so an in-place call ran its scalar copy (6.5x slower for float32 exp)."""
    name = helper if isinstance(helper, str) else helper[0]
    operands = [f"x{index}" for index in range(arity)]
    views = "\n".join(f"    v{index} = x{index}[start:stop]" for index in range(arity))
    call = f"{name}({', '.join(f'v{index}[k]' for index in range(arity))})"
    loops = "".join(f"    {'if' if index == 0 else 'elif'} x{index}.ctypes.data == out.ctypes.data:\n"
                    f"        for k in range(stop - start):\n            v{index}[k] = {call}\n"
                    for index in range(arity))
    return ('@numba.njit(cache=True, nogil=True, error_model="numpy")\n'
            f"def {entry}(start, stop, {', '.join(operands)}, out):\n"
            f"{views}\n    result = out[start:stop]\n{loops}"
            f"    else:\n        for k in range(stop - start):\n            result[k] = {call}\n")


# NOTE: one file per entry, each the fused kernels' prelude and the entry (codegen.kernel_source's
# layout), so a process compiles the helpers once for all of them and its fused kernels
SOURCES = {helper: PRELUDE + "\n\n" + _entry_source(helper, *spec[:2]) for helper, spec in ENTRIES.items()}


def signature(helper) -> tuple:
    """The argument kinds (kernel_objects._signature) of ``helper``'s entry."""
    _, arity, dtype = ENTRIES[helper]
    array = ("a", _NUMPY[dtype].str, 1)
    return (("i",), ("i",)) + (array,) * (arity + 1)


def directories() -> list[str]:
    """Where the library is looked for, in order; the first one that can be written is where it
    is built (``writable_directory``)."""
    configured = os.environ.get("MESHJIT_KERNEL_LIBRARY")
    if configured:
        return [] if configured == "off" else [configured]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return [_PACKAGED, os.path.join(base, "meshjit-kernel-library")]


@functools.lru_cache(maxsize=None)
def _digests(helper) -> tuple[str, str]:
    """``helper``'s source digest (its file's name) and its object digest (kernel_digest.py)."""
    source = SOURCES[helper]
    return hashlib.sha256(source.encode()).hexdigest()[:20], object_digest(*split_source(source, ENTRIES[helper][0]))


def _kernel(directory: str, helper) -> ObjectKernel:
    digest, objects = _digests(helper)
    return ObjectKernel(os.path.join(directory, f"library_{digest}.py"), digest, ENTRIES[helper][0], objects)


def _write_source(directory: str, helper) -> bool:
    """Write ``helper``'s entry's source into ``directory`` (atomically); whether the directory
    can be written."""
    path = os.path.join(directory, f"library_{_digests(helper)[0]}.py")
    try:
        os.makedirs(directory, exist_ok=True)
        if not os.path.exists(path):
            temporary = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
            with open(temporary, "w") as handle:
                handle.write(SOURCES[helper])
            os.replace(temporary, path)
        return os.access(directory, os.W_OK)
    except OSError:
        return False


def writable_directory(helper) -> str | None:
    """The first of ``directories()`` ``helper``'s source and object can be written to."""
    return next((directory for directory in directories() if _write_source(directory, helper)), None)


# (helper, directories()) -> the native entry (a ctypes function), once linked in this process
_LOADED: dict = {}
_LOCK = threading.Lock()


def _find(helper) -> str | None:
    """The stem of ``helper``'s object, in the first of ``directories()`` that has it."""
    for directory in directories():
        stem = _kernel(directory, helper).stem(signature(helper))
        if os.path.exists(stem + ".json") and os.path.exists(stem + ".o"):
            return stem
    return None


def native(helper):
    """``helper``'s library entry as a C function ``(start, stop, address, n, ..., out, n)``
    linked into this process, or None: no such entry, or no object built for this machine."""
    places = tuple(directories())
    if helper not in ENTRIES or os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0") or not places:
        return None
    with _LOCK:
        function = _LOADED.get((helper, places))
        if function is not None:
            return function
        stem = _find(helper)
        if stem is None:
            return None
        try:
            with open(stem + ".json") as handle:
                symbol = json.load(handle)["symbol"]
            with open(stem + ".o", "rb") as handle:
                address = kernel_objects._LINKER.link(handle.read(), symbol)
        except (OSError, ValueError, KeyError):
            return None
        if not address:
            return None
        kinds = [ctypes.c_int64] * 2 + [ctypes.c_void_p, ctypes.c_int64] * (ENTRIES[helper][1] + 1)
        function = _LOADED[helper, places] = ctypes.CFUNCTYPE(None, *kinds)(address)
        return function


def runner(helper):
    """``run(*operands, out=None) -> result``: ``helper`` over broadcast operands on every core,
    through its library entry, into ``out`` if given (C-contiguous, the result's shape and
    dtype; it may be an operand); None where the entry is not built."""
    function = native(helper)
    if function is None:
        return None
    from .launch import parallel_for
    dtype = _NUMPY[ENTRIES[helper][2]]

    def run(*operands, out=None):
        operands = [np.asarray(operand) for operand in operands]
        shape = np.broadcast_shapes(*(operand.shape for operand in operands))
        if out is None:
            out = np.empty(shape, dtype)
        if not out.size:
            return out
        rows = [_one_row(operand, shape, dtype) for operand in operands] if shape and shape[-1] >= _ROW_MIN else []
        if any(row is not None for row in rows):
            _run_by_rows(function, operands, rows, out, parallel_for)
            return out
        flat = [np.ascontiguousarray(np.broadcast_to(operand, shape), dtype).reshape(-1) for operand in operands]
        words = []
        for array in flat + [out.reshape(-1)]:
            words += (array.ctypes.data, array.size)
        parallel_for(function, out.size, tuple(words), grain=_GRAIN)
        return out

    return run


# NOTE: rows at least this long run one library call each when an operand repeats one row
# (layer norm's gamma and beta): that saves copying it to the whole shape (16 MB for 2^22
# float32 elements, most of a first call) for one ctypes call a row (about 2 us)
_ROW_MIN = 256


def _one_row(operand: np.ndarray, shape: tuple, dtype) -> np.ndarray | None:
    """The one row ``operand`` repeats over ``shape``'s leading dims, contiguous in ``dtype``;
    None when it varies along them."""
    view = np.broadcast_to(operand, shape)  # NOTE: a broadcast view (zero strides) counts too
    if any(stride and size > 1 for stride, size in zip(view.strides[:-1], shape[:-1])):
        return None
    return np.ascontiguousarray(view[(0,) * (len(shape) - 1)], dtype)


def _run_by_rows(function, operands, rows, out: np.ndarray, parallel_for) -> None:
    """``function`` row by row into ``out``: an operand that repeats one row passes that row to
    every call, the others (copied to ``out``'s shape if broadcast otherwise) their own row."""
    width = out.shape[-1]
    count = out.size // width
    stride = width * out.dtype.itemsize
    kept, places = [], []
    for operand, row in zip(operands, rows):
        if row is None:
            operand = np.ascontiguousarray(np.broadcast_to(operand, out.shape), out.dtype)
            places.append((operand.ctypes.data, stride))
        else:
            places.append((row.ctypes.data, 0))
        kept.append(operand if row is None else row)
    places.append((out.ctypes.data, stride))

    def run_rows(start, stop):
        for index in range(start, stop):
            words = []
            for address, step in places:
                words += (address + index * step, width)
            function(0, width, *words)

    parallel_for(run_rows, count, (), grain=max(1, _GRAIN // width))
    del kept  # NOTE: the copies and rows stay alive until every call has read them


def request(helper) -> dict | None:
    """What a compile worker needs to build ``helper``'s object (None: nowhere to write it)."""
    directory = writable_directory(helper)
    if directory is None:
        return None
    return _kernel(directory, helper).request(signature(helper))


def request_missing(helpers, submit) -> None:
    """Hand ``submit`` the build request of each of ``helpers`` whose entry is not built."""
    for helper in helpers:
        if helper in ENTRIES and _find(helper) is None:
            job = request(helper)
            if job is not None:
                submit(job)


def build(helpers=None, out=sys.stdout) -> int:
    """Build the library's missing objects with the compile workers (one per core); the count
    built. Raises when a build fails or nowhere can be written."""
    if os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0") or not directories():
        out.write("meshjit kernel library: NUMBA_DISABLE_JIT is set or the library is off, nothing to build\n")
        return 0
    requests = [request(helper) for helper in helpers or ENTRIES if _find(helper) is None]
    if None in requests:
        raise OSError(f"meshjit kernel library: none of {', '.join(directories())} can be written")
    from .compile_service import CompileService
    compiler = CompileService()
    try:
        jobs = [compiler.submit(job, (0, index)) for index, job in enumerate(requests)]
        built = sum(job.wait() for job in jobs)
    finally:
        compiler.close()
    if built < len(jobs):
        raise RuntimeError(f"meshjit kernel library: {compiler.broken}")
    if not requests:
        out.write(f"meshjit kernel library: all {len(ENTRIES)} kernels are built\n")
        return 0
    out.write(f"meshjit kernel library: {built} of {len(ENTRIES)} kernels built in "
              f"{os.path.dirname(requests[0]['path'])}\n")
    return built

