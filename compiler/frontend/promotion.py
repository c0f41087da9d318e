"""JAX's dtype promotion over the IR's dtypes, with weakly typed Python scalars.

The lattice is bool < ints < floats; within a kind the wider type wins; any float beats any
int (i64 + f32 is f32, unlike numpy). Unsigned meets signed as JAX's lattice says: a wider
signed int wins, else the signed int twice the unsigned one's width (u8 with i8 is i16, u32
with i32 is i64, held in i32 without x64), and u64 with a signed int is the default float; f16
with bf16 is f32. A weak type (a
Python scalar) takes the other operand's type within its kind, so ``x_f32 * 2.0`` stays f32 and
``x_i32 + 1`` stays i32. Complex numbers sit above the floats: a float meets a complex type
at the complex type of the wider parts (f64 with c64 is c128), and a weak complex scalar (``1j``)
makes a float array complex of its own width.
"""

from __future__ import annotations

from dataclasses import dataclass

_INTS = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")
_FLOATS = ("f16", "bf16", "f32", "f64")
_KIND = {"bool": 0, **{name: 1 for name in _INTS}, **{name: 2 for name in _FLOATS}}
_WIDTH = {"bool": 1, **{name: int(name[1:]) for name in _INTS}, "f16": 16, "bf16": 16, "f32": 32, "f64": 64}
_UNSIGNED = ("u8", "u16", "u32", "u64")
_KIND.update(c64=3, c128=3)
_WIDTH.update(c64=32, c128=64)  # the width of the parts, comparable with the floats'
_COMPLEX_OF_WIDTH = {16: "c64", 32: "c64", 64: "c128"}  # f16 and bf16 meet complex at c64


@dataclass(frozen=True, slots=True)
class DType:
    """An IR dtype name plus JAX's weak-type flag."""

    name: str
    weak: bool = False


def default_int(x64: bool) -> str:
    return "i64" if x64 else "i32"


def default_float(x64: bool) -> str:
    return "f64" if x64 else "f32"


def default_complex(x64: bool) -> str:
    return "c128" if x64 else "c64"


def _default_of_kind(kind: int, x64: bool) -> str:
    return {1: default_int(x64), 2: default_float(x64), 3: default_complex(x64)}[kind]


def python_scalar_dtype(value, x64: bool) -> DType:
    """The weak dtype of a Python scalar (bool is strongly typed, as in JAX)."""
    if isinstance(value, bool):
        return DType("bool")
    if isinstance(value, int):
        return DType(default_int(x64), weak=True)
    if isinstance(value, float):
        return DType(default_float(x64), weak=True)
    if isinstance(value, complex):
        return DType(default_complex(x64), weak=True)
    raise TypeError(f"expected a Python bool, int, float or complex, got {type(value).__name__}: {value!r}")


def promote(first: DType, second: DType, x64: bool) -> DType:
    """The result dtype of a binary op on two operands, following JAX's promotion lattice."""
    if first == second:
        return first
    if first.weak and second.weak:
        kind = max(_KIND[first.name], _KIND[second.name])
        return DType(_default_of_kind(kind, x64), weak=True)
    if first.weak or second.weak:
        weak, strong = (first, second) if first.weak else (second, first)
        if _KIND[weak.name] <= _KIND[strong.name]:
            return DType(strong.name)
        if _KIND[weak.name] == 3 and _KIND[strong.name] == 2:
            return DType(_COMPLEX_OF_WIDTH[_WIDTH[strong.name]])  # 1j * x_f32 is c64
        # a weak float meets an int or bool: the default float, still weak (as JAX)
        return DType(_default_of_kind(_KIND[weak.name], x64), weak=True)
    kind_first, kind_second = _KIND[first.name], _KIND[second.name]
    if {kind_first, kind_second} == {2, 3}:
        return DType(_COMPLEX_OF_WIDTH[max(_WIDTH[first.name], _WIDTH[second.name])])
    if kind_first != kind_second:
        return first if kind_first > kind_second else second
    if kind_first == 1 and (first.name in _UNSIGNED) != (second.name in _UNSIGNED):
        return _mixed_signedness(first, second, x64)
    if _WIDTH[first.name] == _WIDTH[second.name]:
        return DType("f32")  # f16 with bf16: the narrowest float holding both (JAX, x64 on or off)
    return first if _WIDTH[first.name] > _WIDTH[second.name] else second


def _mixed_signedness(first: DType, second: DType, x64: bool) -> DType:
    unsigned, signed = (first, second) if first.name in _UNSIGNED else (second, first)
    if _WIDTH[signed.name] > _WIDTH[unsigned.name]:
        return signed
    if unsigned.name == "u64":
        return DType(default_float(x64))
    doubled = f"i{2 * _WIDTH[unsigned.name]}"
    return DType(default_int(x64) if doubled == "i64" else doubled)  # i64 is held in i32 without x64


def promote_all(dtypes, x64: bool) -> DType:
    dtypes = list(dtypes)
    if not dtypes:
        raise ValueError("promote_all needs at least one dtype")
    result = dtypes[0]
    for dtype in dtypes[1:]:
        result = promote(result, dtype, x64)
    return result


def is_float(name: str) -> bool:
    return _KIND[name] == 2


def is_int(name: str) -> bool:
    return _KIND[name] == 1


def is_complex(name: str) -> bool:
    return _KIND[name] == 3
