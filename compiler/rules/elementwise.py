"""The compiler's rules for the elementwise ops: every operand of full rank shares the result's
factors; kernels apply the reference implementation to whole buffers; JVPs scale the tangent by
the derivative (ties of max, min and clamp split it evenly, as JAX does).
"""

from __future__ import annotations

import math

from meshjit.ir import Op
from meshjit.ir.ops.elementwise import OPS

from ..sharding.factor_rules import FactorRule, joined, letters
from ..sharding.factor_types import operand_type_text
from ..frontend import lax_ops as lax
from ..frontend.autodiff.evaluate import emit
from ..frontend.autodiff.jvp import no_tangent
from ..tables import jvp_rules
from ..sharding.sharding_types import ShardingTypeError, named_sharding_text
from ..frontend.vmap.batching import batch_elementwise, shift_attrs
from ..sharding.partial_sums import (
    EVERY_REDUCTION,
    MAX,
    MIN,
    SUM,
    PartialRule,
    float_result,
    partial_sum_rules,
)
from ..tables import (
    KernelMath,
    kernel_math,
    batching_rules,
    common_reduced,
    factor_result_dims,
    factor_rule,
    sharding_rules,
    sharding_type_rules,
    typed,
)

# --- sharding ------------------------------------------------------------------------------------


# bitcast_convert_type between widths adds or drops a minor dim; it has rules of its own.
SAME_SHAPE_OPS = tuple(name for name in OPS if name != "bitcast_convert_type")


@sharding_rules.register(*SAME_SHAPE_OPS)
def _elementwise(op: Op) -> FactorRule:
    # every operand of full rank shares the result's factors; 0-d operands (select's pred,
    # clamp's bounds) have none
    dims = joined(letters(op.result.type.rank))
    operands = [dims if operand.type.rank else "[]" for operand in op.operands]
    return factor_rule(op, f"{', '.join(operands)} -> {dims}")


@sharding_rules.register("bitcast_convert_type")
def _bitcast(op: Op) -> FactorRule:
    # the dims both sides share pass through; the minor dim of the word pieces (narrowing adds
    # it, widening consumes it) must be whole on every device
    operand_rank, result_rank = op.operands[0].type.rank, op.result.type.rank
    names = letters(max(operand_rank, result_rank))
    spec = f"{joined(names[:operand_rank]) or '[]'} -> {joined(names[:result_rank]) or '[]'}"
    if operand_rank == result_rank:
        return factor_rule(op, spec)
    return factor_rule(op, spec, {names[-1]: "replication"})
# --- sharding types (explicit mode) -------------------------------------------------------------
# Dims follow the factor rule (operands agree dim by dim). A pending sum (unreduced axes) passes
# through add when both operands hold it over the same axes, through mul when the other operand
# is reduced over them, and through convert; any other elementwise op refuses it (as JAX).


@sharding_type_rules.register("add")
def _add_type(op: Op, operands, mesh) -> list:
    lhs, rhs = operands
    reduced = common_reduced(op, operands)
    if lhs.unreduced and rhs.unreduced and lhs.unreduced != rhs.unreduced:
        raise ShardingTypeError(f"lhs and rhs to `add` must be unreduced along the same mesh axes. Got "
                                f"lhs={lhs.unreduced}, rhs={rhs.unreduced}")
    if bool(lhs.unreduced) != bool(rhs.unreduced):
        pending, other = ("lhs", "rhs") if lhs.unreduced else ("rhs", "lhs")
        raise ShardingTypeError(f"{pending} is unreduced while {other} is not. `add` operation does not allow this "
                                f"because there will be implicit communication. Please reduce {pending} via "
                                f"`reshard` before calling `add`.")
    return typed(mesh, factor_result_dims(op, operands, mesh), lhs.unreduced, reduced)


@sharding_type_rules.register("mul")
def _mul_type(op: Op, operands, mesh) -> list:
    lhs, rhs = operands
    reduced = common_reduced(op, [operand for operand in operands if not operand.unreduced])
    if lhs.unreduced and rhs.unreduced:
        raise ShardingTypeError(f"lhs and rhs to `mul` cannot be unreduced since mul is bilinear. Got "
                                f"lhs={lhs.unreduced}, rhs={rhs.unreduced}")
    for pending, other, names in ((lhs, rhs, ("RHS", "LHS")), (rhs, lhs, ("LHS", "RHS"))):
        if pending.unreduced and other.reduced != pending.unreduced:
            raise ShardingTypeError(f"{names[0]} should be reduced along the same axes {names[1]} is unreduced on. "
                                    f"Got lhs={operand_type_text(op, 0, lhs)} and rhs={operand_type_text(op, 1, rhs)}")
    unreduced = lhs.unreduced | rhs.unreduced
    return typed(mesh, factor_result_dims(op, operands, mesh), unreduced, reduced - unreduced)


@sharding_type_rules.register("convert")
def _convert_type(op: Op, operands, mesh) -> list:
    (operand,) = operands
    return typed(mesh, [operand.dims], operand.unreduced, operand.reduced)


