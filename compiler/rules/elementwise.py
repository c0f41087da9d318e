"""The compiler's rules for the elementwise ops: every operand of full rank shares the result's
factors; kernels apply the reference implementation to whole buffers; JVPs scale the tangent by
the derivative (ties of max, min and clamp split it evenly, as JAX does).
"""

from __future__ import annotations

import math

import numpy as np
from meshjit.ir import Op
from meshjit.ir.dtypes import to_numpy
from meshjit.ir.ops.elementwise import OPS
from meshjit.ir.reference import reference_impls

from ..sharding.factor_rules import FactorRule, joined, letters
from ..sharding.factor_types import operand_type_text
from ..frontend import lax_ops as lax
from ..frontend.autodiff.evaluate import emit
from ..frontend.autodiff.jvp import linear_jvp, no_tangent
from ..frontend.autodiff.registries import (
    LinearInput,
    add_tangents,
    full,
    instantiate,
    is_float,
    jvp_rules,
    single,
    transpose_rules,
    type_of,
    zeros,
)
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
    batching_rules,
    common_reduced,
    factor_result_dims,
    factor_rule,
    kernel_rules,
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


# --- kernels -------------------------------------------------------------------------------------


def _lift(operand: np.ndarray, lead: int, rank: int) -> np.ndarray:
    """Give a lower-rank local value (a 0-d select predicate) trailing unit dims to broadcast."""
    missing = rank - (operand.ndim - lead)
    return operand.reshape(operand.shape + (1,) * missing) if missing > 0 else operand


def _direct(function, arity: int, dtype: np.dtype, array_result: bool):
    """A kernel calling a numpy function straight away (plans run with floating-point warnings
    off, so the reference impl's errstate is not needed), its result in ``dtype``; without the
    ``asarray`` when the function is known to give an array of that dtype."""
    if array_result and _keeps_dtype(function, arity, dtype):
        kernel = (lambda operand: (function(operand),)) if arity == 1 else (lambda lhs, rhs: (function(lhs, rhs),))
        kernel.single_output = function
        return kernel
    asarray = np.asarray
    if arity == 1:
        return lambda operand: (asarray(function(operand), dtype=dtype),)
    return lambda lhs, rhs: (asarray(function(lhs, rhs), dtype=dtype),)


def _keeps_dtype(function, arity: int, dtype: np.dtype) -> bool:
    """Whether ``function`` is a numpy ufunc whose result on arrays of ``dtype`` has that dtype
    (``abs`` of a complex array is real, so not every one does)."""
    if not isinstance(function, np.ufunc):
        return False
    try:
        with np.errstate(all="ignore"):
            return function(*[np.zeros(1, dtype)] * arity).dtype == dtype
    except TypeError:
        return False


@kernel_rules.register(*(name for name in SAME_SHAPE_OPS if name != "integer_pow"))
def _elementwise(op: Op, lead: int):
    impl = reference_impls[op.name]
    attrs = op.attrs
    rank = op.result.type.rank

    if all(operand.type.rank == rank for operand in op.operands):
        function = getattr(impl, "numpy_function", None)
        if function is not None and len(op.operands) in (1, 2):
            # NOTE: a buffer with a leading mesh dim or a dim of its own is never 0-d, so a
            # ufunc gives an array, not a numpy scalar
            return _direct(function, len(op.operands), to_numpy(op.operands[0].type.dtype), lead + rank > 0)
        return lambda *operands: impl(attrs, *operands)

    def run(*operands):
        return impl(attrs, *(_lift(operand, lead, rank) for operand in operands))

    return run


@kernel_rules.register("integer_pow")
def _integer_pow(op: Op, lead: int):
    """The reference's square-and-multiply, the same multiplications in the same order, without
    its leading multiplication by one (exact) or the errstate (plans run with warnings off)."""
    exponent = op.attrs["y"]
    dtype = to_numpy(op.result.type.dtype)
    one = dtype.type(1)

    def run(operand):
        result, power, remaining = None, operand, abs(exponent)
        while remaining:
            if remaining & 1:
                result = power if result is None else result * power
            remaining >>= 1
            if remaining:
                power = power * power
        if result is None:
            result = np.ones_like(operand)
        if exponent < 0:
            result = one / result
        return (np.asarray(result, dtype=dtype),)

    return run


@kernel_rules.register("bitcast_convert_type")
def _bitcast(op: Op, lead: int):
    impl = reference_impls[op.name]
    attrs = op.attrs
    return lambda operand: impl(attrs, operand)


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


def _scaled_by(derivative):
    """The JVP rule of a unary op whose derivative is ``derivative(operand, result)``."""

    def rule(op, primals, tangents):
        outputs = emit(op, primals)
        return outputs, [lax.mul(tangents[0], derivative(primals[0], outputs[0]))]

    return rule


