"""meshjit.nn's implementation: jax.nn's activations, softmax family and one_hot, written with
meshjit.numpy (so they promote, broadcast and trace like it)."""

from __future__ import annotations

import math
import operator

from . import lax_ops as lax
from . import numpy_api as jnp
from . import sharding_ops
from .numpy_api.arguments import (
    array_operand,
    convert_operand,
    dtype_argument,
    inexact_dtype,
    normalize_axes,
    normalize_axis,
    with_weak_type,
)
from .autodiff.markers import stop_gradient
from .operands import dtype_of, shape_of, x64
from .promotion import default_float
from .trace import ConcretizationTypeError, Tracer
from meshjit.ir.dtypes import is_float

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "gelu",
    "leaky_relu",
    "log_sigmoid",
    "log_softmax",
    "logsumexp",
    "one_hot",
    "relu",
    "relu6",
    "sigmoid",
    "silu",
    "softmax",
    "softplus",
    "swish",
)


def _float_operand(x, function: str, weak: bool = True):
    """``x`` in its float dtype (ints and bools become floats, as jax.nn does); ``weak=False``
    drops a weak type, as jax.nn's softmax family and gelu do."""
    operand = array_operand(x, function)
    operand = convert_operand(operand, inexact_dtype(dtype_of(operand)).name)
    return operand if weak else with_weak_type(operand, False)


def relu(x):
    """``max(x, 0)``."""
    return jnp.maximum(x, 0)


def relu6(x):
    """``min(max(x, 0), 6)``."""
    return jnp.minimum(jnp.maximum(x, 0), 6.0)


def leaky_relu(x, negative_slope: float = 1e-2):
    """``x`` for positive inputs, ``negative_slope * x`` otherwise."""
    return jnp.where(jnp.greater_equal(x, 0), x, jnp.multiply(negative_slope, x))


def sigmoid(x):
    """The logistic function ``1 / (1 + exp(-x))``."""
    return lax.logistic(_float_operand(x, "sigmoid"))


def silu(x):
    """``x * sigmoid(x)`` (also called swish)."""
    operand = _float_operand(x, "silu")
    return lax.mul(operand, lax.logistic(operand))


swish = silu


def softplus(x):
    """``log(1 + exp(x))`` without overflow."""
    return jnp.logaddexp(_float_operand(x, "softplus"), 0.0)


def log_sigmoid(x):
    """``log(sigmoid(x))`` without underflow: ``-softplus(-x)``."""
    return jnp.negative(softplus(jnp.negative(_float_operand(x, "log_sigmoid"))))


def gelu(x, approximate: bool = True):
    """The Gaussian error linear unit: the tanh approximation, or exact with ``erf``."""
    operand = _float_operand(x, "gelu", weak=False)
    if approximate:
        cube = lax.integer_pow(operand, 3)
        inner = lax.mul(lax.add(operand, lax.mul(cube, 0.044715)), math.sqrt(2.0 / math.pi))
        return lax.mul(lax.mul(operand, 0.5), lax.add(lax.tanh(inner), 1.0))
    return lax.mul(
        lax.mul(operand, 0.5), lax.add(lax.erf(lax.mul(operand, 1.0 / math.sqrt(2.0))), 1.0)
    )


def _shifted(operand, axes):
    """``operand`` minus its maximum over ``axes`` (kept as size-1 dims), and that maximum.

    An infinite or NaN maximum (a row of -inf, or one holding +inf) is replaced by 0 so that the
    shift itself never makes a NaN; the callers' formulas then give -inf or inf as they should.
    The results do not depend on the shift, so, as in JAX, no derivative flows through the
    maximum: differentiating through it would add terms that cancel, and on a sharded axis two
    more all_reduces (the cotangent's sum at the maximum and the count of maxima).
    """
    maximum = lax.expand_dims(lax.reduce_max(operand, axes), axes)
    maximum = stop_gradient(lax.select(
        lax.is_finite(maximum), maximum,
        lax.full(shape_of(maximum), 0, dtype_of(maximum).name, sharding=sharding_ops.layout_of(maximum))
    ))
    shape = shape_of(operand)
    broadcast = lax.broadcast_in_dim(maximum, shape, tuple(range(len(shape))))
    return lax.sub(operand, broadcast), maximum


