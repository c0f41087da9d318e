"""The elementwise family's JVP and transpose rules for the binary arithmetic, select and clamp
(the unary derivatives are a table in elementwise.py); ties of max, min and clamp split the
tangent evenly, as JAX does."""

from __future__ import annotations



from ..frontend import lax_ops as lax
from ..frontend.autodiff.evaluate import emit
from ..frontend.autodiff.jvp import linear_jvp
from ..tables import jvp_rules, transpose_rules
from ..frontend.autodiff.registries import LinearInput, add_tangents, full, instantiate, is_float, single, type_of, zeros


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


def balanced_weight(x, result, other):
    """1 where ``x`` alone gives ``result``, 0.5 where ``other`` ties with it, else 0."""
    x_type = type_of(x)
    tie = lax.select(lax.eq(other, result), full(x_type, 0.5), full(x_type, 1))
    return lax.select(lax.eq(x, result), tie, zeros(x_type))


@jvp_rules.register("max", "min")
def _max_min(op, primals, tangents):
    (x, y), (tangent_x, tangent_y) = primals, tangents
    outputs = emit(op, primals)
    first = None if tangent_x is None else lax.mul(tangent_x, balanced_weight(x, outputs[0], y))
    second = None if tangent_y is None else lax.mul(tangent_y, balanced_weight(y, outputs[0], x))
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
