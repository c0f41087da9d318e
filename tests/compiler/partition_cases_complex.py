"""The partitioner's op table rows for complex numbers and the fft op: complex arithmetic, the
part ops, contractions and reductions of complex values under the generic layouts (uneven
shapes included), and fft whose batch dims stay sharded while a sharded transform dim is
gathered (the cases pin the collectives)."""

from __future__ import annotations

from meshjit.ir.dtypes import to_numpy

from partition_cases import MATMUL, Case, Operand, record, normal


def complex_normal(rng, shape, dtype):
    """Standard normal real and imaginary parts (complex dtypes), else the table's normal."""
    if dtype not in ("c64", "c128"):
        return normal(rng, shape, dtype)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(to_numpy(dtype))


C = Operand("c64[8,6]", complex_normal)
C_UNEVEN = Operand("c64[6,10]", complex_normal)
F = "f32[8,6]"
B = "bool[8,6]"


def _fft(fft_type: str, lengths) -> dict:
    return {"fft_type": fft_type, "fft_lengths": tuple(lengths)}


def complex_records() -> list:
    records = [record(name, "c64", [C], samples=1) for name in ("neg", "abs", "sign", "square", "conj", "real", "imag")]
    records += [record(name, "c64", [C, C], samples=1) for name in ("add", "sub", "mul", "div")]
    records += [
        record("add", "c64_uneven", [C_UNEVEN, C_UNEVEN], samples=3),
        record("complex", "", [F, F], samples=2),
        record("select", "c64", [B, C, C], samples=1),
        record("compare", "c64_eq", [C, C], {"direction": "eq"}, samples=1),
        record("convert", "f32_to_c64", [F], {"new_dtype": "c64"}, samples=1),
        record("convert", "c64_to_f32", [C], {"new_dtype": "f32"}, samples=1),
        record("integer_pow", "c64_cube", [C], {"y": 3}, samples=1),
        record("dot_general", "c64", [C, Operand("c64[6,4]", complex_normal)], MATMUL,
               cases=[Case(("-,x", "x,-")), Case(("x,-", None)), Case(("-,xy", "xy,-"))], samples=3),
        record("reduce_sum", "c64", [C_UNEVEN], {"axes": (1,)}, samples=3),
        record("reduce_prod", "c64", [C], {"axes": (0,)}, samples=2),
        record("cumsum", "c64", [C], {"axis": 0, "reverse": False}, samples=2),
    ]
    return records


def fft_records() -> list:
    signal = Operand("c64[8,4,6]", complex_normal)
    return [
        # batch dim sharded: no communication; a transform dim sharded: gathered, once
        record("fft", "fft_last", [signal], _fft("FFT", (6,)),
               cases=[Case(("x,y,-",), collectives=()), Case(("-,-,x",), collectives=("all_gather",)),
                      Case(("x,-,y",), "x,-,-", collectives=("all_gather",))], samples=3),
        record("fft", "ifft_two", [signal], _fft("IFFT", (4, 6)),
               cases=[Case(("xy,-,-",), collectives=()), Case(("-,x,-",), collectives=("all_gather",))], samples=2),
        record("fft", "rfft", [Operand("f32[8,6]")], _fft("RFFT", (6,)),
               cases=[Case(("x,-",), collectives=())], samples=2),
        record("fft", "irfft", [Operand("c64[8,4]", complex_normal)], _fft("IRFFT", (6,)),
               cases=[Case(("-,x",), collectives=("all_gather",))], samples=2),
        record("fft", "uneven_batch", [Operand("c64[6,5]", complex_normal)], _fft("FFT", (5,)), samples=3),
    ]