@sharding_type_rules.register("select")
def _select_type(op: Op, operands, mesh) -> list:
    """The cases must have one sharding; the predicate is 0-d or shares it (JAX's rule)."""
    which, *cases = operands
    placed = [case for case in cases if not case.mesh.empty]
    if any(case.dims != placed[0].dims for case in placed[1:]):
        # NOTE: JAX lists the cases in select_n's order: on_false first
        raise ShardingTypeError("select cases must have the same shardings, got "
                                f"[{', '.join(named_sharding_text(case) for case in reversed(cases))}].")
    first = placed[0] if placed else cases[0]
    if which.rank and not which.mesh.empty and which.dims != first.dims:
        raise ShardingTypeError(f"select `which` must be scalar or have the same sharding as cases, got `which` "
                                f"sharding {named_sharding_text(which)} but case sharding "
                                f"{named_sharding_text(cases[-1])}.")
    unreduced = {case.unreduced for case in cases}
    if len(unreduced) > 1:
        raise ShardingTypeError(f"select cases must be unreduced along the same mesh axes, got {unreduced}")
    return typed(mesh, [first.dims], unreduced.pop(), first.reduced)


@sharding_type_rules.register("clamp")
def _clamp_type(op: Op, operands, mesh) -> list:
    operand = operands[1]
    if any(bound.unreduced for bound in operands):
        raise NotImplementedError("unreduced rule for clamp is not implemented (as in JAX): reshard the "
                                  "operand with meshjit.reshard to finish its pending sum first")
    return typed(mesh, [operand.dims], reduced=operand.reduced)


# --- codegen -------------------------------------------------------------------------------------

# NOTE: without Intel's SVML, Numba calls scalar libm for the transcendental functions (~35 ns an
# element), while numpy's ufuncs are SIMD; so these fuse through the exact, vectorisable helpers
# of lowering/codegen_math.py's prelude (float32: XLA's algorithms, JAX's bits), and a large lone one is a kernel of its own (numpy's
# loops for them are scalar and on one thread). The expensive ones are stored once by fused
# multi-pass reductions instead of being recomputed per pass.
_HELPERS = {"f32": "_{}_f32", "f64": "_{}_f64"}
for _name in ("exp", "log", "tanh", "logistic"):
    kernel_math.register(_name)(KernelMath({dtype: helper.format(_name) for dtype, helper in _HELPERS.items()},
                                           expensive=True, alone=True))
# float32 sin/cos/tan/cbrt: glibc's sinf/cosf/tanf/cbrtf (lowering/codegen_trig.py,
# codegen_libm_f32.py); float64 stays numpy's
for _name in ("sin", "cos", "tan", "cbrt"):
    kernel_math.register(_name)(KernelMath({"f32": f"_{_name}_f32"}, expensive=True, alone=True))
kernel_math.register("erf_inv")(KernelMath({"f32": "_erf_inv_f32"}, alone=True))
# float32 only: XLA's exp2, expm1, log1p, erf (ir/xla_math.py); float64 calls libm
for _name in ("exp2", "expm1", "log1p", "erf"):
    kernel_math.register(_name)(KernelMath({"f32": f"_{_name}_f32"}, expensive=True, alone=True))
kernel_math.register("atan2")(KernelMath({"f32": "_atan2_f32"}, expensive=True, alone=True))  # glibc's atan2f
kernel_math.register("pow", "div", "sqrt")(KernelMath(expensive=True))
# NOTE: float32 rsqrt is XLA's CPU algorithm (ir/xla_rsqrt.py); float64 stays 1 / sqrt(x)
kernel_math.register("rsqrt")(KernelMath({"f32": "_rsqrt_f32"}, expensive=True))
# NOTE: square fuses as one multiply (exact, as numpy's), in floats and signed ints.
kernel_math.register("square")(KernelMath(expression="{0} * {0}"))


# --- autodiff ------------------------------------------------------------------------------------

jvp_rules.register(
    "compare",
    "is_finite",
    "not",
    "and",
    "or",
    "xor",
    "shift_left",
    "shift_right_arithmetic",
    "shift_right_logical",
    "bitcast_convert_type",
    "nextafter",  # not differentiable in JAX either
)(no_tangent)


def _tangent_by(formula, narrow_formula=None):
    """The JVP rule of a unary op whose tangent is ``formula(tangent, operand, result)``
    (``narrow_formula`` in 16-bit floats when given)."""

    def rule(op, primals, tangents):
        outputs = emit(op, primals)
        chosen = formula
        if narrow_formula is not None and op.results[0].type.dtype in ("f16", "bf16"):
            chosen = narrow_formula
        return outputs, [chosen(tangents[0], primals[0], outputs[0])]

    return rule


# NOTE: XLA computes JAX's 16-bit tanh tangent, (g + g y)(1 - y), in excess float32 precision
# (its fusions drop the roundings between ops); meshjit rounds each op to 16 bits, where
# g (1 - y y) stays the closer to XLA's (a bfloat16 training run follows JAX's within 0.1%)
_NARROW_TANGENTS = {"tanh": lambda g, x, y: lax.mul(g, lax.sub(1.0, lax.mul(y, y)))}


