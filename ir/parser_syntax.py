"""The parser's first pass: lark's tree becomes plain records (types, attribute values, shardings,
ops, regions) that keep their tokens' positions. Nothing here resolves names; ``parser`` does."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import NoReturn

from lark import Token, Transformer

from .core import SymbolRef
from .dense_text import DenseTextError, parse_dense
from .dtypes import DTYPES
from .sharding import AxisRef, DimSharding, MeshAttr, TensorSharding
from .types import TensorType


class ParseError(ValueError):
    """Malformed IR text: ``line`` and ``column`` (1-based) locate the offending token."""

    def __init__(self, message: str, line: int, column: int, source_line: str | None = None):
        super().__init__(message, line, column)
        self.message = message
        self.line = line
        self.column = column
        self.source_line = source_line

    def __str__(self) -> str:
        text = f"line {self.line}, column {self.column}: {self.message}"
        if self.source_line is None:
            return text
        return f"{text}\n  {self.source_line}\n  {' ' * (self.column - 1)}^"


def fail(message: str, where) -> NoReturn:
    """Raise ParseError at ``where``: a token, or a record with ``line`` and ``column``."""
    raise ParseError(message, getattr(where, "line", 1) or 1, getattr(where, "column", 1) or 1)


# --- records ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class MeshText:
    token: Token
    name: str
    mesh: MeshAttr


@dataclass(frozen=True)
class MeshAxisText:
    name: str
    size: int
    token: Token


@dataclass(frozen=True)
class AxisText:
    axis: AxisRef
    token: Token


@dataclass(frozen=True)
class ShardingText:
    """A sharding whose mesh and axis names are still to be checked against the module."""

    sharding: TensorSharding
    mesh_token: Token
    axes: tuple[AxisText, ...]


@dataclass(frozen=True)
class ArgumentText:
    token: Token
    type: TensorType
    sharding: ShardingText | None


@dataclass(frozen=True)
class ReturnText:
    token: Token
    values: tuple[Token, ...]


@dataclass(frozen=True)
class RegionText:
    label: Token
    arguments: tuple[ArgumentText, ...]
    ops: tuple[OpText, ...]
    returned: ReturnText


@dataclass(frozen=True)
class OpText:
    results: tuple[Token, ...]
    name: str
    name_token: Token
    operands: tuple[Token, ...]
    attrs: tuple[tuple[Token, object], ...]
    regions: tuple[RegionText, ...]
    types: tuple[tuple[TensorType, ShardingText | None], ...]
    location: str | None


@dataclass(frozen=True)
class FuncText:
    token: Token
    name: str
    arguments: tuple[ArgumentText, ...]
    results: tuple[tuple[TensorType, ShardingText | None], ...]
    attrs: tuple[tuple[Token, object], ...]
    ops: tuple[OpText, ...]
    returned: ReturnText


@dataclass(frozen=True)
class DenseList:
    items: tuple
    line: int
    column: int

    def __str__(self) -> str:
        return "a list"


_SHARDING_FIELDS = ("replicated", "unreduced", "unreduced_max", "unreduced_min")
_VALUE_KINDS = "a number, a string, true/false, @symbol, [list], a type, <sharding> or dense<...>"


def _present(children) -> list:
    """The children without lark's placeholder for an empty optional list."""
    return [child for child in children if child is not None]


def decode_string(token: Token) -> str:
    try:
        return json.loads(token, strict=False)
    except ValueError as error:
        fail(f"malformed string literal {token}: {error.msg}", token)


def decode_symbol(token: Token) -> str:
    text = token[1:]
    return (
        decode_string(Token("STRING", text, line=token.line, column=token.column))
        if text.startswith('"')
        else text
    )


def _positive(token: Token, what: str) -> int:
    value = int(token)
    if value < 1:
        fail(f"{what} must be a positive integer, got {value}", token)
    return value


# --- the transformer -------------------------------------------------------------------------


