"""Op-table rows of complex numbers: the part ops (complex, real, imag, conj) and the complex
cases of the arithmetic that takes complex operands (add, sub, mul, div, neg, sign, square,
abs), with Python's complex arithmetic as the oracle (in float64, rounded once)."""

from __future__ import annotations

import cmath
import dataclasses
import math

import numpy as np
from op_oracles import NUMPY_DTYPES, elementwise
from op_records import WIDE_FLOAT, SHAPES, Bad, Case, OpRecord, dtype_error, random_array, random_operands, same_shapes

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
    OpRecord("complex", WIDE_FLOAT, same_shapes(2), _complex_oracle,
             (Bad("f32[2] f64[2]", {}, "complex: real and imaginary parts must have equal types"),
              dtype_error("complex", "i32", WIDE_FLOAT, "i32[2] i32[2]"))),
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
    # the complex types follow every real float in the message (the 16-bit ones included)
    last = "or bf16" if "or bf16" in entry.message else "or f64"
    return dataclasses.replace(entry, message=entry.message.replace(last, f"{last} or c64 or c128"))


COMPLEX_CAPABLE = tuple(ARITHMETIC) + ("abs",)


# --- fft: a direct DFT (cmath twiddles, matrix products) as the oracle, never numpy.fft -----------


def _dft_matrix(size: int, inverse: bool) -> np.ndarray:
    sign = 1 if inverse else -1
    matrix = np.array([[cmath.exp(sign * 2j * math.pi * j * k / size) for k in range(size)] for j in range(size)])
    matrix = matrix.reshape(size, size)
    return matrix / size if inverse else matrix


def _dft(values: np.ndarray, axes, inverse: bool) -> np.ndarray:
    for axis in axes:
        moved = np.moveaxis(values, axis, -1)
        values = np.moveaxis(moved @ _dft_matrix(moved.shape[-1], inverse).T, -1, axis)
    return values


def _fft_oracle(attrs, operand):
    fft_type, lengths = attrs["fft_type"], tuple(attrs["fft_lengths"])
    axes = tuple(range(operand.ndim - len(lengths), operand.ndim))
    wide = operand.astype(np.complex128)
    if 0 in lengths:  # an empty transform: zeros of the result's shape (IRFFT's last dim is 0)
        real_result = fft_type == "IRFFT"
        shape = operand.shape[: operand.ndim - len(lengths)] + lengths if real_result else operand.shape
        if fft_type == "RFFT":
            shape = operand.shape[:-1] + (lengths[-1] // 2 + 1,)
        dtype = _PARTS_NUMPY[operand.dtype] if real_result else COMPLEX_NUMPY_OF.get(operand.dtype, operand.dtype)
        return (np.zeros(shape, dtype),)
    if fft_type in ("FFT", "IFFT"):
        return (_dft(wide, axes, fft_type == "IFFT").astype(operand.dtype),)
    if fft_type == "RFFT":
        full = _dft(wide, axes, False)
        return (full[..., : lengths[-1] // 2 + 1].astype(COMPLEX_NUMPY_OF[operand.dtype]),)
    # IRFFT: the other transform dims first, then the last one from its Hermitian half
    partial = _dft(wide, axes[:-1], True)
    size = lengths[-1]
    full = np.zeros(partial.shape[:-1] + (size,), np.complex128)
    full[..., : size // 2 + 1] = partial[..., : size // 2 + 1]
    mirror = np.conj(partial[..., 1 : (size + 1) // 2])[..., ::-1]
    full[..., size // 2 + 1 :] = mirror
    full[..., 0] = full[..., 0].real
    if size % 2 == 0:
        full[..., size // 2] = full[..., size // 2].real
    return (_dft(full, (full.ndim - 1,), True).real.astype(_PARTS_NUMPY[operand.dtype]),)


COMPLEX_NUMPY_OF = {np.dtype(np.float32): np.complex64, np.dtype(np.float64): np.complex128}


def _fft_operands(rng, shapes, dtype, attrs=None):
    return _finite_complex_operands(rng, shapes, dtype) if dtype in COMPLEX else [
        np.nan_to_num(array, nan=0.5, posinf=2.0, neginf=-2.0) for array in random_operands(rng, shapes, dtype)]


def _fft_cases():
    cases = []
    for fft_type, dtypes in (("FFT", COMPLEX), ("IFFT", COMPLEX), ("RFFT", WIDE_FLOAT), ("IRFFT", COMPLEX)):
        for lengths, shape in (((5,), (3, 5)), ((4, 6), (2, 4, 6)), ((2, 3, 4), (2, 3, 4)), ((0,), (2, 0))):
            if fft_type == "IRFFT":
                shape = shape[:-1] + (lengths[-1] // 2 + 1,)
            cases.append(Case({"fft_type": fft_type, "fft_lengths": lengths}, (shape,), dtypes=dtypes))
    return tuple(cases)


COMPLEX_RECORDS.append(OpRecord(
    "fft", COMPLEX, _fft_cases(), _fft_oracle,
    (Bad("c64[4,5]", {"fft_type": "FFT", "fft_lengths": (4,)}, "FFT of fft_lengths [4] needs trailing dims [4], got c64[4,5]"),
     Bad("f32[8]", {"fft_type": "FFT", "fft_lengths": (8,)}, "fft: operand 0 has dtype f32, expected c64 or c128"),
     Bad("c64[8]", {"fft_type": "RFFT", "fft_lengths": (8,)}, "fft: operand 0 has dtype c64, expected f32 or f64"),
     Bad("c64[2,2,2,2]", {"fft_type": "FFT", "fft_lengths": (2, 2, 2, 2)}, "fft_lengths must name one to three trailing dims"),
     Bad("c64[8]", {"fft_type": "DCT", "fft_lengths": (8,)}, "attribute 'fft_type' must be one of")),
    make=_fft_operands, rtol=2e-5,
))