# NOTE: JAX's formulas, operation for operation, so that gradients round as JAX's do (g / x and
# g * (1 / x) differ in the last bit) and make_jaxpr prints JAX's equations
_TANGENTS = {
    "exp": lambda g, x, y: lax.mul(g, y),
    "exp2": lambda g, x, y: lax.mul(math.log(2.0), lax.mul(g, y)),
    "log": lambda g, x, y: lax.div(g, x),
    "log1p": lambda g, x, y: lax.div(g, lax.add(x, 1.0)),
    "expm1": lambda g, x, y: lax.mul(g, lax.add(y, 1.0)),
    "tanh": lambda g, x, y: lax.mul(lax.add(g, lax.mul(g, y)), lax.sub(1.0, y)),
    "logistic": lambda g, x, y: lax.mul(g, lax.mul(y, lax.sub(1.0, y))),
    "sin": lambda g, x, y: lax.mul(g, lax.cos(x)),
    "cos": lambda g, x, y: lax.neg(lax.mul(g, lax.sin(x))),
    "tan": lambda g, x, y: lax.mul(g, lax.add(1.0, lax.square(y))),
    "sqrt": lambda g, x, y: lax.mul(g, lax.div(0.5, y)),
    "rsqrt": lambda g, x, y: lax.mul(g, lax.mul(-0.5, lax.div(y, x))),
    "cbrt": lambda g, x, y: lax.mul(g, lax.mul(1.0 / 3.0, lax.integer_pow(y, -2))),
    "erf": lambda g, x, y: lax.mul(2.0 / math.sqrt(math.pi), lax.mul(g, lax.exp(lax.neg(lax.square(x))))),
    "square": lambda g, x, y: lax.mul(g, lax.mul(2.0, x)),
    "erf_inv": lambda g, x, y: lax.mul(math.sqrt(math.pi) / 2.0, lax.mul(g, lax.exp(lax.square(y)))),
}
for _name, _formula in _TANGENTS.items():
    jvp_rules.register(_name)(_tangent_by(_formula, _NARROW_TANGENTS.get(_name)))


@jvp_rules.register("floor", "ceil", "round", "sign")
def _zero_derivative(op, primals, tangents):
    return emit(op, primals), [None] * len(op.results)


@jvp_rules.register("integer_pow")
def _integer_pow(op, primals, tangents):
    outputs = emit(op, primals)
    exponent = op.attrs["y"]
    if exponent == 0:
        return outputs, [None]
    if exponent == 1:
        return outputs, [tangents[0]]
    power = primals[0] if exponent == 2 else lax.integer_pow(primals[0], exponent - 1)
    return outputs, [lax.mul(tangents[0], lax.mul(float(exponent), power))]


# --- partial sums --------------------------------------------------------------------------------


@partial_sum_rules.register("add", "sub")
def _add_sub(op: Op) -> PartialRule:
    # (a1 + a2) - (b1 + b2) = (a1 - b1) + (a2 - b2): each device combines its own terms. A free
    # operand would be counted once per device, so both must be pending.
    return PartialRule((0, 1), "all", SUM)


@partial_sum_rules.register("max", "min")
def _max_min(op: Op) -> PartialRule:
    # max(max(a1, a2), b) = max(max(a1, b), max(a2, b)): max and min are idempotent, so a free
    # operand may join every device's term.
    return PartialRule((0, 1), "some", MAX if op.name == "max" else MIN)


@partial_sum_rules.register("mul")
def _mul_partial(op: Op) -> PartialRule:
    # (a1 + a2) * b = a1 * b + a2 * b: linear in each operand separately, never in both at once
    # ((a1 + a2) * (b1 + b2) has cross terms).
    return PartialRule((0, 1), "one", SUM)


@partial_sum_rules.register("div")
def _div(op: Op) -> PartialRule | None:
    # (a1 + a2) / b = a1 / b + a2 / b for floats only: integer division truncates each term.
    return PartialRule((0,), "one", SUM) if float_result(op) else None


@partial_sum_rules.register("neg")
def _neg(op: Op) -> PartialRule:
    # -(a1 + a2) = -a1 + -a2 and -max(a1, a2) = min(-a1, -a2). Integers pass sums only: the
    # padding of an uneven max holds the lowest integer, whose negation wraps to itself.
    return PartialRule((0,), "one", {"sum": "sum", "max": "min", "min": "max"} if float_result(op) else SUM)


@partial_sum_rules.register("select")
def _select(op: Op) -> PartialRule:
    # select(p, a1 + a2, b1 + b2) = select(p, a1, b1) + select(p, a2, b2) when p is the same on
    # every device: select picks, it never combines. One pending branch and a free one would
    # count the free branch once per device, so both must be pending.
    return PartialRule((1, 2), "all", EVERY_REDUCTION)
# --- vmap --------------------------------------------------------------------------------------

batching_rules.register(*SAME_SHAPE_OPS)(batch_elementwise)
# NOTE: the pieces of a wider word sit in a new minor dim, so the batch dim only needs to lead.
batching_rules.register("bitcast_convert_type")(shift_attrs())
