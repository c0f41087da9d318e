"""The first tier's numpy helpers (compiler/lowering/tier_math.py) give the kernels' helpers'
bits (codegen_math.py) on every input: random bit patterns over the whole float range, dense
sweeps where the helpers change branch (clamps, underflow, overflow, the denormal boundary),
and the special values. Both sides round every FMA once (llvm.fma, float_math.fma), so nothing
here depends on the CPU's vector ISA or on numpy's own transcendental functions."""

from __future__ import annotations

import numpy as np
import pytest

from meshjit.compiler.lowering import tier_math
from meshjit.compiler.lowering.codegen import kernel_source, load_kernel


@pytest.fixture
def cache_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("MESHJIT_CACHE_DIR", str(tmp_path))
    return tmp_path


_SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1e-30, -1e-30, 1e-40, -1e-40, 3e38, -3e38, 1e300, -1e300, 5e-324,
             -5e-324, np.inf, -np.inf, np.nan]

_BOUNDARIES = {
    "f32": [88.72, 88.8, -87.33, -103.97, -103.99, 9.02, 9.1, 120.0, 1.4142135, 0.70710677, 1.0, 1e-38, 2.0 ** -126],
    "f64": [709.78, 710.0, -708.4, -745.13, -746.0, 22.0, 18.7, 1.4142135623730951, 0.7071067811865476, 1.0,
            2.2250738585072014e-308],
}


def _inputs(dtype, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    words = np.uint32 if dtype == np.float32 else np.uint64
    parts = [rng.integers(0, np.iinfo(words).max, 40000, dtype=words, endpoint=True).view(dtype)]
    for low, high in [(-1, 1), (-12, 12), (-130, 100), (-800, 800), (0, 4)]:
        parts.append(rng.uniform(low, high, 20000).astype(dtype))
    for boundary in _BOUNDARIES["f32" if dtype == np.float32 else "f64"]:
        for sign in (1, -1):
            start = dtype(sign * boundary)
            parts.append(np.array([start], dtype) + np.zeros(1, dtype))
            up = np.nextafter(np.full(64, start, dtype), dtype(np.inf))
            down = np.nextafter(np.full(64, start, dtype), dtype(-np.inf))
            spacing = np.spacing(np.abs(start))
            parts += [start + spacing * np.arange(-64, 64).astype(dtype), up, down]
    with np.errstate(over="ignore"):
        parts.append(np.array(_SPECIALS).astype(dtype))
    return np.concatenate(parts)


def _canonical(values: np.ndarray) -> np.ndarray:
    """The bits, with every NaN one NaN (IEEE leaves a NaN's sign and payload open)."""
    values = np.where(np.isnan(values), np.array(np.nan, values.dtype), values)
    return values.view(np.uint32 if values.dtype == np.float32 else np.uint64)


# the binary _atan2_f32: tests/compiler/test_trig_kernels.py
@pytest.mark.parametrize("helper", sorted(set(tier_math.HELPERS) - {"_atan2_f32"}))
def test_numpy_helpers_give_the_kernels_bits(helper, cache_directory):
    dtype = np.float32 if helper.endswith("f32") else np.float64
    cast = "np." + dtype.__name__
    kernel = load_kernel(kernel_source(["row0 = in0[map0[lead]]", "target0 = out0[lead]"],
                                       [f"v0 = {cast}({helper}(row0[k]))", "target0[k] = v0"],
                                       ["in0", "map0", "out0"]))
    values = _inputs(dtype, len(helper))
    expected = np.empty((1, values.size), dtype)
    kernel(0, values.size, values.size, values.reshape(1, -1), np.zeros(1, np.int64), expected)
    with np.errstate(all="ignore"):
        got = tier_math.HELPERS[helper](values)
    assert got.dtype == dtype
    differ = np.flatnonzero(_canonical(got) != _canonical(expected.ravel()))
    assert differ.size == 0, [(values[i], got[i], expected.ravel()[i]) for i in differ[:5]]
