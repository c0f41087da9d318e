"""Host callbacks with results: ``pure_callback`` (``jax.pure_callback``) and ``io_callback``
(``jax.experimental.io_callback``). Each calls a host Python function, numbered in the table of
``debug.py``, with its operands' values and returns what the function returns, checked against
the result types the op declares (``result_shapes``, ``result_dtypes``).

A pure_callback is an ordinary op: unused it is dead, its results depend on its operands alone.
An io_callback is an effect (``debug.EFFECT_OPS``): it runs even when nothing reads its results,
in program order, never merged or hoisted.
"""

from __future__ import annotations

import numpy as np

from ..core import TensorType
from ..dtypes import DTYPES, to_numpy
from ..reference import reference_impls
from ..shape_rules import fail, int_attr, is_int, required_attr, shape_rules, strings_attr
from .debug import callback_of

OPS = ("pure_callback", "io_callback")


class JaxRuntimeError(RuntimeError):
    """A failure while a compiled program runs (``jax.errors.JaxRuntimeError``): a host callback
    that raised, or returned other results than its op declares."""


class CallbackResultError(RuntimeError):
    """A host callback returned other results than its op declares (JAX's RuntimeError text)."""


def result_types(op: str, attrs) -> tuple[TensorType, ...]:
    """The result types a callback op declares in its attributes."""
    shapes = required_attr(op, attrs, "result_shapes")
    if not isinstance(shapes, tuple) or not all(
            isinstance(shape, tuple) and all(is_int(size) and size >= 0 for size in shape) for shape in shapes):
        fail(op, f"attribute 'result_shapes' must be a tuple of shapes, got {shapes!r}")
    dtypes = strings_attr(op, attrs, "result_dtypes")
    if len(dtypes) != len(shapes):
        fail(op, f"result_shapes names {len(shapes)} results but result_dtypes {len(dtypes)}")
    for dtype in dtypes:
        if dtype not in DTYPES:
            fail(op, f"result dtype {dtype!r} is not one of {', '.join(DTYPES)}")
    return tuple(TensorType(tuple(shape), dtype) for shape, dtype in zip(shapes, dtypes))


@shape_rules.register(*OPS)
def _callback(op, operands, attrs, regions, meshes):
    int_attr(op, attrs, "callback")
    return result_types(op, attrs)


def checked_results(outputs, types) -> tuple[np.ndarray, ...]:
    """The callback's ``outputs`` (a flat sequence of arrays, already canonicalized as JAX does
    by the front end) as arrays of ``types``, or JAX's error: the count, each shape and each
    dtype must match."""
    if len(outputs) != len(types):
        raise CallbackResultError(f"Mismatched number of outputs from callback. Expected: {len(types)}, "
                                  f"Actual: {len(outputs)}")
    checked = []
    for index, (output, expected) in enumerate(zip(outputs, types)):
        array = np.asarray(output)
        dtype = to_numpy(expected.dtype)
        if array.shape != tuple(expected.shape):
            raise CallbackResultError(f"Incorrect output shape for return value #{index}: "
                                      f"Expected: {tuple(expected.shape)}, Actual: {array.shape}")
        if array.dtype != dtype:
            raise CallbackResultError(f"Incorrect output dtype for return value #{index}: "
                                      f"Expected: {dtype}, Actual: {array.dtype}")
        checked.append(array if array.flags.c_contiguous else array.copy())
    return tuple(checked)


def call_checked(callback, operands, types) -> tuple[np.ndarray, ...]:
    """``callback(*operands)`` checked against ``types``; whatever goes wrong comes out as JAX's
    JaxRuntimeError, caused by the original exception."""
    try:
        return checked_results(callback(*operands), types)
    except Exception as error:
        raise JaxRuntimeError(f"INTERNAL: CpuCallback error calling callback: {type(error).__name__}: "
                              f"{error}") from error


def call_host(attrs, operands) -> tuple[np.ndarray, ...]:
    """Call a callback op's host function (its attributes name it) on ``operands``."""
    types = tuple(TensorType(tuple(shape), dtype)
                  for shape, dtype in zip(attrs["result_shapes"], attrs["result_dtypes"]))
    return call_checked(callback_of(attrs["callback"]), operands, types)


@reference_impls.register(*OPS)
def _call(attrs, *operands):
    return call_host(attrs, operands)