class SyntaxBuilder(Transformer):
    """Turns each grammar rule into the records above; a method per rule, named after it."""

    def start(self, children):
        return children

    # meshes

    def mesh_axis(self, children):
        name, size = children
        return MeshAxisText(decode_string(name), _positive(size, "a mesh axis size"), name)

    def mesh_option(self, children):
        name, *ids = children
        if name != "device_ids":
            fail(f"unknown mesh option {str(name)!r}; expected device_ids", name)
        return name, tuple(int(token) for token in _present(ids))

    def mesh_def(self, children):
        symbol, *rest = children
        axes = [child for child in rest if isinstance(child, MeshAxisText)]
        options = [child for child in rest if isinstance(child, tuple)]
        names = set()
        for axis in axes:
            if axis.name in names:
                fail(f"mesh axis {axis.name!r} is declared twice", axis.token)
            names.add(axis.name)
        if len(options) > 1:
            fail("device_ids is given twice", options[1][0])
        device_ids = options[0][1] if options else None
        try:
            mesh = MeshAttr(tuple((axis.name, axis.size) for axis in axes), device_ids)
        except ValueError as error:
            fail(str(error), options[0][0] if options else symbol)
        return MeshText(symbol, decode_symbol(symbol), mesh)

    # functions and ops

    def func_def(self, children):
        symbol, arguments, results, attrs, (ops, returned) = children
        return FuncText(
            symbol, decode_symbol(symbol), arguments, results, attrs or (), ops, returned
        )

    def arguments(self, children):
        return tuple(_present(children))

    def argument(self, children):
        token, type, attrs = children
        return ArgumentText(token, type, _only_sharding(attrs, "argument"))

    def func_results(self, children):
        return tuple(_present(children))

    def bare_func_result(self, children):
        return ((children[0], None),)

    def func_result(self, children):
        type, attrs = children
        return type, _only_sharding(attrs, "result")

    def func_attributes(self, children):
        return children[0]

    def body(self, children):
        *ops, returned = children
        return tuple(ops), returned

    def operation(self, children):
        results, (name, name_token), operands, attrs, regions, types, location = children
        return OpText(
            results or (), name, name_token, operands, attrs or (), regions or (), types, location
        )

    def op_results(self, children):
        return tuple(children)

    def operands(self, children):
        return tuple(_present(children))

    def op_name(self, children):
        token = children[0]
        return (decode_string(token) if token.type == "STRING" else str(token)), token

    def regions(self, children):
        return tuple(children)

    def region(self, children):
        label, arguments, *ops, returned = children
        return RegionText(label, arguments, tuple(ops), returned)

    def op_types(self, children):
        return tuple(children)

    def no_op_types(self, children):
        return ()

    def typed_result(self, children):
        return tuple(children)

    def return_stmt(self, children):
        token, *values = children
        return ReturnText(token, tuple(_present(values)))

    def location(self, children):
        _, file, *numbers = children
        for number in numbers:
            if int(number) < 0:
                fail(
                    f"line and column numbers in loc(...) must not be negative, got {number}",
                    number,
                )
        return decode_string(file) + "".join(f":{int(number)}" for number in numbers)

    # attributes

    def attr_dict(self, children):
        entries = _present(children)
        seen = set()
        for token, _ in entries:
            if str(token) in seen:
                fail(f"attribute {str(token)!r} is given twice", token)
            seen.add(str(token))
        return tuple(entries)

    def attr_entry(self, children):
        return tuple(children)

    def attr_name(self, children):
        token = children[0]
        name = decode_string(token) if token.type == "STRING" else str(token)
        return Token(token.type, name, line=token.line, column=token.column)

    def int_value(self, children):
        return int(children[0])

    def float_value(self, children):
        token = children[0]
        text = token.lstrip("-")
        if text == "nan":
            # NOTE: one NaN object, so that equal attributes compare equal by identity.
            return math.nan
        value = float(token)
        if math.isinf(value) and text != "inf":
            fail(f"float {token} is out of range", token)
        return value

    def string_value(self, children):
        return decode_string(children[0])

    def symbol_value(self, children):
        return SymbolRef(decode_symbol(children[0]))

    def word_value(self, children):
        token = children[0]
        if token in ("true", "false"):
            return token == "true"
        fail(f"expected an attribute value ({_VALUE_KINDS}), found {str(token)!r}", token)

    def list_value(self, children):
        return tuple(_present(children))

    def type(self, children):
        name, *sizes = children
        if name not in DTYPES:
            fail(f"unknown element type {str(name)!r}; expected one of {', '.join(DTYPES)}", name)
        for size in _present(sizes):
            if int(size) < 0:
                fail(f"dimension sizes must not be negative, got {size}", size)
        return TensorType(tuple(int(size) for size in _present(sizes)), str(name))

    # shardings

    def axis_ref(self, children):
        name, pre_size, size = children
        if pre_size is None:
            return AxisText(AxisRef(decode_string(name)), name)
        pre = _positive(pre_size, "a sub-axis pre-size")
        sub_size = None if size is None else _positive(size, "a sub-axis size")
        return AxisText(AxisRef(decode_string(name), pre, sub_size), name)

    def dim_sharding(self, children):
        *entries, priority = children
        entries = _present(entries)
        axes = [entry for entry in entries if isinstance(entry, AxisText)]
        for entry in entries[:-1]:
            if not isinstance(entry, AxisText):
                fail("'?' (an open dim) must come last in a dim, and only once", entry)
        is_closed = not entries or isinstance(entries[-1], AxisText)
        rank = None if priority is None else int(priority[1:])
        return DimSharding(tuple(axis.axis for axis in axes), is_closed, rank), tuple(axes)

    def sharding_option(self, children):
        name, *axes = children
        if name not in _SHARDING_FIELDS:
            fail(
                f"unknown sharding field {str(name)!r}; "
                f"expected one of {', '.join(_SHARDING_FIELDS)}",
                name,
            )
        return name, tuple(_present(axes))

    def sharding(self, children):
        symbol, *rest = children
        dims = [child for child in _present(rest) if isinstance(child[0], DimSharding)]
        fields = {}
        for name, axes in (child for child in _present(rest) if isinstance(child[0], Token)):
            group = "unreduced" if name.startswith("unreduced") else str(name)
            if group in fields:
                fail(f"sharding field {group} is given twice", name)
            fields[group] = (name, axes)
        replicated = fields.get("replicated", (None, ()))[1]
        unreduced_name, unreduced = fields.get("unreduced", (Token("NAME", "unreduced"), ()))
        sharding = TensorSharding(
            decode_symbol(symbol),
            tuple(dim for dim, _ in dims),
            tuple(axis.axis for axis in replicated),
            tuple(axis.axis for axis in unreduced),
            "sum" if unreduced_name == "unreduced" else unreduced_name.removeprefix("unreduced_"),
        )
        axes = tuple(axis for _, dim_axes in dims for axis in dim_axes) + replicated + unreduced
        return ShardingText(sharding, symbol, axes)

    # dense constants

    def dense(self, children):
        body, type = children
        try:
            return parse_dense(body, type, lambda node: isinstance(node, DenseList))
        except DenseTextError as error:
            fail(str(error), error.where)

    def dense_list(self, children):
        bracket, *items, _ = children
        elements = (item for item in _present(items) if getattr(item, "type", None) != "COMMA")
        return DenseList(tuple(elements), bracket.line, bracket.column)

    def dense_bytes(self, children):
        return children[0]

    def dense_scalar(self, children):
        return children[0]


def _only_sharding(attrs, what: str) -> ShardingText | None:
    """A function argument or result takes one attribute, its sharding."""
    sharding = None
    for token, value in attrs or ():
        if token != "sharding":
            fail(f"unknown {what} attribute {str(token)!r}; only 'sharding' is allowed", token)
        if not isinstance(value, ShardingText):
            fail(f"the {what} sharding must look like <@mesh, [{{...}}, ...]>", token)
        sharding = value
    return sharding
