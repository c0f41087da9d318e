"""Running a meshjit.numpy function three ways for differential tests: eagerly, traced (the
module is verified, printed, parsed back and interpreted), and through ``meshjit.jit`` once it
exists; and comparing the results with numpy's.
"""

from __future__ import annotations

import numpy as np
import optree
from meshjit.compiler.frontend.trace_functions import trace_flat
from meshjit.ir import TensorType, interpret, parse_module, print_module, verify
from meshjit.ir.dtypes import from_numpy

import meshjit

MODES = ("eager", "traced", "jit")


def _flatten(output):
    leaves, treedef = optree.tree_flatten(output)
    return leaves, treedef


def traced_module(fn, *args):
    """Trace ``fn`` over abstract versions of the numpy ``args``; returns (traced, treedef)."""
    arg_types = [TensorType(np.shape(arg), from_numpy(np.asarray(arg).dtype)) for arg in args]
    box = []

    def flat_fn(*tracers):
        leaves, treedef = _flatten(fn(*tracers))
        box.append(treedef)
        return leaves

    traced, _ = trace_flat(flat_fn, arg_types, [f"arg{index}" for index in range(len(args))])
    return traced, box[0]


def run_traced(fn, *args):
    """Trace, verify, round-trip through text, and interpret ``fn`` on numpy ``args``."""
    traced, treedef = traced_module(fn, *args)
    module = traced.module
    verify(module)
    text = print_module(module)
    reparsed = parse_module(text)
    verify(reparsed)
    assert print_module(reparsed) == text, "printed module does not round-trip"
    captured = [np.asarray(array) for array in traced.captured]
    results = interpret(module, *args, *captured)
    return optree.tree_unflatten(treedef, list(results))


def run_eager(fn, *args):
    output = fn(*args)
    leaves, treedef = _flatten(output)
    return optree.tree_unflatten(treedef, [np.asarray(leaf) for leaf in leaves])


def run_jit(fn, *args):
    output = meshjit.jit(fn)(*args)
    leaves, treedef = _flatten(output)
    return optree.tree_unflatten(treedef, [np.asarray(leaf) for leaf in leaves])


def run(mode: str, fn, *args):
    """``fn`` on ``args`` in ``mode`` (one of MODES), with numpy leaves."""
    return {"eager": run_eager, "traced": run_traced, "jit": run_jit}[mode](fn, *args)


def dtype_name(array) -> str:
    return from_numpy(np.asarray(array).dtype)


def assert_close(
    actual, expected, *, rtol: float = 1e-6, atol: float = 1e-6, dtype: str | None = None
):
    """Same shape, the expected IR dtype (if given), and values within tolerance (NaNs equal)."""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, f"shape {actual.shape} != expected {expected.shape}"
    if dtype is not None:
        assert dtype_name(actual) == dtype, f"dtype {dtype_name(actual)} != expected {dtype}"
    if actual.dtype == np.bool_ or expected.dtype == np.bool_:
        np.testing.assert_array_equal(actual, expected)
        return
    np.testing.assert_allclose(
        actual.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True
    )
