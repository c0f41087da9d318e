"""The kernels' float32 sin, cos, tan and cbrt (codegen_trig.py, codegen_libm_f32.py, Numba)
give the bits of their numpy versions (meshjit.ir.libm_sincosf, libm_tanf, libm_cbrtf: the
reference interpreter's and the first tier's) on random
bit patterns over the whole float range and dense sweeps where glibc's code changes branch
(2^-12, pi/4, 120, the denormal boundary) or cancels (near multiples of pi/2). Both round
every FMA once, so nothing here depends on the CPU's vector ISA or on libm."""

from __future__ import annotations

import numpy as np
import pytest

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