def _sign_factor(x):
    """1 where ``x >= 0``, else -1 (abs's derivative, taking +1 at zero as JAX does)."""
    x_type = type_of(x)
    return lax.select(lax.ge(x, 0.0), full(x_type, 1), full(x_type, -1))


_DERIVATIVES = {
    "exp": lambda x, y: y,
    "exp2": lambda x, y: lax.mul(y, math.log(2.0)),
    "log": lambda x, y: lax.div(1.0, x),
    "log1p": lambda x, y: lax.div(1.0, lax.add(x, 1.0)),
    "expm1": lambda x, y: lax.add(y, 1.0),
    "tanh": lambda x, y: lax.sub(1.0, lax.mul(y, y)),
    "logistic": lambda x, y: lax.mul(y, lax.sub(1.0, y)),
    "sin": lambda x, y: lax.cos(x),
    "cos": lambda x, y: lax.neg(lax.sin(x)),
    "tan": lambda x, y: lax.add(1.0, lax.mul(y, y)),
    "sqrt": lambda x, y: lax.div(0.5, y),
    "rsqrt": lambda x, y: lax.mul(lax.div(y, x), -0.5),
    "cbrt": lambda x, y: lax.mul(lax.integer_pow(y, -2), 1.0 / 3.0),
    "erf": lambda x, y: lax.mul(lax.exp(lax.neg(lax.mul(x, x))), 2.0 / math.sqrt(math.pi)),
    "abs": lambda x, y: _sign_factor(x),
    "erf_inv": lambda x, y: lax.mul(lax.exp(lax.mul(y, y)), math.sqrt(math.pi) / 2.0),
}
for _name, _derivative in _DERIVATIVES.items():
    jvp_rules.register(_name)(_scaled_by(_derivative))


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
    return outputs, [lax.mul(tangents[0], lax.mul(power, float(exponent)))]


# --- binary arithmetic -----------------------------------------------------------------------


jvp_rules.register("neg")(linear_jvp)


@jvp_rules.register("add")
def _add(op, primals, tangents):
    return emit(op, primals), [add_tangents(*tangents)]


@jvp_rules.register("convert")
def _convert(op, primals, tangents):
    if is_float(op.attrs["new_dtype"]) and is_float(type_of(primals[0]).dtype):
        return linear_jvp(op, primals, tangents)
    return emit(op, primals), [None]


@jvp_rules.register("sub")
def _sub(op, primals, tangents):
    tangent_x, tangent_y = tangents
    if tangent_y is None:
        return emit(op, primals), [tangent_x]
    tangent = lax.neg(tangent_y) if tangent_x is None else lax.sub(tangent_x, tangent_y)
    return emit(op, primals), [tangent]


@jvp_rules.register("mul")
def _mul(op, primals, tangents):
    (x, y), (tangent_x, tangent_y) = primals, tangents
    first = None if tangent_x is None else lax.mul(tangent_x, y)
    second = None if tangent_y is None else lax.mul(x, tangent_y)
    return emit(op, primals), [add_tangents(first, second)]


@jvp_rules.register("fma")
def _fma(op, primals, tangents):
    (a, b, _), (tangent_a, tangent_b, tangent_c) = primals, tangents
    first = None if tangent_a is None else lax.mul(tangent_a, b)
    second = None if tangent_b is None else lax.mul(a, tangent_b)
    return emit(op, primals), [add_tangents(add_tangents(first, second), tangent_c)]


@jvp_rules.register("div")
def _div(op, primals, tangents):
    (_, y), (tangent_x, tangent_y) = primals, tangents
    outputs = emit(op, primals)
    first = None if tangent_x is None else lax.div(tangent_x, y)
    second = None if tangent_y is None else lax.mul(tangent_y, lax.neg(lax.div(outputs[0], y)))
    return outputs, [add_tangents(first, second)]


@jvp_rules.register("rem")
def _rem(op, primals, tangents):
    # rem(x, y) = x - y * trunc(x / y); trunc is piecewise constant.
    (x, y), (tangent_x, tangent_y) = primals, tangents
    quotient = lax.div(x, y)
    truncated = lax.mul(lax.sign(quotient), lax.floor(lax.abs(quotient)))
    second = None if tangent_y is None else lax.mul(tangent_y, lax.neg(truncated))
    return emit(op, primals), [add_tangents(tangent_x, second)]


@jvp_rules.register("pow")
def _pow(op, primals, tangents):
    (x, y), (tangent_x, tangent_y) = primals, tangents
    outputs = emit(op, primals)
    x_type = type_of(x)
    first = second = None
    if tangent_x is not None:
        slope = lax.mul(y, lax.pow(x, lax.sub(y, 1.0)))
        first = lax.mul(tangent_x, lax.select(lax.eq(y, 0.0), zeros(x_type), slope))
    if tangent_y is not None:
        safe_x = lax.select(lax.eq(x, 0.0), full(x_type, 1), x)
        second = lax.mul(tangent_y, lax.mul(lax.log(safe_x), outputs[0]))
    return outputs, [add_tangents(first, second)]


