"""Python source for fused elementwise kernels, compiled with Numba and cached on disk.

Each kernel file holds a small prelude of helpers (XLA's float-to-int conversion, NaN-aware
max/min, integer powers, and vectorisable float32 exp, log, tanh and logistic) and two entry
points over 2-d views ``(leading positions, elements)``:
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

# Float32 transcendental functions written so that LLVM vectorises the loops calling them: no
# libm calls, no data-dependent branches (the clamps below become selects). Each one widens its
# float32 argument to float64 and evaluates there, so a plain Taylor polynomial and a one-constant
# range reduction already leave the float64 result within about 1e-9 relative of the true value;
# the final rounding to float32 then gives the correctly rounded float32 answer except for inputs
# within that distance of a rounding midpoint (at most 1 ulp off). Working in float64 also makes
# float32 overflow, underflow and denormal results exact for free: 2^n for every n a float32
# result needs is a normal float64, and the float64 -> float32 conversion rounds to inf, to a
# denormal or to 0 as IEEE says. ``error_model="numpy"`` drops Python's division-by-zero check,
# whose branch would stop vectorisation (no divisor here can be 0). The intrinsics reinterpret
# bits (one LLVM bitcast each) and live in the prelude, so every kernel file is self-contained
# and cacheable; with NUMBA_DISABLE_JIT the same helpers run as plain Python through numpy views.
TRANSCENDENTAL_PRELUDE = """

from llvmlite import ir as _llvm_ir
from numba.extending import intrinsic as _intrinsic

if numba.config.DISABLE_JIT:
    def _int64_as_float64(bits):
        return np.int64(bits).view(np.float64)

    def _float64_as_int64(value):
        return np.float64(value).view(np.int64)
else:
    @_intrinsic
    def _int64_as_float64(typingctx, bits):
        # the float64 whose bit pattern is the int64 ``bits``
        def codegen(context, builder, signature, arguments):
            return builder.bitcast(arguments[0], _llvm_ir.DoubleType())
        return numba.types.float64(numba.types.int64), codegen

    @_intrinsic
    def _float64_as_int64(typingctx, value):
        # the int64 whose bit pattern is the float64 ``value``
        def codegen(context, builder, signature, arguments):
            return builder.bitcast(arguments[0], _llvm_ir.IntType(64))
        return numba.types.int64(numba.types.float64), codegen


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _exp_parts(z):
    # e^z = scale * (1 + p) for a float64 z in [-180, 180]: z = n*ln2 + r with |r| <= ln2/2,
    # p = e^r - 1 by its Taylor series to r^8/8! (truncation below 6e-10 relative to r), and
    # scale = 2^n built from its exponent bits. ln2 as one float64 is exact enough here: n*ln2
    # is off by under 1e-13, far below float32 resolution.
    n = np.floor(z * 1.4426950408889634 + 0.5)
    r = z - n * 0.6931471805599453
    p = r * (1.0 + r * (0.5 + r * (0.16666666666666666 + r * (0.041666666666666664 + r * (
        0.008333333333333333 + r * (0.001388888888888889 + r * (0.0001984126984126984
                                                                + r * 2.48015873015873e-05)))))))
    scale = _int64_as_float64((np.int64(n) + 1023) << 52)
    return p, scale


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _exp_f32(x):
    # e^89 overflows float32 and e^-104 is below half the smallest denormal, so clamping there
    # changes nothing but keeps 2^n in range; NaN is sent to the clamp and restored at the end
    z = np.float64(x)
    if z > 89.0:
        z = 89.0
    if not z >= -104.0:
        z = -104.0
    p, scale = _exp_parts(z)
    result = np.float32(scale + scale * p)
    return result if x == x else x


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _tanh_f32(x):
    # tanh|x| = t / (t + 2) with t = e^(2|x|) - 1 formed as scale*p + (scale - 1), free of
    # cancellation near 0 (scale is exactly 1 there), so small |x| keep full relative accuracy;
    # the sign is copied back, keeping -0.0. Above 9.5, tanh rounds to 1 in float32.
    a = abs(np.float64(x))
    if not a <= 9.5:
        a = 9.5
    p, scale = _exp_parts(2.0 * a)
    t = scale * p + (scale - 1.0)
    result = np.float32(math.copysign(t / (t + 2.0), x))
    return result if x == x else x


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _logistic_f32(x):
    # 1 / (1 + e^-x) in float64: beyond |x| = 120 the float32 result is 0 or 1 anyway
    z = -np.float64(x)
    if z > 120.0:
        z = 120.0
    if not z >= -120.0:
        z = -120.0
    p, scale = _exp_parts(z)
    result = np.float32(1.0 / (1.0 + (scale + scale * p)))
    return result if x == x else x


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _log_f32(x):
    # x = m * 2^e with m in [sqrt(1/2), sqrt(2)) read from the float64 bits (every float32,
    # denormals included, is a normal float64); log m = 2 atanh(s) with s = (m-1)/(m+1),
    # |s| <= 0.172, by its series to s^11/11 (truncation below 1e-10 relative)
    z = np.float64(x)
    bits = _float64_as_int64(z)
    exponent = ((bits >> 52) & 0x7ff) - 1023
    m = _int64_as_float64((bits & 0x000fffffffffffff) | 0x3ff0000000000000)
    if m > 1.4142135623730951:
        m = m * 0.5
        exponent = exponent + 1
    s = (m - 1.0) / (m + 1.0)
    s2 = s * s
    series = 1.0 + s2 * (0.3333333333333333 + s2 * (0.2 + s2 * (0.14285714285714285 + s2 * (
        0.1111111111111111 + s2 * 0.09090909090909091))))
    result = np.float32(exponent * 0.6931471805599453 + 2.0 * s * series)
    if z == 0.0:
        result = np.float32(-np.inf)
    if z < 0.0:
        result = np.float32(np.nan)
    if z == np.inf:
        result = np.float32(np.inf)
    return result if x == x else x
"""

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
''' + TRANSCENDENTAL_PRELUDE


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
        f"@numba.njit(cache=True, nogil=True, error_model=\"numpy\")\n"
        f"def kernel_serial({signature}):\n"
        f"    for lead in range(lead_count):\n"
        f"{serial_rows}\n"
        f"        for k in range(n):\n"
        f"{serial_body}\n"
    )
    parallel_signature = ", ".join(["lead_count", "n", "chunks"] + parameters)
    parallel = (
        f"@numba.njit(cache=True, nogil=True, parallel=True, error_model=\"numpy\")\n"
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
