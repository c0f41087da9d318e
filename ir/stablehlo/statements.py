"""A statement's parts: the values it defines, the op name, the body, the type signature, its
regions and its named attributes (``name = value`` in the body, in ``<{...}>`` properties and in
a trailing ``{...}`` dictionary), all read without knowing the op."""

from __future__ import annotations

from dataclasses import dataclass, field

from lark import Token

from ..parser_syntax import ParseError
from .syntax import Group, Region, Stmt, is_token, position, render, split_commas
from .values import tensor_type

__all__ = ["OpStmt", "TERMINATORS", "collect_entries", "read_op", "split_commas"]

TERMINATORS = ("return", "func.return", "stablehlo.return", "sdy.return")


@dataclass
class OpStmt:
    """One op statement; ``results`` lists each defined name with how many values it holds
    (``%9:4`` holds four, used as ``%9#0`` ... ``%9#3``)."""

    results: list[tuple[str, int]]
    name: str
    body: tuple
    signature: tuple
    line: int
    column: int
    regions: list[Region] = field(default_factory=list)

    def fail(self, message: str, where=None):
        line, column = position(where) if where is not None else (self.line, self.column)
        raise ParseError(f"{self.name}: {message}", line, column)

    @property
    def result_names(self) -> list[str]:
        names = []
        for name, count in self.results:
            names.extend([name] if count == 1 else [f"{name}#{index}" for index in range(count)])
        return names

    def operand_tokens(self) -> list[Token]:
        """The values the body names at top level and inside its top-level parentheses (not in
        argument lists such as ``(%a: tensor<f32>)``, which define values)."""
        found = []
        for item in self.body:
            if is_token(item, "VALUE"):
                found.append(item)
            elif isinstance(item, Group) and item.kind == "paren" and not _declares(item):
                found.extend(child for child in item.items if is_token(child, "VALUE"))
        return found

    def types(self) -> tuple[list, list]:
        """The signature's (operand types, result types); without ``->`` the listed types are
        the results' (the last ones, one per result)."""
        before, after, seen_arrow = [], [], False
        for item in self.signature:
            if is_token(item, "PUNCT", "->"):
                seen_arrow = True
                continue
            if isinstance(item, Region) or (is_token(item, "WORD") and not seen_arrow and before):
                break
            target = after if seen_arrow else before
            if is_token(item, "TENSOR"):
                target.append(tensor_type(item))
            elif isinstance(item, Group) and item.kind == "paren":
                target.extend(tensor_type(child) for child in item.items if is_token(child, "TENSOR"))
            elif seen_arrow and after:
                break
        if seen_arrow:
            return before, after
        count = len(self.result_names)
        return before, before[len(before) - count:] if count else []

    def attrs(self) -> dict[str, tuple]:
        """Every ``name = value`` of the body, its ``<{...}>`` properties and its dictionaries."""
        found: dict[str, tuple] = {}
        collect_entries(self.body, found)
        return found

    def attr(self, name: str, default=None):
        return self.attrs().get(name, default)

    def require(self, name: str) -> tuple:
        value = self.attrs().get(name)
        if value is None:
            self.fail(f"expected the attribute {name!r}")
        return value


def _declares(group: Group) -> bool:
    """Whether a parenthesised list declares values (``%a: tensor<f32>``) or binds them
    (``%iterArg = %0``), rather than naming operands."""
    items = group.items
    for first, second, third in zip(items, items[1:], items[2:]):
        if is_token(first, "VALUE") and is_token(second, "PUNCT", ":") and is_token(third, "TENSOR"):
            return True
        if is_token(first, "VALUE") and is_token(second, "PUNCT", "=") and is_token(third, "VALUE"):
            return True
    return False


def collect_entries(items, found: dict) -> None:
    """``name = value`` entries of a run of items; dictionaries among them are read too."""
    index = 0
    while index < len(items):
        item = items[index]
        if _is_dictionary(item):
            collect_entries(item.items, found)
            index += 1
            continue
        if (is_token(item, "WORD") or is_token(item, "STRING")) and index + 1 < len(items) \
                and is_token(items[index + 1], "PUNCT", "="):
            end = index + 2
            while end < len(items) and not _ends_value(items, end, end == index + 2):
                end += 1
            name = str(item).strip('"') if item.type == "STRING" else str(item)
            found[name] = tuple(items[index + 2:end])
            index = end
            continue
        if isinstance(item, Group) and item.kind == "angle":
            inner = item.items
            if len(inner) == 1 and _is_dictionary(inner[0]):
                collect_entries(inner[0].items, found)
        index += 1


def _is_dictionary(item) -> bool:
    return isinstance(item, Group) and item.kind == "brace" and any(
        is_token(child, "PUNCT", "=") for child in item.items)


def _ends_value(items, index: int, first: bool) -> bool:
    item = items[index]
    if is_token(item, "PUNCT", ","):
        return True
    if isinstance(item, Region):
        return True
    if not first and _is_dictionary(item):
        return True
    if not first and isinstance(item, Group) and item.kind == "paren" and _declares(item):
        return True
    return (is_token(item, "WORD") or is_token(item, "STRING")) and index + 1 < len(items) \
        and is_token(items[index + 1], "PUNCT", "=")


def read_op(stmt: Stmt) -> OpStmt:
    """The parts of an op statement: ``[%a, %b:2 =] name body [: signature]``."""
    items = stmt.items
    results, index = _read_results(items)
    if index >= len(items):
        raise ParseError("expected an op name after '='", *position(items[-1]))
    name_item = items[index]
    if is_token(name_item, "STRING"):
        name = str(name_item)[1:-1]
    elif is_token(name_item, "WORD"):
        name = str(name_item)
    else:
        raise ParseError(f"expected an op name, found {render(name_item)!r}", *position(name_item))
    rest = items[index + 1:]
    colon = max((position_ for position_, item in enumerate(rest) if is_token(item, "PUNCT", ":")),
                default=None)
    body, signature = (rest, ()) if colon is None else (rest[:colon], rest[colon + 1:])
    regions = [item for item in rest if isinstance(item, Region)]
    for item in rest:
        if isinstance(item, Group) and item.kind == "paren":
            regions.extend(child for child in item.items if isinstance(child, Region))
    return OpStmt(results, name, tuple(body), tuple(signature), name_item.line, name_item.column, regions)


def _read_results(items) -> tuple[list[tuple[str, int]], int]:
    """The defined names before ``=`` (none when the statement does not start with a value)."""
    results, index = [], 0
    if not is_token(items[0], "VALUE"):
        return results, 0
    while index < len(items):
        item = items[index]
        if not is_token(item, "VALUE"):
            raise ParseError(f"expected a value name, found {render(item)!r}", *position(item))
        count = 1
        index += 1
        if index + 1 < len(items) and is_token(items[index], "PUNCT", ":") and is_token(items[index + 1], "INT"):
            count = int(items[index + 1])
            index += 2
        results.append((str(item), count))
        if index < len(items) and is_token(items[index], "PUNCT", ","):
            index += 1
            continue
        if index < len(items) and is_token(items[index], "PUNCT", "="):
            return results, index + 1
        break
    where = items[index] if index < len(items) else items[-1]
    raise ParseError("expected '=' after the defined values", *position(where))
