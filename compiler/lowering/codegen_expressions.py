"""The Numba expression of each elementwise op inside a fused kernel (one result, operands
given as source text), or None for ops that must stay separate numpy steps."""

from __future__ import annotations

from meshjit.ir import Op
from meshjit.ir.dtypes import NARROW_FLOATS, to_numpy

from ..tables import math_of

# NOTE: without Intel's SVML, Numba calls scalar libm for the transcendental functions, while
# numpy's ufuncs are SIMD. So the ops whose family declares a math helper (``kernel_math``) fuse
# through the prelude's own vectorisable helpers (codegen_math.py); the other transcendental
# functions stay separate numpy steps and split a group. erf stays in, since numpy has no
# vectorised erf and the reference's is slower still.
_FLOAT_UNARY = {
    "sqrt": "math.sqrt({0})", "erf": "math.erf({0})", "floor": "np.floor({0})", "ceil": "np.ceil({0})",
    "rsqrt": "1.0 / math.sqrt({0})", "abs": "abs({0})", "neg": "-{0}", "sign": "_sign({0})",
}  # NOTE: cbrt fuses through _cbrt_f32 (glibc's cbrtf) in float32; float64 cbrt is a numpy step
_FLOAT_BINARY = {"add": "{0} + {1}", "sub": "{0} - {1}", "mul": "{0} * {1}", "div": "{0} / {1}",
                 "max": "_maximum({0}, {1})", "min": "_minimum({0}, {1})", "pow": "{0} ** {1}",
                 "atan2": "math.atan2({0}, {1})"}
_INT_OPS = {"add": "{0} + {1}", "sub": "{0} - {1}", "mul": "{0} * {1}", "neg": "-{0}",
            "max": "max({0}, {1})", "min": "min({0}, {1})", "abs": "abs({0})"}
# NOTE: unsigned words wrap through the cast to their type; negation and abs are left to numpy.
_UNSIGNED_OPS = {"add": "{0} + {1}", "sub": "{0} - {1}", "mul": "{0} * {1}",
                 "max": "max({0}, {1})", "min": "min({0}, {1})", "and": "{0} & {1}",
                 "or": "{0} | {1}", "xor": "{0} ^ {1}"}
_UNSIGNED_SHIFTS = {"shift_left": "<<", "shift_right_logical": ">>"}
# bitwise on bools: no short-circuit branch in the loop
_BOOL_OPS = {"and": "{0} & {1}", "or": "{0} | {1}", "xor": "{0} != {1}", "not": "not {0}"}
_COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _numpy_name(dtype: str) -> str:
    return "np." + to_numpy(dtype).name.replace("bool", "bool_")


def expression(op: Op, args: list[str]) -> str | None:
    """The Numba expression computing ``op``'s one result, or None when it is not fusible."""
    if any(value.type.dtype in NARROW_FLOATS for value in op.operands + op.results):
        return None  # Numba has no 16-bit floats: these run as f32 kernels one op at a time
    result = op.result.type.dtype
    operand = op.operands[0].type.dtype if op.operands else result
    if any(value.type.dtype in ("c64", "c128") for value in op.operands + op.results):
        return None  # complex values run through their numpy kernels
    cast = _numpy_name(result)
    if op.name == "compare":
        return f"{args[0]} {_COMPARE[op.attrs['direction']]} {args[1]}"
    if op.name == "select":
        return f"{args[1]} if {args[0]} else {args[2]}"
    if op.name == "is_finite":
        return f"math.isfinite({args[0]})"
    if op.name == "convert":
        return _convert(operand, result, args[0])
    if op.name == "integer_pow" and result in ("f32", "f64") and 0 <= op.attrs["y"] <= 4:
        return f"{cast}({' * '.join([args[0]] * op.attrs['y']) or '1.0'})"
    if op.name == "round" and result in ("f32", "f64") and op.attrs.get("rounding_method", "away_from_zero") == "away_from_zero":
        return f"{cast}(_round_away({args[0]}))"
    if op.name == "fma" and result in ("f32", "f64"):
        return f"_fma({args[0]}, {args[1]}, {args[2]})"
    declared = math_of(op.name)
    if declared.expression is not None and result in ("f32", "f64", "i32", "i64"):
        return f"{cast}({declared.expression.format(*args)})"
    helper = declared.helpers.get(result)
    if helper is not None and operand == result:
        return f"{helper}({', '.join(args)})"
    if result == "f32" and op.name == "pow" and operand == "f32":
        return f"_pow_f32({args[0]}, {args[1]})"  # glibc's powf under XLA's denormal mode
    if result in ("f32", "f64"):
        template = _FLOAT_UNARY.get(op.name) if len(args) == 1 else _FLOAT_BINARY.get(op.name)
        return None if template is None else f"{cast}({template.format(*args)})"
    if result in ("i32", "i64"):
        template = _INT_OPS.get(op.name)
        return None if template is None else f"{cast}({template.format(*args)})"
    if result in ("u32", "u64") and op.name in _UNSIGNED_SHIFTS:
        # XLA: an amount of at least the width shifts every bit out; in 64 bits, the cast wraps
        bits = 32 if result == "u32" else 64
        shifted = f"np.uint64({args[0]}) {_UNSIGNED_SHIFTS[op.name]} np.uint64({args[1]})"
        return f"{cast}({shifted} if {args[1]} < {bits} else np.uint64(0))"
    if result in ("u32", "u64"):
        template = _UNSIGNED_OPS.get(op.name)
        return None if template is None else f"{cast}({template.format(*args)})"
    if result == "bool" and op.name in _BOOL_OPS:
        return _BOOL_OPS[op.name].format(*args)
    return None


def _convert(source: str, target: str, arg: str) -> str | None:
    cast = _numpy_name(target)
    if target == "bool":
        return f"{arg} != 0"
    if source in ("f32", "f64") and target in ("i32", "i64"):
        bits = 32 if target == "i32" else 64
        return f"{cast}(_float_to_int({arg}, {-(2 ** (bits - 1))}, {2 ** (bits - 1) - 1}))"
    if source in ("f32", "f64") and target == "u32":
        return f"{cast}(_float_to_int({arg}, 0, {2 ** 32 - 1}))"
    if source in ("f32", "f64") and target == "u64":
        return None  # beyond int64, which the saturating helper computes in
    return f"{cast}({arg})"
