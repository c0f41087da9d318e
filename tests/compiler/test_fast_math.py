"""The fused kernels' float64 exp, log, tanh and logistic (``compiler/lowering/codegen_math.py``)
and XLA's float32 exp, exp2, expm1, log, log1p, tanh, logistic and erf
(``codegen_xla_unary.py``).

The float64 helpers are checked against numpy evaluated in extended precision (``np.longdouble``,
64-bit significand on x86) over dense sweeps and the special values; the float32 ones against
their oracle (ir/xla_math.py, JAX's bits: tests/api/test_xla_float32_math.py) and XLA's
special values (denormals flushed as XLA's CPU mode does). Both for vectorised machine code
and for being fused.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit import lax
from meshjit.compiler.lowering import codegen, fusion
from meshjit.compiler.lowering.codegen import kernel_source, load_kernel
from meshjit.ir import xla_math
from meshjit.ir.float_math import erf_inv, fma
from meshjit.runtime.plan import KernelStep

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _float64_logistic(values):
    return 1.0 / (1.0 + np.exp(-values))


FUNCTIONS = {"exp": np.exp, "log": np.log, "tanh": np.tanh, "logistic": _float64_logistic}
ACCURATE = {f"_{name}_f64": function for name, function in FUNCTIONS.items()}
XLA_FLOAT32 = {f"_{name}_f32": function for name, function in xla_math.FUNCTIONS.items()}
HELPERS = {**ACCURATE, **XLA_FLOAT32}
DTYPES = {"f32": np.float32, "f64": np.float64}

SPECIALS = np.array([
    0.0, -0.0, 1e-30, -1e-30, 1e-40, -1e-40, 1.4e-45, -1.4e-45, 1.0, -1.0, 0.5, -0.5,
    9.0, -9.0, 9.01, -9.01, 10.0, -10.0, 88.72, -88.72, 88.7228, 88.73, -87.33, -87.34,
    -100.0, -103.97, -103.98, -104.0, 100.0, -100.0, 3e9, -3e9, 3.4e38, -3.4e38,
    np.inf, -np.inf, np.nan,
], np.float32)


@pytest.fixture
def cache_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("MESHJIT_CACHE_DIR", str(tmp_path))
    return tmp_path


SPECIALS_F64 = np.array([
    0.0, -0.0, 1e-310, -1e-310, 5e-324, 1.0, -1.0, 18.7, -18.7, 22.0, 23.0, 700.0, 709.78, 709.79, 710.0,
    -700.0, -708.4, -708.5, -740.0, -745.13, -745.14, -746.0, 1e300, -1e300, np.inf, -np.inf, np.nan,
])


def _dtype(helper: str):
    return DTYPES[helper[-3:]]


def _kernel(helper: str):
    """A kernel computing ``helper`` of each element of one input (the helper's float type)."""
    cast = "np." + _dtype(helper).__name__
    source = kernel_source(["row0 = in0[map0[lead]]", "target0 = out0[lead]"],
                           [f"v0 = {cast}({helper}(row0[k]))", "target0[k] = v0"],
                           ["in0", "map0", "out0"])
    return load_kernel(source)


def _apply(kernel, values: np.ndarray, dtype=np.float32) -> np.ndarray:
    values = np.ascontiguousarray(values, dtype)
    out = np.empty((1, values.size), dtype)
    kernel(0, values.size, values.size, values.reshape(1, -1), np.zeros(1, np.int64), out)
    return out.ravel()


def _assembly(kernel, dtype=np.float32) -> str:
    """The machine code of ``kernel``'s loop over 64 elements, as Numba compiles the entry on
    its own (the object code inlines the same entry into its C wrapper)."""
    dispatcher = kernel.numba_function
    values = np.ones((1, 64), dtype)
    dispatcher(0, 64, 64, values, np.zeros(1, np.int64), np.empty((1, 64), dtype))
    return dispatcher.inspect_asm(dispatcher.signatures[0])


def _ulp_errors(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|got - exact| in units of the spacing of ``got``'s type at the rounded exact value; 0 where
    they agree exactly (equal infinities and zeros, or both NaN)."""
    with np.errstate(over="ignore"):
        rounded = exact.astype(got.dtype)
    same = (got == rounded) | (np.isnan(got) & np.isnan(rounded))
    spacing = np.spacing(np.abs(rounded)).astype(np.longdouble)
    with np.errstate(invalid="ignore", over="ignore"):
        errors = np.abs(got.astype(np.longdouble) - exact) / spacing
    return np.where(same, 0.0, errors)


def _sweep(dtype) -> np.ndarray:
    rng = np.random.default_rng(0)
    dense = np.linspace(-100, 100, 1_000_001).astype(dtype)
    near_zero = (rng.standard_normal(200_000) * 1e-3).astype(dtype)
    if dtype == np.float32:
        return np.concatenate([dense, near_zero, SPECIALS])
    wide = (rng.standard_normal(200_000) * 300).astype(dtype)
    return np.concatenate([dense, near_zero, wide, SPECIALS_F64])


def _log_sweep(values, dtype) -> np.ndarray:
    """Positive values, every power of 2 from the smallest denormal up, and [0.5, 2] densely."""
    exponents = np.arange(-149, 128) if dtype == np.float32 else np.arange(-1074, 1024)
    return np.concatenate([np.abs(values), np.ldexp(np.ones(exponents.size), exponents).astype(dtype),
                           np.linspace(0.5, 2, 100_001).astype(dtype), values])


@pytest.mark.parametrize("helper", sorted(ACCURATE))
def test_helper_is_within_one_ulp_over_a_dense_sweep(helper, cache_directory):
    dtype = _dtype(helper)
    values = _sweep(dtype)
    if helper.startswith("_log"):
        values = _log_sweep(values, dtype)
    with np.errstate(all="ignore"):
        exact = ACCURATE[helper](values.astype(np.longdouble))
    got = _apply(_kernel(helper), values, dtype)
    errors = _ulp_errors(got, exact)
    worst = int(np.argmax(errors))
    # measured: at most 1.0 ulp
    assert errors[worst] <= 1.0, (helper, values[worst], got[worst], exact[worst])
    assert np.array_equal(np.isnan(got), np.isnan(exact))


def _bits(values) -> np.ndarray:
    return np.asarray(values, np.float32).view(np.uint32)


@pytest.mark.parametrize("helper", sorted(XLA_FLOAT32))
def test_float32_helper_is_its_oracle_over_a_dense_sweep(helper, cache_directory):
    values = _sweep(np.float32)
    if helper.startswith("_log"):
        values = _log_sweep(values, np.float32)
    got = _apply(_kernel(helper), values)
    expected = XLA_FLOAT32[helper](values)
    same = (_bits(got) == _bits(expected)) | (np.isnan(got) & np.isnan(expected))
    assert same.all(), [(values[i], got[i], expected[i]) for i in np.flatnonzero(~same)[:5]]


def _helper_at(name: str, values) -> np.ndarray:
    return _apply(_kernel(f"_{name}_f32"), np.float32(values))


def test_float32_special_values_are_xlas():
    # XLA's CPU code runs with denormals flushed: exp(-87.5) is 0 (e^-87.5 = 1.0e-38 is denormal),
    # log of a denormal is -inf, logistic's tail is 0; tanh and expm1 pass a tiny x through
    exp = _helper_at("exp", [0.0, -0.0, np.inf, -np.inf, np.nan, 88.72, 88.73, -87.3, -87.5, -100.0])
    assert exp[0] == 1 and exp[1] == 1 and exp[2] == np.inf and exp[3] == 0 and np.isnan(exp[4])
    assert exp[5] == np.float32(3.3931796e+38) and exp[6] == np.inf
    assert exp[7] == np.float32(1.2192433e-38) and exp[8] == 0 and exp[9] == 0  # JAX 0.10.2 prints these
    log = _helper_at("log", [0.0, -0.0, -1.0, np.inf, np.nan, 1.0, 1e-40, 1.2e-38])
    assert log[0] == log[1] == log[6] == -np.inf and np.isnan(log[2]) and np.isnan(log[4]) and log[3] == np.inf
    assert log[5] == 0 and np.isfinite(log[7])
    tanh = _helper_at("tanh", [0.0, -0.0, np.inf, -np.inf, np.nan, 7.99, 8.0, -20.0, 1e-40, -1e-30])
    assert np.array_equal(_bits(tanh[:2]), _bits([0.0, -0.0])) and np.isnan(tanh[4])
    assert tanh[2] == 1 and tanh[3] == -1 and tanh[6] == 1 and tanh[7] == -1 and tanh[5] < 1
    assert _bits(tanh[8:]).tolist() == _bits([1e-40, -1e-30]).tolist()
    expm1 = _helper_at("expm1", [1e-40, -0.0, 0.25, -np.inf, np.inf, np.nan])
    assert _bits(expm1[:2]).tolist() == _bits([1e-40, -0.0]).tolist() and expm1[3] == -1 and expm1[4] == np.inf
    assert expm1[2] == np.float32(0.2840254) and np.isnan(expm1[5])
    logistic = _helper_at("logistic", [0.0, np.inf, -np.inf, np.nan, -88.0, 20.0])
    assert logistic[0] == 0.5 and logistic[1] == 1 and logistic[2] == 0 and np.isnan(logistic[3])
    assert logistic[4] == 0 and logistic[5] == 1
    erf = _helper_at("erf", [0.0, -0.0, 3.9, -3.9, np.inf, np.nan, 1e-40])
    assert np.array_equal(_bits(erf[:2]), _bits([0.0, -0.0])) and erf[2] == 1 and erf[3] == -1
    assert erf[4] == 1 and np.isnan(erf[5]) and erf[6] == 0


def test_float64_special_values(cache_directory):
    got = {name: _apply(_kernel(f"_{name}_f64"), SPECIALS_F64, np.float64) for name in FUNCTIONS}
    position = {float(value): index for index, value in reversed(list(enumerate(SPECIALS_F64)))}

    def at(name, value):
        return got[name][position[value]]

    assert at("exp", np.inf) == np.inf and at("exp", -np.inf) == 0 and at("exp", 710.0) == np.inf
    assert at("exp", -745.13) == 5e-324 and at("exp", -746.0) == 0  # the smallest denormal, then 0
    assert at("log", 0.0) == -np.inf and np.isnan(at("log", -1.0)) and at("log", np.inf) == np.inf
    assert at("log", 5e-324) == -744.4400719213812  # log(2^-1074), in decimal
    assert np.array_equal(_bits64(got["tanh"][:2]), _bits64([0.0, -0.0]))  # the sign of zero is kept
    assert at("tanh", np.inf) == 1 and at("tanh", -np.inf) == -1 and at("tanh", 23.0) == 1
    assert at("logistic", np.inf) == 1 and at("logistic", -np.inf) == 0 and at("logistic", 0.0) == 0.5
    assert 0 < at("logistic", -740.0) < 1e-320  # denormal, not flushed
    for name in FUNCTIONS:
        assert np.isnan(got[name][-1]), name  # NaN is the last special value


def _bits64(values) -> np.ndarray:
    return np.asarray(values, np.float64).view(np.uint64)


def _wide_vector_isa() -> str | None:
    """The x86-64 vector ISA the kernels are compiled for on this CPU (Numba targets the host):
    "avx512f" or "avx2", or None where the assembly cannot show a vectorised loop as ymm or
    zmm arithmetic (another architecture, or an x86-64 CPU without AVX2)."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return None
    import llvmlite.binding as llvm

    features = set(llvm.get_host_cpu_features().flatten().replace("+", "").split(","))
    return next((isa for isa in ("avx512f", "avx2") if isa in features), None)


needs_wide_vectors = pytest.mark.skipif(
    _wide_vector_isa() is None,
    reason="judges vectorisation by packed ymm (AVX2) or zmm (AVX-512) arithmetic in x86-64 "
    "assembly; this CPU has neither, so its loops cannot be judged")


def vector_loop_report(assembly: str) -> dict:
    """What a kernel's machine code uses: packed vector arithmetic on AVX2's ymm or AVX-512's zmm
    registers (whichever width LLVM chose for this CPU), scalar float <-> int conversions (AVX2
    has no packed float64 <-> int64 one, so LLVM scalarises them) and libm calls by name."""
    packed = re.findall(r"^\s+v(?:fn?m(?:add|sub)\d+p[sd]|mulp[sd]|addp[sd]|divp[sd])\s.*%[yz]mm", assembly, re.M)
    scalar_conversions = re.findall(r"^\s+vcvt(?:t?sd2si|si2sd|t?ss2si|si2ss)", assembly, re.M)
    calls = [name for name in ("expf", "tanhf", "logf", "exp@", "tanh@", "log@", "exp\n", "log\n")
             if name in assembly]
    return {"packed": len(packed), "scalar conversions": len(scalar_conversions), "libm": calls}


@needs_wide_vectors
@pytest.mark.parametrize("helper", sorted(HELPERS))
def test_loops_calling_the_helpers_are_vectorised(helper, cache_directory):
    report = vector_loop_report(_assembly(_kernel(helper), _dtype(helper)))
    # packed ymm/zmm arithmetic only appears when LLVM vectorised the loop; a scalar int <-> float
    # conversion would mean some lanes are done one at a time, and a libm call shows by name
    assert report["packed"] >= 8 and report["scalar conversions"] == 0 and not report["libm"], report


def test_helpers_compile_without_warnings_and_load_without_numba(cache_directory, monkeypatch):
    monkeypatch.setattr(codegen, "_LOADED", {})  # write and compile afresh under this directory
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for helper in sorted(HELPERS):
            _apply(_kernel(helper), np.ones(8), _dtype(helper))
    messages = [str(warning.message) for warning in caught]
    assert not [message for message in messages if "Cannot cache" in message or "dynamic globals" in message]
    objects = [name for name in os.listdir(cache_directory / "kernels") if name.endswith(".o")]
    assert len(objects) == len(HELPERS), objects
    # a second process links every kernel's object code, without importing Numba
    script = textwrap.dedent("""
        import sys
        import numpy as np
        from tests.compiler.test_fast_math import HELPERS, XLA_FLOAT32, _apply, _dtype, _kernel
        for helper in sorted(HELPERS):
            values = np.linspace(-3, 3, 50).astype(_dtype(helper))
            got = _apply(_kernel(helper), values, _dtype(helper))
            with np.errstate(all="ignore"):  # float32: the oracle's bits; float64: numpy's within 1e-15
                expected = HELPERS[helper](values if helper in XLA_FLOAT32 else values.astype(np.float64))
            np.testing.assert_allclose(got, expected.astype(values.dtype), rtol=0 if helper in XLA_FLOAT32 else 1e-15,
                                       equal_nan=True)
        assert "numba" not in sys.modules
        print("ok")
    """)
    env = {**os.environ, "MESHJIT_CACHE_DIR": str(cache_directory)}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=ROOT,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("ok")


FUSED = {
    "exp": lambda a: jnp.exp(a * 0.5) * 2,
    "log": lambda a: jnp.log(a * 2) * 3,
    "tanh": lambda a: jnp.tanh(a * 2) * 3,
    "logistic": lambda a: lax.logistic(a * 2) * 3,
}
FUSED_F32 = {**FUSED, "exp2": lambda a: jnp.exp2(a * 2) * 3, "expm1": lambda a: jnp.expm1(a * 0.5) * 3,
             "log1p": lambda a: jnp.log1p(a * 0.1) * 3, "erf": lambda a: lax.erf(a * 0.5) * 3}


def _kernel_steps(function, values):
    compiled = jax.jit(function).lower(values).compile()
    return [step.name for step in compiled.runtime_executable().plan.steps if isinstance(step, KernelStep)], compiled


@pytest.mark.parametrize("name", sorted(FUSED_F32))
def test_float32_transcendental_functions_are_fused(name, cache_directory, monkeypatch):
    monkeypatch.setattr(fusion, "FUSION_MIN_ELEMENTS", 0)
    values = np.linspace(-5, 5, 48, dtype=np.float32).reshape(4, 12)
    steps, compiled = _kernel_steps(FUSED_F32[name], values)
    fused = [step for step in steps if step.startswith("fused(")]
    assert len(fused) == 1 and f",{name}," in fused[0] and name not in steps, steps
    got, expected = np.asarray(compiled(values)), np.asarray(compiled.run_reference(values))
    assert np.array_equal(got.view(np.uint32), expected.view(np.uint32))  # the reference is XLA's too


@pytest.mark.parametrize("name", sorted(FUSED))
def test_float64_transcendental_functions_are_fused(name, cache_directory, monkeypatch, x64):
    monkeypatch.setattr(fusion, "FUSION_MIN_ELEMENTS", 0)
    values = np.linspace(-5, 5, 48, dtype=np.float64).reshape(4, 12)
    steps, compiled = _kernel_steps(FUSED[name], values)
    fused = [step for step in steps if step.startswith("fused(")]
    assert len(fused) == 1 and f",{name}," in fused[0] and name not in steps, steps
    np.testing.assert_allclose(np.asarray(compiled(values)), np.asarray(compiled.run_reference(values)),
                               rtol=1e-15, equal_nan=True)


# --- XLA's float32 erf_inv and the fused multiply-add (meshjit.random's normal draws) -----------


def _erf_inv_sweep() -> np.ndarray:
    near_one = np.float32(1) - np.geomspace(2.0 ** -24, 0.5, 20_001).astype(np.float32)
    return np.concatenate([np.linspace(-1, 1, 400_001, dtype=np.float32), near_one, -near_one,
                           np.float32([1, -1, 0, -0.0, 1e-30, -1e-40, 1.5, -3, np.inf, -np.inf, np.nan])])


def test_erf_inv_kernel_is_the_reference_bit_for_bit(cache_directory):
    # the reference (ir/float_math.py) is what JAX computes; the kernel must give the same bits,
    # on both sides of the two polynomials' boundary (w = 5, |x| ~ 0.99966) and at +-1
    values = _erf_inv_sweep()
    kernel = load_kernel(kernel_source(["row0 = in0[map0[lead]]", "target0 = out0[lead]"],
                                       ["v0 = _erf_inv_f32(row0[k])", "target0[k] = v0"], ["in0", "map0", "out0"]))
    got = _apply(kernel, values)
    with np.errstate(all="ignore"):
        expected = erf_inv(values)
    assert np.array_equal(got.view(np.uint32), expected.view(np.uint32))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fma_kernel_rounds_once_as_the_reference(dtype, cache_directory):
    rng = np.random.default_rng(3)
    a, b, c = (rng.standard_normal(20_000) * 10.0 ** rng.integers(-8, 8, 20_000) for _ in range(3))
    a, b, c = a.astype(dtype), b.astype(dtype), (-a * b).astype(dtype)  # c cancels the product: the low bits show
    a[:6], b[:6], c[:6] = [np.inf, np.nan, 0, -0.0, 1e30, 3], [0, 1, -0.0, 0, 1e30, 1], [1, 1, 0.0, -0.0, -np.inf, -3]
    kernel = load_kernel(kernel_source([f"row{i} = in{i}[map{i}[lead]]" for i in range(3)] + ["target0 = out0[lead]"],
                                       ["v0 = _fma(row0[k], row1[k], row2[k])", "target0[k] = v0"],
                                       ["in0", "map0", "in1", "map1", "in2", "map2", "out0"]))
    out = np.empty((1, a.size), dtype)
    maps = np.zeros(1, np.int64)
    kernel(0, a.size, a.size, a.reshape(1, -1), maps, b.reshape(1, -1), maps, c.reshape(1, -1), maps, out)
    expected = fma(a, b, c)
    got = out.ravel()
    assert np.array_equal(got, expected, equal_nan=True) and np.array_equal(np.signbit(got), np.signbit(expected))
    assert np.count_nonzero(got) > a.size // 2  # the exact residuals, not zeros


@needs_wide_vectors
def test_erf_inv_loop_is_vectorised(cache_directory):
    # the helpers are inlined into the loop (inline="always"): called, the loop ran one lane at a
    # time at 23 ns an element, against 5 ns vectorised
    kernel = load_kernel(kernel_source(["row0 = in0[map0[lead]]", "target0 = out0[lead]"],
                                       ["v0 = _erf_inv_f32(row0[k])", "target0[k] = v0"], ["in0", "map0", "out0"]))
    assembly = _assembly(kernel)
    report = vector_loop_report(assembly)
    assert report["packed"] >= 8 and not report["libm"] and "erf_inv" not in "".join(
        re.findall(r"movabsq\s+\$(\S+)", assembly)), report


def test_a_lone_erf_inv_of_any_size_is_a_kernel(cache_directory):
    # its reference emulates the fused multiply-adds in numpy: a kernel even for a few elements
    values = np.linspace(-0.99, 0.99, 12, dtype=np.float32)
    steps, compiled = _kernel_steps(lambda u: lax.erf_inv(u), values)
    assert any(step.startswith("fused(") and "erf_inv" in step for step in steps), steps
    got = np.asarray(compiled(values))
    assert np.array_equal(got.view(np.uint32), erf_inv(values).view(np.uint32))


def test_normal_draws_through_the_kernel_are_the_references():
    key = jax.random.key(7)
    draw = jax.jit(lambda key: jax.random.normal(key, (64, 33)))
    compiled = draw.lower(key).compile()
    assert any("erf_inv" in step.name for step in compiled.runtime_executable().plan.steps
               if isinstance(step, KernelStep))
    got = np.asarray(compiled(key))
    assert np.array_equal(got.view(np.uint32), np.asarray(compiled.run_reference(key)).view(np.uint32))
