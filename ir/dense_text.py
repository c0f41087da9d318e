"""The text form of dense constants, shared by the printer and the parser.

Small constants print as nested lists whose float elements keep their exact bits (a decimal that
reads back to the same bits, else the bits in hex); large ones print as a hex byte string. A
complex element prints as the pair ``[real, imaginary]`` (one more list level).
"""

from __future__ import annotations

import math

import numpy as np

from .core import DenseAttr
from .dtypes import COMPONENT_DTYPE, is_int, to_numpy
from .types import TensorType

# NOTE: constants with more list entries than this print as one hex byte string.
MAX_LISTED_ELEMENTS = 64

# Unsigned integer views of the float types, for reading and writing exact bits.
_BITS = {"f16": np.dtype(np.uint16), "bf16": np.dtype(np.uint16), "f32": np.dtype(np.uint32),
         "f64": np.dtype(np.uint64)}


class DenseTextError(ValueError):
    """A dense constant's text is malformed; ``where`` is the offending token or list."""

    def __init__(self, message: str, where):
        super().__init__(message)
        self.where = where


def format_dense(attr: DenseAttr) -> str:
    """``dense<[[1.0, 2.0], [3.0, 4.0]]> : f32[2,2]`` or ``dense<"0x...">`` for large ones."""
    array = attr.array
    if _list_entries(attr.type.shape) > MAX_LISTED_ELEMENTS:
        little_endian = array.astype(array.dtype.newbyteorder("<"), copy=False)
        body = '"0x' + little_endian.tobytes().hex().upper() + '"'
    elif attr.type.dtype in COMPONENT_DTYPE:
        parts = np.stack([array.real, array.imag], axis=-1)
        elements = [format_element(element, COMPONENT_DTYPE[attr.type.dtype]) for element in parts.ravel()]
        body = _nest(elements, attr.type.shape + (2,))
    else:
        elements = [format_element(element, attr.type.dtype) for element in array.ravel()]
        body = _nest(elements, attr.type.shape)
    return f"dense<{body}> : {attr.type}"


def _list_entries(shape) -> int:
    """How many scalars and lists the nested form would print (zero-size dims included)."""
    entries, rows = 0, 1
    for size in shape:
        rows *= size
        entries += rows
        if rows == 0:
            break
    return max(entries, 1)


def _nest(elements: list[str], shape) -> str:
    if not shape:
        return elements[0]
    if len(shape) == 1:
        return "[" + ", ".join(elements) + "]"
    chunk = math.prod(shape[1:])
    rows = (_nest(elements[row * chunk : (row + 1) * chunk], shape[1:]) for row in range(shape[0]))
    return "[" + ", ".join(rows) + "]"


def format_element(element, dtype: str) -> str:
    """One element of a constant; floats are given by their bits so that none are lost."""
    if dtype == "bool":
        return "true" if element else "false"
    if is_int(dtype):
        return str(int(element))
    bits = int(np.asarray(element, dtype=to_numpy(dtype)).view(_BITS[dtype]))
    return _format_float_bits(bits, dtype)


def _format_float_bits(bits: int, dtype: str) -> str:
    element = _float_from_bits(bits, dtype)
    if math.isinf(element):
        return "inf" if element > 0 else "-inf"
    if math.isnan(element):
        return "nan" if bits == _float_bits("nan", dtype) else _hex_bits(bits, dtype)
    # numpy's (and ml_dtypes') str of a narrow float and Python's repr of a float are short
    # round-tripping forms (checked below).
    text = repr(float(element)) if dtype == "f64" else str(element)
    if "." not in text and "e" not in text:
        text += ".0"
    return text if _float_bits(text, dtype) == bits else _hex_bits(bits, dtype)


def _hex_bits(bits: int, dtype: str) -> str:
    width = 2 * _BITS[dtype].itemsize
    return f"0x{bits:0{width}X}"


def _float_bits(text: str, dtype: str) -> int:
    """The bits of the ``dtype`` float that decimal ``text`` reads as."""
    with np.errstate(over="ignore"):
        element = to_numpy(dtype).type(float(text))
    return int(np.asarray(element).view(_BITS[dtype]))


def _float_from_bits(bits: int, dtype: str):
    return np.asarray(bits, dtype=_BITS[dtype]).view(to_numpy(dtype))[()]


