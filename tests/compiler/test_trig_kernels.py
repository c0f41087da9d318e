"""The kernels' float32 sin, cos, tan, cbrt and atan2 (codegen_trig.py, codegen_libm_f32.py, Numba)
give the bits of their numpy versions (meshjit.ir.libm_sincosf, libm_tanf, libm_cbrtf: the
reference interpreter's and the first tier's; libm_atanf for atan2) on random
bit patterns over the whole float range and dense sweeps where glibc's code changes branch
(2^-12, pi/4, 120, the denormal boundary) or cancels (near multiples of pi/2). Both round
every FMA once, so nothing here depends on the CPU's vector ISA or on libm."""

from __future__ import annotations

import numpy as np
import pytest

from meshjit.compiler.lowering import tier_math
from meshjit.compiler.lowering.codegen import kernel_source, load_kernel
from meshjit.ir import libm_cbrtf, libm_sincosf, libm_tanf

MODELS = {"sin": libm_sincosf.sin, "cos": libm_sincosf.cos, "tan": libm_tanf.tan, "cbrt": libm_cbrtf.cbrt}


@pytest.fixture
def cache_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("MESHJIT_CACHE_DIR", str(tmp_path))
    return tmp_path


def _inputs() -> np.ndarray:
    rng = np.random.default_rng(32)
    parts = [rng.integers(0, 2 ** 32, 200_000, dtype=np.uint64).astype(np.uint32).view(np.float32),
             rng.uniform(-130, 130, 50_000).astype(np.float32)]
    for boundary in [2.0 ** -12, 2.0 ** -13, 0.6744, np.pi / 4, 120.0, 2.0 ** -126, 8.0, 1.0, 0.5, *(k * np.pi / 2 for k in range(1, 80))]:
        start = np.float32(boundary)
        sweep = start + np.spacing(start) * np.arange(-200, 200, dtype=np.float32)
        parts += [sweep, -sweep]
    parts.append(np.array([0.0, -0.0, 1e-45, -1e-45, 3.4e38, -3.4e38, np.inf, -np.inf, np.nan], np.float32))
    return np.concatenate(parts)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_kernel_helpers_equal_numpy_version(name, cache_directory):
    kernel = load_kernel(kernel_source(["row0 = in0[map0[lead]]", "target0 = out0[lead]"],
                                       [f"v0 = np.float32(_{name}_f32(row0[k]))", "target0[k] = v0"],
                                       ["in0", "map0", "out0"]))
    values = _inputs()
    got = np.empty((1, values.size), np.float32)
    kernel(0, values.size, values.size, values.reshape(1, -1), np.zeros(1, np.int64), got)
    expected = MODELS[name](values)
    same = (got.ravel().view(np.uint32) == expected.view(np.uint32)) | (np.isnan(got.ravel()) & np.isnan(expected))
    differ = np.flatnonzero(~same)
    assert differ.size == 0, [(values[i], got.ravel()[i], expected[i]) for i in differ[:5]]


def _atan2_inputs() -> tuple[np.ndarray, np.ndarray]:
    """Random bit patterns, ordinary values, atanf's branch points (2^-29, 7/16, 11/16, 19/16,
    39/16, 2^25) as y over x = 1, and every pair of signed zeros, denormals, ones and infinities."""
    rng = np.random.default_rng(33)
    special = np.array([0.0, -0.0, 1e-45, -1e-45, 1e-40, -1e-40, 1.0, -1.0, 2.0, 3e38, -3e38, np.inf, -np.inf, np.nan],
                       np.float32)
    grid_y, grid_x = (part.ravel() for part in np.meshgrid(special, special))
    sweeps = [np.float32(b) + np.spacing(np.float32(b)) * np.arange(-100, 100, dtype=np.float32)
              for b in (2.0 ** -29, 7 / 16, 11 / 16, 19 / 16, 39 / 16, 2.0 ** 25)]
    sweep = np.concatenate(sweeps + [-part for part in sweeps])
    bits = rng.integers(0, 2 ** 32, (2, 200_000), dtype=np.uint64).astype(np.uint32).view(np.float32)
    ordinary = rng.uniform(-5, 5, (2, 50_000)).astype(np.float32)
    with np.errstate(all="ignore"):  # far-apart magnitudes (atan2f's |y/x| > 2^60 shortcut)
        scaled = bits[0][:1000] * np.float32(1e-20)
    y = np.concatenate([bits[0], ordinary[0], grid_y, sweep, scaled])
    x = np.concatenate([bits[1], ordinary[1], grid_x, np.ones_like(sweep), bits[1][:1000]])
    return y, x


def test_atan2_kernel_helper_equals_numpy_version(cache_directory):
    # the first tier runs the numpy version (tier_math.HELPERS), the reference interpreter too
    kernel = load_kernel(kernel_source(["row0 = in0[map0[lead]]", "row1 = in1[map0[lead]]", "target0 = out0[lead]"],
                                       ["v0 = np.float32(_atan2_f32(row0[k], row1[k]))", "target0[k] = v0"],
                                       ["in0", "in1", "map0", "out0"]))
    y, x = _atan2_inputs()
    got = np.empty((1, y.size), np.float32)
    kernel(0, y.size, y.size, y.reshape(1, -1), x.reshape(1, -1), np.zeros(1, np.int64), got)
    expected = tier_math.HELPERS["_atan2_f32"](y, x)
    same = (got.ravel().view(np.uint32) == expected.view(np.uint32)) | (np.isnan(got.ravel()) & np.isnan(expected))
    differ = np.flatnonzero(~same)
    assert differ.size == 0, [(y[i], x[i], got.ravel()[i], expected[i]) for i in differ[:5]]
