"""Op-table rows of complex numbers: the part ops (complex, real, imag, conj) and the complex
cases of the arithmetic that takes complex operands (add, sub, mul, div, neg, sign, square,
abs), with Python's complex arithmetic as the oracle (in float64, rounded once)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from op_oracles import NUMPY_DTYPES, elementwise
from op_records import FLOAT, SHAPES, Bad, Case, OpRecord, dtype_error, random_array, same_shapes

COMPLEX = ("c64", "c128")
_PARTS = {"c64": "f32", "c128": "f64"}


def complex_array(rng, shape, dtype: str) -> np.ndarray:
    """Real and imaginary parts drawn as the table draws floats (NaN, infinities, signed zeros)."""
    part = _PARTS[dtype]
    values = random_array(rng, shape, part).astype(NUMPY_DTYPES[dtype])
    values.imag = random_array(rng, shape, part)
    return values


def complex_operands(rng, shapes, dtype, attrs=None):
    if dtype in COMPLEX:
        return [complex_array(rng, shape, dtype) for shape in shapes]
    return [random_array(rng, shape, dtype) for shape in shapes]


def _finite(function):
    """An oracle of finite arguments; a NaN or infinite part makes the result NaN + NaN i
    (the table compares NaNs only in finite cases, see ``_nan_free``)."""
    def scalar(*values):
        if not all(math.isfinite(value.real) and math.isfinite(value.imag) for value in values):
            return complex(math.nan, math.nan)
        try:
            return function(*values)
        except (ZeroDivisionError, OverflowError):
            return complex(math.nan, math.nan)

    return scalar


def _sign(z):
    return 0j if z == 0 else z / abs(z)


def _complex_oracle(attrs, real, imaginary):
    return (elementwise(complex, {np.dtype(np.float32): np.complex64, np.dtype(np.float64): np.complex128}[real.dtype])
            (attrs, real, imaginary)[0],)


def _part_oracle(function):
    def oracle(attrs, z):
        return (np.array([function(value) for value in z.ravel().tolist()], _PARTS_NUMPY[z.dtype]).reshape(z.shape),)

    return oracle


_PARTS_NUMPY = {np.dtype(np.complex64): np.float32, np.dtype(np.complex128): np.float64}

COMPLEX_RECORDS = [
    OpRecord("complex", FLOAT, same_shapes(2), _complex_oracle,
             (Bad("f32[2] f64[2]", {}, "complex: real and imaginary parts must have equal types"),
              dtype_error("complex", "i32", FLOAT, "i32[2] i32[2]"))),
    OpRecord("real", COMPLEX, same_shapes(1), _part_oracle(lambda z: z.real),
             (Bad("f32[2]", {}, "real: operand 0 has dtype f32, expected c64 or c128"),)),
    OpRecord("imag", COMPLEX, same_shapes(1), _part_oracle(lambda z: z.imag),
             (Bad("f32[2]", {}, "imag: operand 0 has dtype f32, expected c64 or c128"),)),
    OpRecord("conj", COMPLEX, same_shapes(1), elementwise(lambda z: z.conjugate()),
             (Bad("f64[2]", {}, "conj: operand 0 has dtype f64, expected c64 or c128"),), make=complex_operands),
]
COMPLEX_RECORDS[1] = dataclasses.replace(COMPLEX_RECORDS[1], make=complex_operands)
COMPLEX_RECORDS[2] = dataclasses.replace(COMPLEX_RECORDS[2], make=complex_operands)

# The arithmetic ops' complex cases: their oracle on complex values, and whether it is exact.
ARITHMETIC = {
    "add": (2, lambda x, y: x + y),
    "sub": (2, lambda x, y: x - y),
    "mul": (2, _finite(lambda x, y: x * y)),
    "div": (2, _finite(lambda x, y: x / y)),
    "neg": (1, lambda x: -x),
    "square": (1, _finite(lambda x: x * x)),
    "sign": (1, _finite(_sign)),
}


def _finite_complex_operands(rng, shapes, dtype, attrs=None):
    """Finite parts for the inexact ops, whose NaN and infinity cases XLA and C99 spell apart."""
    arrays = complex_operands(rng, shapes, dtype, attrs)
    return [np.where(np.isfinite(array), array, 1.5 - 0.5j).astype(array.dtype) for array in arrays]


def with_complex_cases(record: OpRecord) -> OpRecord:
    """``record`` with the complex cases of its op added: oracle and operands by dtype kind."""
    count, scalar = ARITHMETIC[record.name] if record.name in ARITHMETIC else (1, abs)
    complex_oracle = elementwise(scalar) if record.name != "abs" else _part_oracle(abs)
    real_oracle, real_make = record.oracle, record.make

    def oracle(attrs, *arrays):
        return complex_oracle(attrs, *arrays) if arrays[0].dtype.kind == "c" else real_oracle(attrs, *arrays)

    def make(rng, shapes, dtype, attrs=None):
        if dtype in COMPLEX:
            return _finite_complex_operands(rng, shapes, dtype, attrs)
        return real_make(rng, shapes, dtype, attrs)

    cases = tuple(Case({}, (shape,) * count, dtypes=COMPLEX) for shape in SHAPES)
    bad = tuple(_with_complex_in_message(entry) for entry in record.bad)
    return dataclasses.replace(record, cases=record.cases + cases, oracle=oracle, make=make, bad=bad)


def _with_complex_in_message(entry: Bad) -> Bad:
    """The ops now also accept c64 and c128: their dtype errors list them."""
    if "has dtype" not in entry.message or "or f64" not in entry.message:
        return entry
    return dataclasses.replace(entry, message=entry.message.replace("or f64", "or f64 or c64 or c128"))


COMPLEX_CAPABLE = tuple(ARITHMETIC) + ("abs",)
