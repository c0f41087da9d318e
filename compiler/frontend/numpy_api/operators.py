"""Python operators and array methods (``x + y``, ``x[i]``, ``x.sum()``, ``x.T``) as one table
from dunder or method name to the jax.numpy function, installed on Tracer with
``install_array_methods``; device Arrays reach the same table through the facade's dispatcher
(meshjit/_dispatch.py).
"""

from __future__ import annotations

from .. import lax_ops as lax
from ..operands import is_array_like
from .arguments import dtype_argument
from .elementwise import (
    absolute,
    add,
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    divmod,
    equal,
    floor_divide,
    greater,
    greater_equal,
    invert,
    left_shift,
    less,
    less_equal,
    multiply,
    negative,
    not_equal,
    positive,
    power,
    remainder,
    right_shift,
    subtract,
    true_divide,
)
from .complex_functions import conjugate, imag, real
from .elementwise import clip as _clip
from .elementwise_math import round as _round
from .index_update import IndexUpdateHelper
from .indexing import getitem
from .linalg import dot, matmul
from .reductions import all as _all
from .reductions import any as _any
from .reductions import argmax, argmin, argsort, cumprod, cumsum, mean, prod, std, var
from .reductions import max as _max
from .reductions import min as _min
from .reductions import sort as _sort
from .reductions import sum as _sum
from .shape_ops import matrix_transpose, ravel, repeat, reshape, squeeze, swapaxes, transpose
from .take import take
from .creation import copy as _copy
from .data_dependent import nonzero
from .search import searchsorted


def _operator(function):
    """A binary operator that leaves operands it does not know (None, strings, lists) to
    Python, so ``x == None`` is False and ``x + [1]`` a TypeError, as in JAX."""

    def apply(self, other):
        return function(self, other) if is_array_like(other) else NotImplemented

    return apply


def _reflected(function):
    """The ``__r<op>__`` form: Python calls it as ``right.__radd__(left)``."""

    def apply(self, other):
        return function(other, self) if is_array_like(other) else NotImplemented

    return apply


def _reshape_method(self, *shape, order="C"):
    # ``x.reshape(2, 3)`` and ``x.reshape((2, 3))`` are both numpy spellings.
    return reshape(self, shape[0] if len(shape) == 1 else shape, order=order)


def _transpose_method(self, *axes):
    if not axes or axes == (None,):
        return transpose(self)
    return transpose(self, axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes)


def _astype(self, dtype):
    return lax._convert_element_type(self, dtype_argument(dtype, "astype"), weak_type=False)


# Binary operators: (name, function); each also gets its reflected ``__r<name>__`` form.
_BINARY = (
    ("add", add),
    ("sub", subtract),
    ("mul", multiply),
    ("truediv", true_divide),
    ("floordiv", floor_divide),
    ("mod", remainder),
    ("pow", power),
    ("matmul", matmul),
    ("and", bitwise_and),
    ("or", bitwise_or),
    ("xor", bitwise_xor),
    ("lshift", left_shift),
    ("rshift", right_shift),
    ("divmod", divmod),
)

OPERATORS = {f"__{name}__": _operator(function) for name, function in _BINARY}
OPERATORS.update({f"__r{name}__": _reflected(function) for name, function in _BINARY})
OPERATORS.update(
    {
        "__neg__": negative,
        "__pos__": positive,
        "__abs__": absolute,
        "__invert__": invert,
        "__eq__": _operator(equal),
        "__ne__": _operator(not_equal),
        "__lt__": _operator(less),
        "__le__": _operator(less_equal),
        "__gt__": _operator(greater),
        "__ge__": _operator(greater_equal),
        "__getitem__": getitem,
    }
)

METHODS = {
    "reshape": _reshape_method,
    "astype": _astype,
    "transpose": _transpose_method,
    "sum": _sum,
    "mean": mean,
    "max": _max,
    "min": _min,
    "prod": prod,
    "var": var,
    "std": std,
    "argmax": argmax,
    "argmin": argmin,
    "all": _all,
    "any": _any,
    "cumsum": cumsum,
    "cumprod": cumprod,
    "sort": _sort,
    "argsort": argsort,
    "swapaxes": swapaxes,
    "squeeze": squeeze,
    "ravel": ravel,
    "flatten": ravel,
    "take": take,
    "clip": _clip,
    "round": _round,
    "dot": dot,
    "repeat": repeat,
    "conj": conjugate,
    "conjugate": conjugate,
    "copy": _copy,
    "nonzero": nonzero,
    "searchsorted": searchsorted,
}

PROPERTIES = {"T": transpose, "mT": matrix_transpose, "at": IndexUpdateHelper, "real": real, "imag": imag}


def install_array_methods(cls) -> None:
    """Give ``cls`` numpy's operators, methods and ``T``/``mT`` properties, all traceable."""
    for name, function in {**OPERATORS, **METHODS}.items():
        setattr(cls, name, function)
    for name, function in PROPERTIES.items():
        setattr(cls, name, property(function))