def _balanced_weight(x, result, other):
    """1 where ``x`` alone gives ``result``, 0.5 where ``other`` ties with it, else 0."""
    x_type = type_of(x)
    tie = lax.select(lax.eq(other, result), full(x_type, 0.5), full(x_type, 1))
    return lax.select(lax.eq(x, result), tie, zeros(x_type))


@jvp_rules.register("max", "min")
def _max_min(op, primals, tangents):
    (x, y), (tangent_x, tangent_y) = primals, tangents
    outputs = emit(op, primals)
    first = None if tangent_x is None else lax.mul(tangent_x, _balanced_weight(x, outputs[0], y))
    second = None if tangent_y is None else lax.mul(tangent_y, _balanced_weight(y, outputs[0], x))
    return outputs, [add_tangents(first, second)]


@jvp_rules.register("atan2")
def _atan2(op, primals, tangents):
    (x, y), (tangent_x, tangent_y) = primals, tangents
    denominator = lax.add(lax.mul(x, x), lax.mul(y, y))
    first = None if tangent_x is None else lax.mul(tangent_x, lax.div(y, denominator))
    second = None if tangent_y is None else lax.mul(tangent_y, lax.neg(lax.div(x, denominator)))
    return emit(op, primals), [add_tangents(first, second)]


# --- select and clamp ------------------------------------------------------------------------


@jvp_rules.register("select")
def _select(op, primals, tangents):
    result_type = type_of(primals[1])
    on_true, on_false = (instantiate(tangent, result_type) for tangent in tangents[1:])
    return emit(op, primals), [lax.select(primals[0], on_true, on_false)]


def _widen(value, shape):
    """A 0-d clamp bound (or its tangent) broadcast to the operand's shape."""
    if type_of(value).shape == tuple(shape):
        return value
    return single("broadcast_in_dim", [value], {"shape": tuple(shape), "broadcast_dimensions": ()})


@jvp_rules.register("clamp")
def _clamp(op, primals, tangents):
    # clamp(lo, x, hi) = min(max(x, lo), hi): the tangent of whichever value is chosen.
    (low, x, high), (tangent_low, tangent_x, tangent_high) = primals, tangents
    shape = type_of(x).shape
    low, high = _widen(low, shape), _widen(high, shape)
    tangent = instantiate(tangent_x, type_of(x))
    if tangent_low is not None:
        tangent = lax.select(lax.lt(x, low), _widen(tangent_low, shape), tangent)
    if tangent_high is not None:
        above = lax.gt(lax.max(x, low), high)
        tangent = lax.select(above, _widen(tangent_high, shape), tangent)
    return emit(op, primals), [tangent]


# --- transposes ----------------------------------------------------------------------------------


@transpose_rules.register("neg")
def _neg_transpose(op, cotangents, operands):
    return [lax.neg(cotangents[0])]


@transpose_rules.register("add", "sub")
def _add_sub_transpose(op, cotangents, operands):
    cotangent = cotangents[0]
    second = (
        lax.neg(cotangent)
        if op.name == "sub" and isinstance(operands[1], LinearInput)
        else cotangent
    )
    return [
        cotangent if isinstance(operands[0], LinearInput) else None,
        second if isinstance(operands[1], LinearInput) else None,
    ]


@transpose_rules.register("mul")
def _mul_transpose(op, cotangents, operands):
    x, y = operands
    if isinstance(x, LinearInput) and isinstance(y, LinearInput):
        raise AssertionError("autodiff internal error: mul of two tangents is not linear")
    if isinstance(x, LinearInput):
        return [lax.mul(cotangents[0], y), None]
    return [None, lax.mul(x, cotangents[0])]


@transpose_rules.register("div")
def _div_transpose(op, cotangents, operands):
    if isinstance(operands[1], LinearInput):
        raise AssertionError("autodiff internal error: div is linear in its numerator only")
    return [lax.div(cotangents[0], operands[1]), None]


@transpose_rules.register("select")
def _select_transpose(op, cotangents, operands):
    predicate, cotangent = operands[0], cotangents[0]
    blank = zeros(type_of(cotangent))
    on_true = (
        lax.select(predicate, cotangent, blank) if isinstance(operands[1], LinearInput) else None
    )
    on_false = (
        lax.select(predicate, blank, cotangent) if isinstance(operands[2], LinearInput) else None
    )
    return [None, on_true, on_false]


@transpose_rules.register("convert")
def _convert_transpose(op, cotangents, operands):
    return [lax.convert_element_type(cotangents[0], type_of(operands[0]).dtype)]


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
