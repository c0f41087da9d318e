"""Reads the text form of IR modules (``grammar.lark``) back into a Module.

Every malformed input raises ParseError with a line, a column, and what was expected and found;
names are resolved here: values in scope, meshes and their axes, function signatures.
"""

from __future__ import annotations

import functools
import re
from importlib import resources

from lark import Lark, Token
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from .core import Attrs, Block, Func, Module, Op, Value
from .parser_syntax import (
    FuncText,
    MeshText,
    OpText,
    ParseError,
    RegionText,
    ReturnText,
    ShardingText,
    SyntaxBuilder,
    fail,
)
from .sharding import MeshAttr, TensorSharding

__all__ = ["ParseError", "parse_module"]

# NOTE: deeper bracket nesting is refused up front, so that no later recursion can overflow.
MAX_NESTING = 100

_BRACKETS = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|[\[\]{}()]')
_TERMINAL_NAMES = {
    "NAME": "a name",
    "VALUE_ID": "a value name like %0",
    "SYMBOL": "a symbol like @main",
    "BLOCK_LABEL": "a block label like ^body",
    "STRING": "a string",
    "INT": "an integer",
    "FLOAT": "a float",
    "HEX": "a hex number",
    "PRIORITY": "a priority like p0",
    "$END": "end of input",
}


def parse_module(text: str | bytes) -> Module:
    """The module that ``text`` (str, or UTF-8 bytes) spells; raises ParseError if malformed."""
    text = _as_text(text)
    try:
        _check_nesting(text)
        items = _syntax_items(text)
        if not items:
            line, column = _end_position(text)
            raise ParseError(
                "empty module: expected 'mesh' or 'func', found end of input", line, column
            )
        return _ModuleBuilder(items).build()
    except ParseError as error:
        lines = text.splitlines()
        source_line = lines[error.line - 1] if 0 < error.line <= len(lines) else None
        raise ParseError(error.message, error.line, error.column, source_line) from None


def _as_text(text) -> str:
    if isinstance(text, str):
        return text
    if not isinstance(text, (bytes, bytearray, memoryview)):
        raise ParseError(
            f"expected the module text as str or bytes, got {type(text).__name__}", 1, 1
        )
    data = bytes(text)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        prefix = data[: error.start].decode("utf-8-sig")
        line, column = _end_position(prefix)
        raise ParseError(
            f"input is not UTF-8: byte 0x{data[error.start]:02x} is not valid here",
            line,
            column,
        ) from None


def _end_position(text: str) -> tuple[int, int]:
    """The (line, column) just after the last character of ``text``."""
    return text.count("\n") + 1, len(text) - text.rfind("\n")


def _check_nesting(text: str) -> None:
    depth = 0
    for match in _BRACKETS.finditer(text):
        bracket = match.group()
        if bracket in "([{":
            depth += 1
            if depth > MAX_NESTING:
                line, column = _end_position(text[: match.start()])
                raise ParseError(f"brackets nest deeper than {MAX_NESTING} levels", line, column)
        elif bracket in ")]}":
            depth = max(depth - 1, 0)


@functools.cache
def _lark() -> Lark:
    grammar = resources.files(__package__).joinpath("grammar.lark").read_text(encoding="utf-8")
    # NOTE: the transformer runs inside the LALR parser (no parse tree is built); it is
    # stateless, so one instance serves every parse.
    return Lark(grammar, parser="lalr", maybe_placeholders=True, transformer=SyntaxBuilder())


def _syntax_items(text: str) -> list:
    try:
        return _lark().parse(text)
    except ParseError:
        raise
    except UnexpectedInput as error:
        raise _lark_error(error, text) from None
    except (LarkError, RecursionError, ValueError, TypeError, LookupError) as error:
        # A safety net: every known problem is reported above with its position.
        raise ParseError(f"cannot read the input: {error}", 1, 1) from None


def _lark_error(error: UnexpectedInput, text: str) -> ParseError:
    line, column = error.line, error.column
    if isinstance(error, UnexpectedToken):
        token = error.token
        if token.type == "$END":
            line, column = _end_position(text)
            found = "end of input"
        else:
            found = repr(_shorten(str(token)))
        expected = error.accepts or error.expected
    elif isinstance(error, UnexpectedCharacters):
        character = text[error.pos_in_stream]
        if character == '"':
            return ParseError("unterminated string literal", line, column)
        found = f"character {character!r}"
        expected = error.allowed or ()
    else:
        found, expected = "unexpected input", ()
    message = f"expected {_describe_expected(expected)}, found {found}"
    return ParseError(message, max(line, 1), max(column, 1))


def _shorten(text: str) -> str:
    return text if len(text) <= 30 else text[:27] + "..."


def _describe_expected(names) -> str:
    descriptions = sorted({_describe_terminal(name) for name in names})
    if not descriptions:
        return "something else"
    if len(descriptions) == 1:
        return descriptions[0]
    return "one of " + ", ".join(descriptions)


def _describe_terminal(name: str) -> str:
    if name in _TERMINAL_NAMES:
        return _TERMINAL_NAMES[name]
    terminal = _lark().get_terminal(name)
    if terminal.pattern.type == "str":
        return repr(terminal.pattern.value)
    return name.lower()


# --- name resolution -------------------------------------------------------------------------


