"""The first pass over StableHLO text: lark's LALR parse of ``grammar.lark`` into generic records.

A statement is a line's items; an item is a token or a bracketed ``Group``; a ``Region`` is a
brace whose ``{`` ends its line and holds statements. Nothing here knows an op: ``statements``
splits a statement into results, op name, body and signature, and the op table gives meaning.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from ..parser_syntax import ParseError

_CLOSERS = {"paren": ")", "bracket": "]", "angle": ">", "brace": "}"}


@dataclass(frozen=True)
class Group:
    """A bracketed run of items: ``kind`` is paren, bracket, angle or brace."""

    kind: str
    items: tuple
    line: int
    column: int


@dataclass(frozen=True)
class Region:
    """A ``{`` at the end of a line, the statements up to its ``}``."""

    stmts: tuple
    line: int
    column: int


@dataclass(frozen=True)
class Stmt:
    """One statement: its items in order and where it starts."""

    items: tuple
    line: int
    column: int


class _Builder(Transformer):
    """Each rule becomes a record; tokens stay lark Tokens (they carry line and column)."""

    def start(self, children):
        return [child for child in children if isinstance(child, Stmt)]

    def stmt(self, children):
        first = children[0]
        return Stmt(tuple(children), first.line, first.column)

    def atom(self, children):
        return children[0]

    def _group(self, kind, children):
        opener, *items, _ = children
        return Group(kind, tuple(items), opener.line, opener.column)

    def paren(self, children):
        return self._group("paren", children)

    def bracket(self, children):
        return self._group("bracket", children)

    def angle(self, children):
        return self._group("angle", children)

    def brace(self, children):
        return self._group("brace", children)

    def region(self, children):
        opener = children[0]
        stmts = tuple(child for child in children if isinstance(child, Stmt))
        return Region(stmts, opener.line, opener.column)


@functools.cache
def _lark() -> Lark:
    grammar = resources.files(__package__).joinpath("grammar.lark").read_text(encoding="utf-8")
    return Lark(grammar, parser="lalr", transformer=_Builder())


def parse_statements(text: str) -> list[Stmt]:
    """The top-level statements of ``text``; malformed text is a ParseError at its position."""
    try:
        return _lark().parse(text)
    except UnexpectedInput as error:
        raise _syntax_error(error, text) from None


def _syntax_error(error: UnexpectedInput, text: str) -> ParseError:
    line, column = max(error.line, 1), max(error.column, 1)
    if isinstance(error, UnexpectedToken):
        token = error.token
        if token.type == "$END":
            line, column = text.count("\n") + 1, len(text) - text.rfind("\n")
            return ParseError("unexpected end of input: a bracket or region is not closed", line, column)
        found = repr(str(token)) if token.type != "_NL" else "end of line"
        return ParseError(f"unexpected {found}: brackets do not match here", line, column)
    if isinstance(error, UnexpectedCharacters):
        character = text[error.pos_in_stream]
        if character == '"':
            return ParseError("unterminated string literal", line, column)
        return ParseError(f"unexpected character {character!r}", line, column)
    return ParseError("cannot read the input here", line, column)


def position(item) -> tuple[int, int]:
    """The (line, column) where a token, group, region or statement starts."""
    return getattr(item, "line", 1) or 1, getattr(item, "column", 1) or 1


def is_token(item, type_: str, value: str | None = None) -> bool:
    return isinstance(item, Token) and item.type == type_ and (value is None or str(item) == value)


def split_commas(items) -> list[tuple]:
    """Items split at top-level commas."""
    parts, current = [], []
    for item in items:
        if is_token(item, "PUNCT", ","):
            parts.append(tuple(current))
            current = []
        else:
            current.append(item)
    if current:
        parts.append(tuple(current))
    return parts


def render(item) -> str:
    """An item as text again (approximately; for error messages)."""
    if isinstance(item, Token):
        return str(item)
    if isinstance(item, Group):
        opener = {"paren": "(", "bracket": "[", "angle": "<", "brace": "{"}[item.kind]
        return opener + " ".join(render(child) for child in item.items) + _CLOSERS[item.kind]
    if isinstance(item, Region):
        return "{...}"
    return " ".join(render(child) for child in item.items)