# --- reading ---------------------------------------------------------------------------------


def parse_dense(body, type: TensorType, is_list) -> DenseAttr:
    """Build a constant from its parsed body: a scalar token, a nested list, or a byte string.

    ``is_list(node)`` tells nested lists (with ``.items``) from tokens (str with ``.type``).
    """
    if not is_list(body) and getattr(body, "type", None) == "STRING":
        return _parse_hex_bytes(body, type)
    flat: list = []
    if type.dtype in COMPONENT_DTYPE:  # [real, imaginary] pairs, each part a float's bits
        _flatten(body, type.shape + (2,), 0, flat, is_list)
        part = COMPONENT_DTYPE[type.dtype]
        values = [parse_element(token, part) for token in flat]
        array = np.array(values, dtype=_BITS[part]).view(to_numpy(part)).view(to_numpy(type.dtype))
        return DenseAttr(type, array.reshape(type.shape).tobytes())
    _flatten(body, type.shape, 0, flat, is_list)
    values = [parse_element(token, type.dtype) for token in flat]
    if type.dtype in _BITS:
        # Floats travel as their bits so that NaN payloads survive.
        array = np.array(values, dtype=_BITS[type.dtype]).view(to_numpy(type.dtype))
    else:
        array = np.array(values, dtype=to_numpy(type.dtype))
    return DenseAttr(type, array.reshape(type.shape).tobytes())


def _flatten(node, shape, depth: int, flat: list, is_list) -> None:
    if depth == len(shape):
        if is_list(node):
            raise DenseTextError(f"expected a scalar element at depth {depth}, found a list", node)
        flat.append(node)
        return
    if not is_list(node):
        raise DenseTextError(
            f"expected a list of {shape[depth]} elements for dim {depth}, found {node!s}", node
        )
    if len(node.items) != shape[depth]:
        raise DenseTextError(
            f"dim {depth} has size {shape[depth]} but this list has {len(node.items)} elements",
            node,
        )
    for item in node.items:
        _flatten(item, shape, depth + 1, flat, is_list)


def parse_element(token, dtype: str):
    """One element token (INT, FLOAT, HEX or NAME): a bool, an int, or a float's bits."""
    kind, text = token.type, str(token)
    if dtype == "bool":
        if kind == "NAME" and text in ("true", "false"):
            return text == "true"
        raise DenseTextError(f"expected true or false for a bool element, found {text!r}", token)
    if is_int(dtype):
        return _parse_int_element(token, dtype)
    if kind == "HEX":
        bits = int(text, 16)
        if bits >= 1 << (8 * _BITS[dtype].itemsize):
            raise DenseTextError(f"hex element {text} has more bits than {dtype}", token)
        return bits
    if kind not in ("INT", "FLOAT"):
        raise DenseTextError(f"expected a number for a {dtype} element, found {text!r}", token)
    bits = _float_bits(text, dtype)
    if math.isinf(_float_from_bits(bits, dtype)) and "inf" not in text:
        raise DenseTextError(f"element {text} is out of range for {dtype}", token)
    return bits


def _parse_int_element(token, dtype: str) -> int:
    if token.type != "INT":
        raise DenseTextError(f"expected an integer for an {dtype} element, found {token!s}", token)
    value = int(token)
    limits = np.iinfo(to_numpy(dtype))
    if not limits.min <= value <= limits.max:
        raise DenseTextError(f"element {value} does not fit {dtype}", token)
    return value


def _parse_hex_bytes(token, type: TensorType) -> DenseAttr:
    text = str(token)[1:-1]
    if not text.startswith("0x"):
        raise DenseTextError('a byte string constant must look like "0x0011..."', token)
    try:
        data = bytes.fromhex(text[2:])
    except ValueError:
        raise DenseTextError(
            "a byte string constant must hold an even number of hex digits", token
        ) from None
    dtype = to_numpy(type.dtype)
    if len(data) != type.size * dtype.itemsize:
        raise DenseTextError(
            f"{type} needs {type.size * dtype.itemsize} bytes but the constant has {len(data)}",
            token,
        )
    if type.dtype == "bool" and any(byte > 1 for byte in data):
        raise DenseTextError("bool constant bytes must be 00 or 01", token)
    array = np.frombuffer(data, dtype=dtype.newbyteorder("<")).astype(dtype)
    return DenseAttr(type, array.tobytes())