class _ModuleBuilder:
    def __init__(self, items: list):
        self.items = items
        self.meshes: dict[str, MeshAttr] = {}

    def build(self) -> Module:
        mesh_tokens: dict[str, object] = {}
        for item in self.items:
            if isinstance(item, MeshText):
                _check_unique(item.name, mesh_tokens, item.token, "mesh")
                self.meshes[item.name] = item.mesh
        funcs, func_tokens = [], {}
        for item in self.items:
            if isinstance(item, FuncText):
                _check_unique(item.name, func_tokens, item.token, "function")
                funcs.append(_FunctionBuilder(self.meshes).build(item))
        return Module(tuple(self.meshes.items()), tuple(funcs))


def _check_unique(name: str, seen: dict, token, what: str) -> None:
    if name in seen:
        first = seen[name]
        fail(
            f"{what} @{name} is defined twice (first at line {first.line}, column {first.column})",
            token,
        )
    seen[name] = token


class _FunctionBuilder:
    """Builds one function; value names are unique in the whole function, and every region body
    sees only its own arguments and values (bodies are isolated from above)."""

    def __init__(self, meshes: dict[str, MeshAttr]):
        self.meshes = meshes
        self.defined: dict[str, Token] = {}
        self.scopes: list[dict[str, Value]] = []

    def build(self, text: FuncText) -> Func:
        # Errors come out in textual order: the signature first, then the body.
        self.scopes.append({})
        arguments = tuple(self.define(argument.token, argument.type) for argument in text.arguments)
        arg_shardings = tuple(self.sharding(argument.sharding) for argument in text.arguments)
        result_shardings = tuple(self.sharding(sharding) for _, sharding in text.results)
        attrs = self.attrs(text.attrs)
        ops = tuple(self.operation(op) for op in text.ops)
        returns = self.returned(text.returned)
        self._check_signature(text, returns)
        self.scopes.pop()
        body = Block(arguments, ops, returns)
        return Func(text.name, body, arg_shardings, result_shardings, attrs)

    def _check_signature(self, text: FuncText, returns: tuple[Value, ...]) -> None:
        declared = [type for type, _ in text.results]
        if len(returns) != len(declared):
            fail(
                f"@{text.name} returns {len(returns)} values but its signature declares "
                f"{len(declared)} results",
                text.returned.token,
            )
        for index, (value, token) in enumerate(zip(returns, text.returned.values)):
            if value.type != declared[index]:
                fail(
                    f"{token} has type {value.type} but the signature of @{text.name} declares "
                    f"result {index} as {declared[index]}",
                    token,
                )

    def define(self, token: Token, type) -> Value:
        """An argument: its printed name becomes its hint."""
        self.reserve(token)
        return self.bind(token, Value.fresh(type, str(token)[1:]))

    def reserve(self, token: Token) -> None:
        name = str(token)
        if name in self.defined:
            first = self.defined[name]
            fail(f"{name} is already defined at line {first.line}, column {first.column}", token)
        self.defined[name] = token

    def bind(self, token: Token, value: Value) -> Value:
        self.scopes[-1][str(token)] = value
        return value

    def lookup(self, token: Token) -> Value:
        value = self.scopes[-1].get(str(token))
        if value is not None:
            return value
        if any(str(token) in scope for scope in self.scopes[:-1]):
            fail(
                f"{token} is defined outside this region; region bodies are isolated from above "
                "and see only their own arguments",
                token,
            )
        fail(f"undefined value {token}", token)

    def operation(self, text: OpText) -> Op:
        if len(text.results) != len(text.types):
            fail(
                f"{text.name} defines {len(text.results)} values but lists {len(text.types)} "
                "result types",
                text.name_token,
            )
        for token in text.results:
            self.reserve(token)
        operands = tuple(self.lookup(token) for token in text.operands)
        attrs = self.attrs(text.attrs)
        regions = tuple(self.region(region) for region in text.regions)
        results = tuple(
            self.bind(token, Value.fresh(type))
            for token, (type, _) in zip(text.results, text.types)
        )
        shardings = tuple(self.sharding(sharding) for _, sharding in text.types)
        if all(sharding is None for sharding in shardings):
            shardings = ()
        return Op(text.name, operands, results, attrs, regions, shardings, text.location)

    def region(self, text: RegionText) -> Block:
        self.scopes.append({})
        arguments = tuple(self.define(argument.token, argument.type) for argument in text.arguments)
        shardings = tuple(self.sharding(argument.sharding) for argument in text.arguments)
        ops = tuple(self.operation(op) for op in text.ops)
        returns = self.returned(text.returned)
        self.scopes.pop()
        return Block(arguments, ops, returns, shardings)

    def returned(self, text: ReturnText) -> tuple[Value, ...]:
        return tuple(self.lookup(token) for token in text.values)

    def attrs(self, entries) -> Attrs:
        return Attrs((str(token), self.attribute(value)) for token, value in entries)

    def attribute(self, value):
        if isinstance(value, ShardingText):
            return self.sharding(value)
        if isinstance(value, tuple):
            return tuple(self.attribute(item) for item in value)
        return value

    def sharding(self, text: ShardingText | None) -> TensorSharding | None:
        if text is None:
            return None
        name = text.sharding.mesh_name
        mesh = self.meshes.get(name)
        if mesh is None:
            known = ", ".join(f"@{mesh_name}" for mesh_name in self.meshes) or "none"
            fail(f"unknown mesh @{name}; the module defines {known}", text.mesh_token)
        for axis in text.axes:
            if axis.axis.name not in mesh.axis_names:
                fail(
                    f"mesh @{name} has no axis {axis.axis.name!r}; its axes are "
                    f"{', '.join(repr(axis_name) for axis_name in mesh.axis_names) or 'none'}",
                    axis.token,
                )
        return text.sharding
