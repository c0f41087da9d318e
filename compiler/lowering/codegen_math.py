"""The helper functions every generated kernel file starts with, as Python source: NaN-aware
max/min, a fused multiply-add, reductions the loop vectoriser may reorder, XLA's float-to-int
conversion, float64 exp, log, tanh and logistic, XLA's float32 exp, exp2, expm1, log, log1p,
tanh, logistic, erf (codegen_xla_unary.py) and erf_inv (what random normal draws go through),
written so that loops calling them compile to packed
vector instructions (how to check that: docs/execution.md, "Reading a kernel's assembly").
"""

from __future__ import annotations

from .codegen_lanes import KEEP_ALIVE, LANE_SUM
from .codegen_rsqrt import xla_rsqrt_math
from .codegen_trig import trig_math
from .codegen_xla_math import xla_float32_math
from .codegen_xla_unary import xla_unary_math

# NOTE: the rules that keep a loop vectorised here (AVX2 has no packed conversion between
# float64 and int64, and a libm call or a branch on data stops the vectoriser):
# - integers come out of floats through the "shifter": for an integral float64 k with
#   |k| < 2^51, k + 1.5*2^52 holds k in the low bits of its mantissa, so 2^k is one integer add
#   and shift of those bits, and the reverse (small int -> float64) is a subtraction;
# - clamps and special cases are `if` statements that LLVM turns into selects;
# - a fused multiply-add is an explicit ``_fma`` (llvm.fma, one rounding on every CPU), never
#   LLVM's choice: no helper carries fastmath "contract", so every other product and sum rounds
#   on its own, and numpy can repeat the whole helper bit for bit (tier_math.py, the first
#   tier); the FMAs sit where "contract" used to put them, so no value changed. The kernels'
#   own arithmetic (the user's ops) is never contracted either;
# - ``error_model="numpy"`` drops Python's division-by-zero check and its branch.
# With NUMBA_DISABLE_JIT the same helpers run as plain Python through numpy scalars.
INTRINSICS = '''
from llvmlite import ir as _llvm_ir
from numba.extending import intrinsic as _intrinsic

_SHIFTER = 6755399441055744.0  # 1.5 * 2**52
_SHIFTER_BITS = 0x4338000000000000

if numba.config.DISABLE_JIT:
    def _int64_as_float64(bits):
        return np.int64(bits).view(np.float64)

    def _float64_as_int64(value):
        return np.float64(value).view(np.int64)

    def _int32_as_float32(bits):
        return np.int32(bits).view(np.float32)

    def _float32_as_int32(value):
        return np.float32(value).view(np.int32)

    def _maximum(x, y):
        return np.maximum(x, y)

    def _minimum(x, y):
        return np.minimum(x, y)

    def _fma(x, y, z):
        from meshjit.ir.float_math import fma
        return fma(*(np.asarray(value) for value in (x, y, z)))[()]
else:
    @_intrinsic
    def _int64_as_float64(typingctx, bits):
        # the float64 whose bit pattern is the int64 ``bits`` (one LLVM bitcast)
        def codegen(context, builder, signature, arguments):
            return builder.bitcast(arguments[0], _llvm_ir.DoubleType())
        return numba.types.float64(numba.types.int64), codegen

    @_intrinsic
    def _float64_as_int64(typingctx, value):
        # the int64 whose bit pattern is the float64 ``value``
        def codegen(context, builder, signature, arguments):
            return builder.bitcast(arguments[0], _llvm_ir.IntType(64))
        return numba.types.int64(numba.types.float64), codegen

    @_intrinsic
    def _int32_as_float32(typingctx, bits):
        def codegen(context, builder, signature, arguments):
            return builder.bitcast(arguments[0], _llvm_ir.FloatType())
        return numba.types.float32(numba.types.int32), codegen

    @_intrinsic
    def _float32_as_int32(typingctx, value):
        def codegen(context, builder, signature, arguments):
            return builder.bitcast(arguments[0], _llvm_ir.IntType(32))
        return numba.types.int32(numba.types.float32), codegen

    def _llvm_binary(name):
        # llvm.maximum / llvm.minimum: NaN-propagating (numpy's maximum), and the loop
        # vectoriser knows them as reductions, which a compare-and-select loop is not
        def typer(typingctx, x, y):
            def codegen(context, builder, signature, arguments):
                kind = arguments[0].type
                full = f"{name}.{'f32' if isinstance(kind, _llvm_ir.FloatType) else 'f64'}"
                function = builder.module.globals.get(full) or _llvm_ir.Function(
                    builder.module, _llvm_ir.FunctionType(kind, [kind, kind]), name=full)
                return builder.call(function, arguments)
            return x(x, x), codegen
        return _intrinsic(typer)

    _maximum = _llvm_binary("llvm.maximum")
    _minimum = _llvm_binary("llvm.minimum")

    @_intrinsic
    def _fma(typingctx, x, y, z):
        # x * y + z rounded once (llvm.fma: one vfmadd where the CPU has FMA, else libm's fma,
        # which rounds once too): the fused multiply-add XLA's code has where LLVM contracted
        def codegen(context, builder, signature, arguments):
            kind = arguments[0].type
            full = f"llvm.fma.{'f32' if isinstance(kind, _llvm_ir.FloatType) else 'f64'}"
            function = builder.module.globals.get(full) or _llvm_ir.Function(
                builder.module, _llvm_ir.FunctionType(kind, [kind, kind, kind]), name=full)
            return builder.call(function, arguments)
        return x(x, x, x), codegen


@numba.njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def _add_reassoc(x, y):
    # a sum's partial results may be regrouped (what lets LLVM keep one per vector lane)
    return x + y


@numba.njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def _mul_reassoc(x, y):
    return x * y


@numba.njit(cache=True, nogil=True)
def _small_int_as_float64(k):
    # float64(k) for 0 <= k < 2^51 without an int64 -> float64 conversion
    return _int64_as_float64(_SHIFTER_BITS + k) - _SHIFTER


@numba.njit(cache=True, nogil=True, )
def _exp2_int(n):
    # 2^n for an integral float64 n in [-1022, 1023]
    return _int64_as_float64((_float64_as_int64(n + _SHIFTER) + 1023) << 52)
'''

