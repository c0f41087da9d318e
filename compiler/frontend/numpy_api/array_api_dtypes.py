"""Dtype queries of jax.numpy and the Python Array API standard: ``result_type promote_types
can_cast isdtype iinfo finfo``, on JAX's promotion lattice (weak Python scalars included)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
from meshjit.ir.dtypes import from_numpy, to_numpy

from ..operands import dtype_of, is_python_scalar, x64
from ..promotion import DType, promote, promote_all
from ..trace import Tracer, is_concrete_array
from .arguments import dtype_argument

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "can_cast",
    "finfo",
    "iinfo",
    "isdtype",
    "promote_types",
    "result_type",
)

# The standard's dtype kinds, as sets of numpy dtype kind letters.
_KINDS = {
    "bool": "b",
    "signed integer": "i",
    "unsigned integer": "u",
    "integral": "iu",
    "real floating": "f",
    "complex floating": "c",
    "numeric": "iufc",
}


def _numpy_dtype(value, function: str) -> np.dtype:
    """The numpy dtype of a dtype-like or an array-like argument."""
    if isinstance(value, Tracer) or is_concrete_array(value):
        return np.dtype(value.dtype)
    # NOTE: numpy's scalar types (np.int8) have a ``dtype`` attribute that is a descriptor
    numpy_scalar_type = isinstance(value, type) and issubclass(value, np.generic)
    try:
        return np.dtype(value if numpy_scalar_type else getattr(value, "dtype", value))
    except TypeError:
        raise TypeError(f"{function}: {value!r} is neither a dtype nor an array") from None


def _kind_letter(numpy_dtype: np.dtype) -> str:
    """numpy's kind letter, with ml_dtypes' bfloat16 (a void-kind extension type) a float."""
    return "f" if numpy_dtype == to_numpy("bf16") else numpy_dtype.kind


def _argument_dtype(value, function: str) -> DType:
    """An argument of result_type: arrays and scalars keep their (weak) dtype; dtypes are strong."""
    if isinstance(value, Tracer) or is_concrete_array(value) or is_python_scalar(value):
        return dtype_of(value)
    if isinstance(value, type) and value in (bool, int, float):  # Python's types promote as their (weak) scalars do
        return dtype_of(value())
    if isinstance(value, (np.ndarray, np.generic)):
        return DType(dtype_argument(value.dtype, function))
    return DType(dtype_argument(_numpy_dtype(value, function), function))


def result_type(*args) -> np.dtype:
    """The dtype JAX's promotion gives ``args`` (arrays, dtypes or Python scalars)."""
    if not args:
        raise ValueError("result_type: at least one array or dtype is required")
    promoted = promote_all([_argument_dtype(value, "result_type") for value in args], x64())
    return to_numpy(promoted.name)


def promote_types(a, b) -> np.dtype:
    """The dtype two dtypes promote to on JAX's lattice. As in JAX the dtypes are not
    canonicalised (``promote_types(bool, float64)`` is float64 even without x64); only the
    int64 that an unsigned and a signed 32-bit int meet at is int32 without x64."""
    names = [_lattice_name(value) for value in (a, b)]
    # as JAX: the Python types int, float and complex are weak (``promote_types('uint8', int)`` is uint8)
    weak = [any(value is kind for kind in _PYTHON_TYPES) for value in (a, b)]
    promoted = promote(DType(names[0], weak[0]), DType(names[1], weak[1]), True).name
    if promoted == "i64" and not x64() and "i64" not in names and "u64" not in names:
        promoted = "i32"
    return to_numpy(promoted)


_PYTHON_TYPES = (int, float, complex)


def _lattice_name(value) -> str:
    numpy_dtype = _numpy_dtype(value, "promote_types")
    try:
        return from_numpy(numpy_dtype)
    except TypeError as error:
        raise TypeError(f"promote_types: {error}") from None


def can_cast(from_, to, casting: str = "safe") -> bool:
    """Whether ``from_`` (a dtype or array) converts to the dtype ``to`` under numpy's
    ``casting`` rule."""
    return bool(np.can_cast(_numpy_dtype(from_, "can_cast"), _numpy_dtype(to, "can_cast"), casting))


def isdtype(dtype, kind) -> bool:
    """Whether ``dtype`` is of ``kind``: a dtype, one of the standard's kind names ("bool",
    "signed integer", "unsigned integer", "integral", "real floating", "complex floating",
    "numeric") or a tuple of those."""
    target = _numpy_dtype(dtype, "isdtype")
    for entry in kind if isinstance(kind, tuple) else (kind,):
        if isinstance(entry, str):
            if entry not in _KINDS:
                raise ValueError(f"isdtype: unknown kind {entry!r}; expected a dtype or one of {', '.join(_KINDS)}")
            if _kind_letter(target) in _KINDS[entry]:
                return True
        elif target == _numpy_dtype(entry, "isdtype"):
            return True
    return False


def iinfo(int_type) -> np.iinfo:
    """Machine limits of an integer dtype (or an integer array's dtype)."""
    numpy_dtype = _numpy_dtype(int_type, "iinfo")
    if numpy_dtype.kind not in "iu":
        raise ValueError(f"iinfo: expected an integer dtype, got {numpy_dtype}")
    return np.iinfo(numpy_dtype)


class finfo:  # noqa: N801 - jax.numpy's and the standard's name
    """Machine limits of a floating dtype (or a float array's dtype): ml_dtypes' ``finfo``
    (numpy's, extended to bfloat16, as JAX's) with ``eps max min smallest_normal tiny`` as
    Python floats, as the standard asks."""

    def __init__(self, dtype):
        numpy_dtype = _numpy_dtype(dtype, "finfo")
        if _kind_letter(numpy_dtype) not in "fc":
            raise ValueError(f"finfo: expected a floating dtype, got {numpy_dtype}")
        self._info = ml_dtypes.finfo(numpy_dtype)
        self.dtype = self._info.dtype
        self.bits = int(self._info.bits)
        for name in ("eps", "epsneg", "max", "min", "smallest_normal", "smallest_subnormal", "tiny", "resolution"):
            setattr(self, name, float(getattr(self._info, name)))

    def __getattr__(self, name: str):
        # numpy's other fields (nmant, nexp, machep, precision, ...) as numpy gives them
        return getattr(self.__dict__["_info"], name)

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution}, min={self.min}, max={self.max}, "
                f"dtype={self.dtype})")
