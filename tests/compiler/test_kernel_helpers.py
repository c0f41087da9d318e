"""Kernels share their prelude's helpers within a process (kernel_objects.shared_helpers): each
helper is typed and lowered once, and a kernel compiled against helpers another kernel already
compiled gives the same bits as one compiled against fresh helpers."""

from __future__ import annotations

import numpy as np

from meshjit.compiler.lowering import kernel_objects
from meshjit.compiler.lowering.codegen_math import PRELUDE

ENTRY = ('@numba.njit(cache=True, nogil=True, error_model="numpy")\n'
         "def kernel(x, out):\n"
         "    for i in range(x.shape[0]):\n"
         "        out[i] = {}\n")
EXP_TANH = "_tanh_f32(x[i]) * _exp_f32(x[i] * np.float32(0.5)) + _log_f32(abs(x[i]) + np.float32(1))"


def _kernel(directory, name: str, expression: str) -> kernel_objects.ObjectKernel:
    path = directory / f"fused_{name}.py"
    path.write_text(PRELUDE + "\n\n" + ENTRY.format(expression))
    return kernel_objects.ObjectKernel(str(path), name, "kernel")


def _inputs() -> np.ndarray:
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 88.7, -103.9, 3.4e38], np.float32)
    bits = np.random.default_rng(0).integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32)
    return np.concatenate([special, bits.view(np.float32), np.linspace(-20, 20, 20000, dtype=np.float32)])


def _run(kernel) -> np.ndarray:
    x = _inputs()
    out = np.empty_like(x)
    kernel(x, out)
    return out.view(np.uint32)


def test_split_source_separates_the_prelude_from_the_entry():
    entry = ENTRY.format("x[i]")
    assert kernel_objects.split_source(PRELUDE + "\n\n" + entry, "kernel") == (PRELUDE + "\n\n", entry)
    assert kernel_objects.split_source("def other(x):\n    return x\n", "kernel") == (
        "", "def other(x):\n    return x\n")


def test_kernels_with_one_prelude_call_the_same_helpers(tmp_path, monkeypatch):
    monkeypatch.setattr(kernel_objects, "_HELPERS", {})
    first = _kernel(tmp_path, "first", "_exp_f32(x[i])").python_module()
    second = _kernel(tmp_path, "second", "_tanh_f32(x[i])").python_module()
    assert first._exp_f32 is second._exp_f32 and first._tanh_f32 is second._tanh_f32
    assert first.kernel is not second.kernel
    assert first.__file__ != second.__file__


def test_a_kernel_on_shared_helpers_equals_one_on_fresh_helpers(tmp_path, monkeypatch):
    monkeypatch.setattr(kernel_objects, "_HELPERS", {})
    _run(_kernel(tmp_path, "warm", "_exp_f32(x[i]) + _tanh_f32(x[i]) - _log_f32(abs(x[i]))"))
    shared = _run(_kernel(tmp_path, "shared", EXP_TANH))
    monkeypatch.setattr(kernel_objects, "_HELPERS", {})
    fresh = _run(_kernel(tmp_path, "fresh", EXP_TANH))
    np.testing.assert_array_equal(shared, fresh)
    x = _inputs()
    finite = np.isfinite(x) & (np.abs(x) < 80)
    wide = x[finite].astype(np.float64)
    expected = np.tanh(wide) * np.exp(wide * 0.5) + np.log1p(np.abs(wide))
    np.testing.assert_allclose(shared.view(np.float32)[finite], expected, rtol=1e-5, atol=1e-5)
