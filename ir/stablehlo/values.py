"""StableHLO attribute values as Python values: tensor types, int lists (``[1, 2]``,
``array<i64: 1, 2>``, ``dense<...> : tensor<...>``), constants, and Shardy's meshes and
shardings (whose syntax is meshjit's own)."""

from __future__ import annotations

import re

import numpy as np
from lark import Token

from ..dtypes import DTYPES, kind_of, to_numpy
from ..parser_syntax import ParseError
from ..sharding import AxisRef, DimSharding, MeshAttr, TensorSharding
from ..types import TensorType
from .syntax import Group, is_token, position, render, split_commas

# MLIR element types and the IR's names for them.
ELEMENT_TYPES = {"i1": "bool", "i8": "i8", "i16": "i16", "i32": "i32", "i64": "i64", "ui8": "u8", "ui16": "u16",
                 "ui32": "u32", "ui64": "u64", "f32": "f32", "f64": "f64", "f16": "f16", "bf16": "bf16", "complex<f32>": "c64",
                 "complex<f64>": "c128"}
_TENSOR = re.compile(r"tensor<((?:[0-9]+x)*)([a-z][a-z0-9]*|complex<[a-z0-9]+>)>\Z")


def fail(message: str, where) -> ParseError:
    line, column = position(where)
    raise ParseError(message, line, column)


def tensor_type(token: Token) -> TensorType:
    """``tensor<8x16xf32>`` as ``f32[8,16]``; an element type the IR lacks is a ParseError."""
    match = _TENSOR.match(str(token))
    if match is None:
        fail(f"cannot read the type {str(token)!r} (dynamic or encoded tensor types are not supported)", token)
    dims, element = match.groups()
    dtype = ELEMENT_TYPES.get(element)
    if dtype is None:
        fail(f"element type {element} is not supported: meshjit has {', '.join(DTYPES)} "
             f"({', '.join(ELEMENT_TYPES)} in StableHLO)", token)
    return TensorType(tuple(int(size) for size in dims.split("x") if size), dtype)


def _number(token, where) -> int:
    if not is_token(token, "INT"):
        fail(f"expected an integer, found {render(token)!r}", where)
    return int(token)


def int_list(value: tuple, where) -> tuple[int, ...]:
    """``[1, 2]``, ``array<i64: 1, 2>`` or ``dense<[1, 2]> : tensor<2xi64>`` as a tuple of ints."""
    if not value:
        fail("expected a list of integers", where)
    first = value[0]
    if isinstance(first, Group) and first.kind == "bracket":
        return tuple(_number(item, first) for item in first.items if not is_token(item, "PUNCT", ","))
    if is_token(first, "WORD", "array") and len(value) > 1 and isinstance(value[1], Group):
        items = value[1].items
        colon = next((index for index, item in enumerate(items) if is_token(item, "PUNCT", ":")), None)
        numbers = items[colon + 1:] if colon is not None else ()
        return tuple(_number(item, value[1]) for item in numbers if not is_token(item, "PUNCT", ","))
    if is_token(first, "WORD", "dense"):
        return tuple(int(x) for x in dense_array(value, where).reshape(-1))
    fail(f"expected a list of integers, found {' '.join(render(item) for item in value)!r}", where)


def single_int(value: tuple, where) -> int:
    return _number(value[0] if value else None, where)


def dense_array(value: tuple, where) -> np.ndarray:
    """``dense<...> : tensor<...>`` (the value items of an attribute or a constant op)."""
    if len(value) < 4 or not is_token(value[0], "WORD", "dense") or not isinstance(value[1], Group) \
            or not is_token(value[2], "PUNCT", ":") or not is_token(value[3], "TENSOR"):
        fail("expected a constant such as dense<1.0> : tensor<f32>", where)
    type_ = tensor_type(value[3])
    dtype = to_numpy(type_.dtype)
    items = value[1].items
    if len(items) == 1 and is_token(items[0], "STRING"):
        data = bytes.fromhex(str(items[0])[1:-1].removeprefix("0x"))
        flat = np.frombuffer(data, dtype=dtype)
        if flat.size == 1:
            return np.full(type_.shape, flat[0], dtype)
        return flat.reshape(type_.shape).copy()
    nested = _elements(items[0] if len(items) == 1 else Group("bracket", items, *position(value[1])), dtype)
    array = np.array(nested, dtype=dtype)
    if array.ndim == 0:
        return np.full(type_.shape, array, dtype)
    if array.shape != type_.shape:
        fail(f"the constant has shape {list(array.shape)} but its type is {type_}", value[1])
    return array