def _sum_kept(operand, axes):
    summed = lax.expand_dims(lax.reduce_sum(operand, axes), axes)
    return lax.broadcast_in_dim(summed, shape_of(operand), tuple(range(len(shape_of(operand)))))


def _masked_out(operand, where, fill):
    """``operand`` with ``fill`` where the ``where`` mask is False (None: no mask)."""
    if where is None:
        return operand
    mask = jnp.broadcast_to(jnp.asarray(where, dtype=bool), shape_of(operand))
    return jnp.where(mask, operand, fill)


def softmax(x, axis=-1, where=None):
    """``exp(x) / sum(exp(x))`` over ``axis`` (an int or tuple), computed after subtracting the
    maximum so that large inputs do not overflow; elements ``where`` masks out take no part and
    get 0."""
    operand = _float_operand(x, "softmax", weak=False)
    axes = normalize_axes(axis, len(shape_of(operand)), "softmax")
    shifted, _ = _shifted(_masked_out(operand, where, -math.inf), axes)
    unnormalized = lax.exp(shifted)
    return _masked_out(lax.div(unnormalized, _sum_kept(unnormalized, axes)), where, 0.0)


def log_softmax(x, axis=-1, where=None):
    """``x - logsumexp(x)`` over ``axis``, computed stably; elements ``where`` masks out take no
    part and get -inf."""
    operand = _float_operand(x, "log_softmax", weak=False)
    axes = normalize_axes(axis, len(shape_of(operand)), "log_softmax")
    shifted, _ = _shifted(_masked_out(operand, where, -math.inf), axes)
    return _masked_out(lax.sub(shifted, lax.log(_sum_kept(lax.exp(shifted), axes))), where, -math.inf)


def logsumexp(a, axis=None, b=None, keepdims: bool = False):
    """``log(sum(b * exp(a)))`` over ``axis`` (None: everything), computed stably; a slice of
    only -inf gives -inf."""
    operand = _float_operand(a, "logsumexp", weak=False)
    axes = normalize_axes(axis, len(shape_of(operand)), "logsumexp")
    shifted, maximum = _shifted(operand, axes)
    exponentials = lax.exp(shifted)
    if b is not None:
        exponentials = jnp.multiply(exponentials, b)
        if shape_of(exponentials) != shape_of(operand):
            raise ValueError(
                f"logsumexp: b of shape {shape_of(b)} must broadcast to "
                f"a's shape {shape_of(operand)}"
            )
    result = lax.add(lax.log(lax.reduce_sum(exponentials, axes)), lax.squeeze(maximum, axes))
    return lax.expand_dims(result, axes) if keepdims and axes else result


def _concrete_class_count(num_classes) -> int:
    if isinstance(num_classes, Tracer):
        raise ConcretizationTypeError(
            f"one_hot: num_classes is a traced value {num_classes.value.type}; it sets the "
            f"result's shape, so pass a Python int (or mark it static)"
        )
    count = operator.index(num_classes)
    if count < 0:
        raise ValueError(f"one_hot: num_classes must be non-negative, got {count}")
    return count


def one_hot(x, num_classes: int, *, dtype=None, axis=-1):
    """1 where the new ``axis`` (of size ``num_classes``) equals ``x``, 0 elsewhere (also for
    out-of-range classes), in ``dtype`` (default: the default float)."""
    count = _concrete_class_count(num_classes)
    operand = array_operand(x, "one_hot")
    if is_float(dtype_of(operand).name):
        raise TypeError(f"one_hot: x must hold integers, got dtype {dtype_of(operand).name}")
    shape = shape_of(operand)
    position = normalize_axis(axis, len(shape) + 1, "one_hot")
    result_shape = shape[:position] + (count,) + shape[position:]
    index_dtype = dtype_of(operand).name if dtype_of(operand).name != "bool" else "i32"
    classes = lax.broadcasted_iota(index_dtype, result_shape, position)
    values = lax.broadcast_in_dim(
        convert_operand(operand, index_dtype),
        result_shape,
        tuple(dim for dim in range(len(result_shape)) if dim != position),
    )
    name = dtype_argument(dtype, "one_hot") if dtype is not None else default_float(x64())
    return lax.convert_element_type(lax.eq(values, classes), name)
