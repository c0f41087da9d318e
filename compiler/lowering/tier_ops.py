"""Which ops of a fused group have a first tier giving the kernel's bits (tiers.py), and the
numpy function each runs there.

Most run as their ordinary numpy kernels (``kernel_rules``), which round exactly as the fused
expression (codegen_expressions.py) does: IEEE-rounded arithmetic, comparisons, selects, exact
conversions. The others run as numpy spellings of the fused expression (``_SPELLED``): the
transcendental helpers (tier_math.py), float max/min (``llvm.maximum`` orders -0 below +0),
rsqrt (a float64 division of the float32 root), integer_pow 4 (``((x*x)*x)*x``); and the
reductions in their kernel's order (tier_reductions.py, which says which have one). Where the
installation's kernel library (op_library.py) has an op's helper built, the op runs through it
instead: the helper itself, compiled, over the whole array.
"""

from __future__ import annotations

import numpy as np
from meshjit.ir import Op

from . import op_library, tier_math
from .fusion_groups import REDUCERS
from .tier_reductions import reduction_kernel
from ..tables import kernel_rules, math_of

_FLOATS, _SIGNED, _UNSIGNED = ("f32", "f64"), ("i32", "i64"), ("u32", "u64")
# NOTE: the ops whose fused expression rounds exactly as their numpy kernel; float-to-int
# conversions (XLA's saturation), ops calling libm (erf, pow, cbrt, atan2) and the rest are not
_IDENTICAL = {
    "f32": {"add", "sub", "mul", "div", "neg", "abs", "sqrt", "floor", "ceil", "fma", "square"},
    "i32": {"add", "sub", "mul", "neg", "max", "min", "abs"},
    "u32": {"add", "sub", "mul", "max", "min", "and", "or", "xor", "shift_left", "shift_right_logical"},
    "bool": {"and", "or", "xor", "not"},
}
_IDENTICAL["f64"], _IDENTICAL["i64"], _IDENTICAL["u64"] = _IDENTICAL["f32"], _IDENTICAL["i32"], _IDENTICAL["u32"]


def _maximum(x, y):
    """``llvm.maximum``: NaN if either is, -0 below +0 (np.maximum keeps the first of two
    equal zeros); of two zeros the larger is their sum (+0 unless both are -0)."""
    return np.where((x == 0) & (y == 0), x + y, np.maximum(x, y))


def _minimum(x, y):
    return np.where((x == 0) & (y == 0), -((-x) + (-y)), np.minimum(x, y))


def _rsqrt(x):
    """``1.0 / math.sqrt(x)`` in the kernel: the root in ``x``'s type, divided in float64."""
    return (1.0 / np.sqrt(x).astype(np.float64)).astype(x.dtype)


def _spelled(op: Op):
    """The numpy function (of the op's operand arrays, giving its result array) spelling the
    op's fused expression where its numpy kernel rounds otherwise, or None."""
    result = op.result.type.dtype
    if result not in _FLOATS:
        return None
    helper = math_of(op.name).helpers.get(result)
    if helper in tier_math.HELPERS and op.operands[0].type.dtype == result:
        return tier_math.HELPERS[helper]
    if op.name in ("max", "min"):
        return _maximum if op.name == "max" else _minimum
    if op.name == "rsqrt":
        return _rsqrt
    if op.name == "integer_pow" and op.attrs["y"] == 4:
        return lambda x: ((x * x) * x) * x
    return None


def identical(op: Op) -> bool:
    """Whether the first tier gives ``op``'s fused bits (``tier_kernel`` runs it)."""
    result = op.result.type.dtype
    if op.name in ("broadcast_in_dim", "reshape", "expand_dims", "squeeze", "compare", "select", "is_finite"):
        return True
    if op.name in REDUCERS:
        return True  # NOTE: in the group's order, which tier_reductions.reproducible checks
    if op.name == "convert":
        source = op.operands[0].type.dtype
        return not (source in _FLOATS and result != "bool" and result not in _FLOATS) and source not in _UNSIGNED
    if op.name == "integer_pow":
        return result in _FLOATS and 0 <= op.attrs["y"] <= 4
    if op.name == "erf_inv":  # NOTE: its numpy kernel is the reference, which the helper follows bit for bit
        return result == "f32" and op.operands[0].type.dtype == "f32"
    return op.name in _IDENTICAL.get(result, ()) or _spelled(op) is not None


def costly(op: Op) -> bool:
    """Whether ``op``'s first tier emulates FMAs in numpy (tens of array passes per FMA: a
    float32 tanh over 2^24 elements took over 100 s that way, against a few seconds to compile)."""
    spelled = _spelled(op)
    return op.name == "erf_inv" or spelled in tier_math.HELPERS.values()


def library_helper(op: Op):
    """The kernel library's key (op_library.ENTRIES) for ``op``'s fused expression, or None: its
    prelude helper, or ("_fma", dtype) for a float fused multiply-add, with every operand of the
    result's dtype (the expression codegen_expressions.expression writes for it)."""
    result = op.result.type.dtype
    if result not in _FLOATS or any(operand.type.dtype != result for operand in op.operands):
        return None
    helper = ("_fma", result) if op.name == "fma" else math_of(op.name).helpers.get(result)
    return helper if helper in op_library.ENTRIES else None


def on_library(op: Op) -> bool:
    """Whether ``op`` runs through a built library kernel on the first tier."""
    helper = library_helper(op)
    return helper is not None and op_library.native(helper) is not None


def tier_kernel(op: Op, lead: int, leading: bool = False):
    """``run(*operand buffers) -> (result buffer,)`` for ``op`` on the first tier (``leading``:
    the op is in a columns kernel's group); where it can write into a given buffer,
    ``run.into(out, *operands)`` does (a numpy ufunc, a library kernel)."""
    if op.name in REDUCERS:
        return reduction_kernel(op, lead, leading)
    helper = library_helper(op)
    compiled = op_library.runner(helper) if helper is not None else None
    if compiled is not None:
        kernel = lambda *operands: (compiled(*operands),)  # noqa: E731
        kernel.into = lambda out, *operands: (compiled(*operands, out=out),)
        return kernel
    spelled = _spelled(op)
    if spelled is None:
        kernel = kernel_rules[op.name](op, lead)
        single = getattr(kernel, "single_output", None)
        if isinstance(single, np.ufunc):
            kernel.into = lambda out, *operands: (single(*operands, out=out),)
        return kernel

    def run(*operands):
        with np.errstate(all="ignore"):
            return (spelled(*operands),)

    return run