def _elements(item, dtype: np.dtype):
    if isinstance(item, Group) and item.kind == "paren" and dtype.kind == "c":
        # a complex element: (real, imaginary), each read as the parts' float type
        part_type = np.zeros((), dtype).real.dtype
        parts = [_elements(child, part_type) for child in item.items if not is_token(child, "PUNCT", ",")]
        if len(parts) != 2:
            fail(f"a complex element has two parts, (real, imaginary), found {render(item)!r}", item)
        return complex(parts[0], parts[1])
    if isinstance(item, Group) and item.kind == "bracket":
        return [_elements(child, dtype) for child in item.items if not is_token(child, "PUNCT", ",")]
    text = str(item)
    if is_token(item, "HEX"):
        bits = int(text, 16)
        if kind_of(dtype) == "f":
            unsigned = np.uint32 if dtype.itemsize == 4 else np.uint64
            return unsigned(bits).view(dtype)
        return dtype.type(bits)
    if is_token(item, "WORD") and text in ("true", "false"):
        return text == "true"
    if is_token(item, "INT") or is_token(item, "FLOAT"):
        return float(text) if kind_of(dtype) == "f" else int(float(text)) if "." in text else int(text)
    fail(f"cannot read the constant element {render(item)!r}", item)


# --- Shardy ----------------------------------------------------------------------------------


def _strip(items) -> list:
    return [item for item in items if not is_token(item, "PUNCT", ",")]


def sdy_mesh(value: tuple, where) -> MeshAttr:
    """``<["x"=2, "y"=4]>`` or ``<["x"=2], device_ids=[1, 0]>``."""
    group = value[0] if value else None
    if not isinstance(group, Group) or group.kind != "angle" or not group.items:
        fail("expected a mesh such as <[\"x\"=2, \"y\"=4]>", where)
    axes_group = group.items[0]
    axes, items = [], list(axes_group.items)
    for index in range(0, len(items), 4):
        name, equals, size = items[index:index + 3]
        if not is_token(name, "STRING") or not is_token(equals, "PUNCT", "="):
            fail("expected mesh axes such as \"x\"=2", name)
        axes.append((str(name)[1:-1], _number(size, size)))
    device_ids = None
    rest = group.items[1:]
    for index, item in enumerate(rest):
        if is_token(item, "WORD", "device_ids"):
            device_ids = tuple(_number(number, item) for number in _strip(rest[index + 2].items))
    try:
        return MeshAttr(tuple(axes), device_ids)
    except ValueError as error:
        fail(str(error), where)


def _axis(items, where) -> AxisRef:
    name = items[0]
    if not is_token(name, "STRING"):
        fail(f"expected a mesh axis name, found {render(name)!r}", where)
    if len(items) == 1:
        return AxisRef(str(name)[1:-1])
    # "x":(1)2
    pre = _number(items[2].items[0], where)
    return AxisRef(str(name)[1:-1], pre, _number(items[3], where))


def _dim(group: Group, priority) -> DimSharding:
    parts = split_commas(group.items)
    is_closed = not (parts and is_token(parts[-1][0], "PUNCT", "?"))
    axes = tuple(_axis(part, group) for part in (parts if is_closed else parts[:-1]))
    return DimSharding(axes, is_closed, priority)


def sdy_sharding(group: Group) -> TensorSharding:
    """``<@mesh, [{"x"}, {}, {"y", ?}p1], replicated={"z"}>`` as a TensorSharding."""
    items = group.items
    if not items or not is_token(items[0], "SYMBOL"):
        fail("expected a sharding such as <@mesh, [{\"x\"}, {}]> (an inline mesh is not supported)", group)
    mesh_name = str(items[0])[1:].strip('"')
    dims_group = items[2]
    dims, members = [], list(dims_group.items)
    index = 0
    while index < len(members):
        member = members[index]
        if isinstance(member, Group) and member.kind == "brace":
            priority = None
            if index + 1 < len(members) and is_token(members[index + 1], "WORD") \
                    and re.fullmatch(r"p[0-9]+", str(members[index + 1])):
                priority = int(str(members[index + 1])[1:])
                index += 1
            dims.append(_dim(member, priority))
        index += 1
    fields = {}
    for index, item in enumerate(items[3:], start=3):
        if is_token(item, "WORD") and index + 2 < len(items) and isinstance(items[index + 2], Group):
            fields[str(item)] = (str(item), tuple(_axis(part, item) for part in split_commas(items[index + 2].items)))
    unreduced_name = next((name for name in fields if name.startswith("unreduced")), "unreduced")
    return TensorSharding(mesh_name, tuple(dims), fields.get("replicated", ("", ()))[1],
                          fields.get(unreduced_name, ("", ()))[1],
                          "sum" if unreduced_name == "unreduced" else unreduced_name.removeprefix("unreduced_"))


def sharding_attr(value: tuple, where) -> TensorSharding:
    """``#sdy.sharding<...>`` (an argument or result attribute) or a bare ``<...>``."""
    for item in value:
        if isinstance(item, Group) and item.kind == "angle":
            return sdy_sharding(item)
    fail("expected a sharding such as #sdy.sharding<@mesh, [{\"x\"}, {}]>", where)
