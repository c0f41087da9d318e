"""What the op table writes into: scopes of StableHLO value names, and a builder that appends
meshjit ops whose result types come from meshjit's shape rules."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from lark import Token

from ..core import Block, Op, Value
from ..parser_syntax import ParseError
from ..shape_rules import ShapeError, infer_result_types
from ..sharding import MeshAttr
from .syntax import position


class Scope:
    """Value names visible in one function body or region. A region scope (``parent`` given)
    captures the outer values it reads: each becomes a new argument of the region, since meshjit
    regions are isolated from above (``captures`` pairs the outer value with that argument)."""

    def __init__(self, parent: Scope | None = None):
        self.parent = parent
        self.values: dict[str, object] = {}
        self.captures: list[tuple[Value, Value]] = []

    def bind(self, name: str, value) -> None:
        self.values[name] = value

    def lookup(self, token: Token):
        name = str(token)
        if name in self.values:
            return self.values[name]
        if self.parent is None:
            line, column = position(token)
            raise ParseError(f"undefined value {name}", line, column)
        outer = self.parent.lookup(token)
        if not isinstance(outer, Value):
            return outer
        inner = Value.fresh(outer.type)
        self.captures.append((outer, inner))
        self.values[name] = inner
        return inner


@dataclass
class Facts:
    """What later ops may ask about a value: its constant elements, or the dim of its iota."""

    constants: dict[int, np.ndarray] = field(default_factory=dict)
    iotas: dict[int, int] = field(default_factory=dict)


class Builder:
    """Appends meshjit ops; ``location`` tags each with the StableHLO line it came from."""

    def __init__(self, meshes: dict[str, MeshAttr], facts: Facts, source: str):
        self.meshes = meshes
        self.facts = facts
        self.source = source
        self.ops: list[Op] = []
        self.where: tuple[str, int, int] = ("", 1, 1)

    def child(self) -> Builder:
        """A builder for a region body: same meshes and facts, its own op list."""
        return Builder(self.meshes, self.facts, self.source)

    def at(self, op_name: str, line: int, column: int) -> None:
        self.where = (op_name, line, column)

    def emit(self, name: str, operands, attrs=None, regions=()) -> tuple[Value, ...]:
        """Append meshjit op ``name``; its result types are what meshjit infers."""
        operands = tuple(operands)
        attrs = dict(attrs or {})
        op_name, line, column = self.where
        try:
            types = infer_result_types(name, [value.type for value in operands], attrs, regions, self.meshes)
        except (ShapeError, ValueError, LookupError, TypeError) as error:
            raise ParseError(f"{op_name}: meshjit's {name} rejects it: {error}", line, column) from None
        results = tuple(Value.fresh(type_) for type_ in types)
        self.ops.append(Op(name, operands, results, attrs, tuple(regions), (),
                           f"{self.source}:{line}"))
        return results

    def emit1(self, name: str, operands, attrs=None, regions=()) -> Value:
        return self.emit(name, operands, attrs, regions)[0]

    def fail(self, message: str):
        op_name, line, column = self.where
        raise ParseError(f"{op_name}: {message}", line, column)

    def block(self, args, returns, arg_shardings=()) -> Block:
        return Block(tuple(args), tuple(self.ops), tuple(returns), tuple(arg_shardings))
