"""The op table's building blocks: the record types, the dtype and shape sets, and the operand
generators that the family tables (``op_table_*``) use."""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from meshjit.ir import MeshAttr, SymbolRef, TensorType
from op_oracles import NUMPY_DTYPES

# NOTE: u64 shares u32's code paths; it runs in the records of the ops that treat widths apart
# (shifts, convert, bitcast_convert_type) to keep the table's size in check.
ALL = ("bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "f32", "f64", "f16", "bf16")
FLOAT = ("f32", "f64", "f16", "bf16")
# The floats of complex numbers, transforms and LAPACK (no 16-bit forms, as in JAX).
WIDE_FLOAT = ("f32", "f64")
INT = ("i8", "i16", "i32", "i64", "u8", "u16", "u32")
EVERY_INT = INT + ("u64",)
NUMERIC = INT + FLOAT
BOOL_INT = ("bool",) + INT
SHAPES = ((), (0,), (5,), (2, 3), (3, 1, 2))

MESH = SymbolRef("mesh")
MESHES = {"mesh": MeshAttr((("x", 2), ("y", 4)))}


@dataclass(frozen=True)
class Case:
    """Attributes (a dict, or a function of the dtype) and one shape per operand.

    ``expected`` gives result types (``"{dtype}[2,3]"``) for ops without an oracle; ``dtypes``
    overrides the record's dtypes for this case.
    """

    attrs: dict | Callable
    shapes: tuple = ()
    expected: tuple[str, ...] = ()
    dtypes: tuple[str, ...] | None = None

    def attrs_for(self, dtype: str) -> dict:
        return self.attrs(dtype) if callable(self.attrs) else self.attrs


@dataclass(frozen=True)
class Bad:
    """A malformed use: operand types as text (``"f32[2,3] i32[]"``), attributes, and a fragment
    of the ShapeError message it must raise."""

    operands: str
    attrs: dict
    message: str


def parse_types(text: str) -> list[TensorType]:
    types = []
    for dtype, dims in re.findall(r"(\w+)\[([\d,]*)\]", text):
        types.append(TensorType(tuple(int(d) for d in dims.split(",") if d), dtype))
    return types


def instances(records):
    """Every (record, case, dtype) to run, with a stable id."""
    for record in records:
        for number, case in enumerate(record.cases):
            for dtype in case.dtypes or record.dtypes:
                yield record, case, dtype, f"{record.name}-{number}-{dtype}"


def rng_for(test_id: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(test_id.encode()))


# --- operand generators ----------------------------------------------------------------------

SPECIAL_FLOATS = (math.nan, math.inf, -math.inf, -0.0, 0.0, 0.5, -0.5, 2.5, -1.5)


def random_array(rng, shape, dtype: str, specials: bool = True) -> np.ndarray:
    size = math.prod(shape)
    numpy_dtype = NUMPY_DTYPES[dtype]
    if dtype == "bool":
        return (rng.random(size) < 0.5).reshape(shape)
    if dtype in EVERY_INT:
        info = np.iinfo(numpy_dtype)
        values = rng.integers(-6, 7, size).astype(numpy_dtype)
        # -1 for the signed types; the largest value twice for the unsigned ones
        choices = np.array([0, info.max if info.min == 0 else -1, 1, info.min, info.max], numpy_dtype)
    else:
        quarters = rng.integers(-12, 13, size) / 4
        values = np.where(rng.random(size) < 0.5, rng.normal(0, 2, size), quarters)
        values = values.astype(numpy_dtype)
        choices = np.array(SPECIAL_FLOATS, dtype=numpy_dtype)
    if specials:
        mask = rng.random(size) < 0.15
        values[mask] = rng.choice(choices, mask.sum())
    return values.reshape(shape)


def random_operands(rng, shapes, dtype, attrs=None):
    return [random_array(rng, shape, dtype) for shape in shapes]


def finite_operands(rng, shapes, dtype, attrs=None):
    return [random_array(rng, shape, dtype, specials=False) for shape in shapes]


def tied_operands(rng, shapes, dtype, attrs=None):
    """Few distinct values, so sorts and argmax meet ties (and NaNs for floats)."""
    pool = {"bool": [False, True], "u": [1, 0, 3], "i": [-2, 0, 3], "f": [-1.5, -0.0, 0.0, 2.0, math.nan]}
    values = np.array(pool["bool" if dtype == "bool" else "f" if dtype in FLOAT else dtype[0]], NUMPY_DTYPES[dtype])
    return [np.asarray(values[rng.integers(0, len(values), shape)]) for shape in shapes]


def select_operands(rng, shapes, dtype, attrs=None):
    return [random_array(rng, shapes[0], "bool")] + random_operands(rng, shapes[1:], dtype)


def shift_operands(rng, shapes, dtype, attrs=None):
    bits = NUMPY_DTYPES[dtype].itemsize * 8
    amounts = np.asarray(rng.integers(-2, bits + 3, shapes[1]), NUMPY_DTYPES[dtype])
    return [random_array(rng, shapes[0], dtype), amounts]


def with_start_indices(count: int):
    """``count`` operands of the dtype, then 0-d i32 start indices around the first's bounds."""

    def make(rng, shapes, dtype, attrs=None):
        arrays = random_operands(rng, shapes[:count], dtype)
        starts = [np.array(rng.integers(-2, size + 3), np.int32) for size in shapes[0]]
        return arrays + starts

    return make


@dataclass(frozen=True)
class OpRecord:
    name: str
    dtypes: tuple[str, ...]
    cases: tuple[Case, ...]
    oracle: Callable | None
    bad: tuple[Bad, ...]
    make: Callable = random_operands  # (rng, shapes, dtype, attrs) -> operands
    rtol: float | None = None  # None: 2e-6 for f32, 1e-12 for f64
    atol: float = 0.0
    signed_zeros: bool = False


def same_shapes(count: int, attrs=None, shapes=SHAPES) -> tuple[Case, ...]:
    return tuple(Case(attrs or {}, (shape,) * count) for shape in shapes)


# The IR's dtype sets behind the table's (which leave u64 out, see above).
_IR_SETS = {INT: EVERY_INT, NUMERIC: EVERY_INT + FLOAT, BOOL_INT: ("bool",) + EVERY_INT}


def dtype_error(op: str, dtype: str, allowed, operand_text: str, attrs=None) -> Bad:
    allowed = _IR_SETS.get(tuple(allowed), allowed)
    return Bad(
        operand_text,
        attrs or {},
        f"{op}: operand 0 has dtype {dtype}, expected {' or '.join(allowed)}",
    )


_NARROW = (NUMPY_DTYPES["f16"], NUMPY_DTYPES["bf16"])
# NOTE: two ulps for the 16-bit floats: integer_pow rounds after each multiply, as XLA does
_RTOL = {"float64": 1e-12, "complex128": 1e-12, "float16": 2e-3, "bfloat16": 1.6e-2}


def assert_results_match(actual, expected, record: OpRecord) -> None:
    """Same count, dtypes and shapes; ints and bools exactly, floats within the record's
    tolerance with NaNs in the same places (and zeros' signs when the record asks)."""
    assert isinstance(actual, tuple), f"{record.name} returned {type(actual).__name__}, not a tuple"
    assert len(actual) == len(expected)
    for index, (result, oracle) in enumerate(zip(actual, expected)):
        assert isinstance(result, np.ndarray), f"{record.name} result {index} is {type(result)}"
        assert result.dtype == oracle.dtype, (
            f"{record.name} result {index}: {result.dtype} != {oracle.dtype}"
        )
        assert result.shape == oracle.shape, (
            f"{record.name} result {index}: {result.shape} != {oracle.shape}"
        )
        rtol = record.rtol or _RTOL.get(str(result.dtype), 2e-6)
        if result.dtype in _NARROW:
            # computed in f32 and rounded once: within an ulp of the oracle's rounding
            rtol = max(rtol, _RTOL[str(result.dtype)])
            result, oracle = result.astype(np.float32), oracle.astype(np.float32)
        elif result.dtype.kind not in "fc":
            np.testing.assert_array_equal(result, oracle, err_msg=record.name)
            continue
        np.testing.assert_allclose(
            result, oracle, rtol=rtol, atol=record.atol, equal_nan=True, err_msg=record.name
        )
        if record.signed_zeros and result.dtype.kind == "f":
            numbers = ~np.isnan(oracle)
            np.testing.assert_array_equal(
                np.signbit(result[numbers]), np.signbit(oracle[numbers]), err_msg=record.name
            )