# NOTE: float64 functions need float64 accuracy from float64 arithmetic: ln2 is split in two
# (its high part has 21 significant bits, so n * LN2_HIGH is exact for every n used here; FMA
# keeps the reduction to one rounding), the polynomials run to where the truncation is under
# 2^-60, and the leading terms are added last so rounding errors stay below them (measured
# within 1 ulp of the exact value; tests/compiler/test_fast_math.py).
FLOAT64_MATH = '''

_LN2_HIGH = 0.6931467056274414
_LN2_LOW = 4.7493250390316726e-07


@numba.njit(cache=True, nogil=True, error_model="numpy", )
def _expm1_reduced_f64(z):
    # e^z = 2^n * (1 + p): z = n*ln2 + r, |r| <= ln2/2, p = e^r - 1 to r^13/13! (truncation
    # under 5e-18 relative); returns p as an unevaluated sum high + low (low: the rounding
    # errors of r and of the last addition, each exact or nearly) and n
    n = _fma(z, 1.4426950408889634, _SHIFTER) - _SHIFTER
    reduced = _fma(-n, _LN2_HIGH, z)
    low = n * _LN2_LOW
    r = reduced - low
    r_error = (reduced - r) - low
    q = _fma(r, 1.6059043836821613e-10, 2.08767569878681e-09)
    q = _fma(r, q, 2.505210838544172e-08)
    q = _fma(r, q, 2.755731922398589e-07)
    q = _fma(r, q, 2.7557319223985893e-06)
    q = _fma(r, q, 2.48015873015873e-05)
    q = _fma(r, q, 0.0001984126984126984)
    q = _fma(r, q, 0.001388888888888889)
    q = _fma(r, q, 0.008333333333333333)
    q = _fma(r, q, 0.041666666666666664)
    q = _fma(r, q, 0.16666666666666666)
    q = _fma(r, q, 0.5)
    tail = r * r * q
    high = r + tail
    # e^(r + r_error) - 1 = p + (1 + p) * r_error to first order
    return high, (tail - (high - r)) + _fma(r_error, high, r_error), n


@numba.njit(cache=True, nogil=True, error_model="numpy", )
def _divide_exactly(numerator, numerator_low, small, small_low, large):
    # (numerator + numerator_low) / (small + small_low + large), each + low an unevaluated
    # sum: d = small + large has the exact error of a two-sum (either may be the larger), the
    # quotient's residual is one FMA, and one Newton step with the reciprocal folds the errors
    # back in (one division in all)
    d = small + large
    large_part = d - small
    d_error = ((small - (d - large_part)) + (large - large_part)) + small_low
    inverse = 1.0 / d
    quotient = numerator * inverse
    residual = _fma(-quotient, d_error, _fma(-quotient, d, numerator) + numerator_low)
    return _fma(residual, inverse, quotient)


@numba.njit(cache=True, nogil=True, error_model="numpy", )
def _exp_f64(x):
    # 2^n applied in two halves so that overflow (n = 1024) and denormal results (n down to
    # -1076) come out of ordinary multiplications
    z = np.float64(x)
    if z > 710.0:
        z = 710.0
    if not z >= -746.0:
        z = -746.0
    high, low, n = _expm1_reduced_f64(z)
    half = np.floor(n * 0.5)
    first = _exp2_int(half)
    result = _fma(first, high + low, first) * _exp2_int(n - half)
    return result if x == x else x


@numba.njit(cache=True, nogil=True, error_model="numpy", )
def _tanh_f64(x):
    # as _tanh_f32, in float64: t = e^(2|x|) - 1 = scale*p + (scale - 1) with 2^n - 1 exact
    # (0 <= n <= 64), the sum's rounding error recovered exactly (|scale - 1| >= |scale*p|
    # when n > 0, and the sum is exact when n = 0) and added back with p's low part;
    # tanh = t / (t + 2) through _divide_exactly; above 22, tanh rounds to 1
    a = abs(np.float64(x))
    if not a <= 22.0:
        a = 22.0
    high, low, n = _expm1_reduced_f64(2.0 * a)
    scale = _exp2_int(n)
    scaled = scale * high
    t = scaled + (scale - 1.0)
    t_low = _fma(scale, low, ((scale - 1.0) - t) + scaled)
    result = math.copysign(_divide_exactly(t, t_low, t, t_low, 2.0), x)
    return result if x == x else x


@numba.njit(cache=True, nogil=True, error_model="numpy", )
def _logistic_f64(x):
    # as _logistic_f32: E = e^-|x| never overflows and keeps denormal results
    a = abs(np.float64(x))
    if not a <= 746.0:
        a = 746.0
    high, low, n = _expm1_reduced_f64(-a)
    half = np.floor(n * 0.5)
    first = _exp2_int(half)
    second = _exp2_int(n - half)
    scaled = first * high  # exact: first is a power of 2
    tail = first + scaled
    tail_low = _fma(first, low, (first - tail) + scaled)
    tail, tail_low = tail * second, tail_low * second
    numerator = tail if x < 0 else 1.0
    numerator_low = tail_low if x < 0 else 0.0
    result = _divide_exactly(numerator, numerator_low, tail, tail_low, 1.0)
    return result if x == x else x


@numba.njit(cache=True, nogil=True, error_model="numpy", )
def _log_f64(x):
    # x = m * 2^e, m in [sqrt(1/2), sqrt(2)) (denormals scaled by 2^54 first); with f = m - 1
    # (exact) and s = f / (2 + f): log m = 2 atanh(s) = f - s*f + s*R, R = sum 2 s^2k / (2k+1)
    # to k = 10 (truncation under 3e-18), regrouped with h = f*f/2 (s*f = h - s*h) so the
    # rounding errors land on terms below f
    z = np.float64(x)
    tiny = z < 2.2250738585072014e-308
    scaled = z * 18014398509481984.0 if tiny else z
    bits = _float64_as_int64(scaled)
    m = _int64_as_float64((bits & 0x000fffffffffffff) | 0x3ff0000000000000)
    exponent = _small_int_as_float64((bits >> 52) & 0x7ff) - (1077.0 if tiny else 1023.0)
    if m > 1.4142135623730951:
        m = m * 0.5
        exponent = exponent + 1.0
    f = m - 1.0
    s = f / (2.0 + f)
    w = s * s
    series = _fma(w, 0.09523809523809523, 0.10526315789473684)
    series = _fma(w, series, 0.11764705882352941)
    series = _fma(w, series, 0.13333333333333333)
    series = _fma(w, series, 0.15384615384615385)
    series = _fma(w, series, 0.18181818181818182)
    series = _fma(w, series, 0.2222222222222222)
    series = _fma(w, series, 0.2857142857142857)
    series = _fma(w, series, 0.4)
    series = _fma(w, series, 0.6666666666666666)
    h = 0.5 * f * f
    # h + w * series: R's sum with h, one rounding
    result = exponent * _LN2_HIGH - ((h - _fma(exponent, _LN2_LOW, s * _fma(w, series, h))) - f)
    if z == 0.0:
        result = -np.inf
    if z < 0.0:
        result = np.nan
    if z == np.inf:
        result = np.inf
    return result if x == x else x
'''

SCALAR_HELPERS = '''

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



PRELUDE = ("import math\nimport numba\nimport numpy as np\n" + INTRINSICS + LANE_SUM + SCALAR_HELPERS
           + FLOAT64_MATH + xla_float32_math() + xla_unary_math() + trig_math() + xla_rsqrt_math() + KEEP_ALIVE)
