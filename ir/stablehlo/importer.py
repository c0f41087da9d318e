"""``parse_stablehlo``: the module JAX prints for ``jax.jit(f).lower(*args).as_text()`` as a
verified meshjit Module. Functions other than ``@main`` are inlined at their calls; each op goes
through the op table (ops_table.py); shardings come from Shardy's attributes or GSPMD strings."""

from __future__ import annotations

from dataclasses import dataclass

from ..core import Func, Module, Value
from ..parser_syntax import ParseError
from ..sharding import MeshAttr, TensorSharding
from ..types import TensorType
from ..verify import VerifyError, verify
from . import gspmd
from .builder import Builder, Facts, Scope
from .statements import TERMINATORS, OpStmt, collect_entries, read_op, split_commas
from .syntax import Group, Region, Stmt, is_token, parse_statements, position, render
from .values import sdy_mesh, sdy_sharding, sharding_attr, tensor_type

__all__ = ["parse_stablehlo"]


@dataclass
class FuncText:
    """A ``func.func``: its arguments (name, type, attributes), result types and attributes,
    and its body's statements."""

    name: str
    args: list[tuple[str, TensorType, dict]]
    results: list[tuple[TensorType, dict]]
    body: Region
    line: int
    column: int


def parse_stablehlo(text: str | bytes, source: str = "stablehlo") -> Module:
    """The meshjit Module of a StableHLO module's text; ParseError (with the line) if the text
    is malformed or uses an op or attribute the importer cannot map."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8")
    if not isinstance(text, str):
        raise ParseError(f"expected the module text as str or bytes, got {type(text).__name__}", 1, 1)
    lines = text.splitlines()
    try:
        module = Importer(parse_statements(text), source).build()
    except ParseError as error:
        source_line = lines[error.line - 1] if 0 < error.line <= len(lines) else None
        raise ParseError(error.message, error.line, error.column, source_line) from None
    try:
        verify(module)
    except VerifyError as error:
        raise ParseError(f"the imported module does not verify: {error}", 1, 1) from None
    return module


class Importer:
    """Reads the module's items, then maps @main (and every function it calls, inlined)."""

    def __init__(self, stmts: list[Stmt], source: str):
        self.source = source
        self.meshes: dict[str, MeshAttr] = {}
        self.funcs: dict[str, FuncText] = {}
        self.module_attrs: dict = {}
        self.gspmd_mesh: MeshAttr | None = None
        self.manual: list[tuple[str, tuple[str, ...]]] = []
        self.facts = Facts()
        self.gspmd_constraints: dict[int, TensorSharding] = {}
        self.cursor: tuple[tuple, int] = ((), 0)
        self._read_items(_module_items(stmts))

    # -- the module's items ---------------------------------------------------------------
    def _read_items(self, stmts) -> None:
        for stmt in stmts:
            head = stmt.items[0]
            if is_token(head, "HASH_WORD"):
                continue  # location aliases (#loc = loc(...)) carry no meaning here
            if is_token(head, "WORD", "sdy.mesh"):
                name = str(stmt.items[1])[1:].strip('"')
                self.meshes[name] = sdy_mesh(stmt.items[3:], stmt)
            elif is_token(head, "WORD", "func.func"):
                func = _read_func(stmt)
                self.funcs[func.name] = func
            else:
                raise ParseError(f"expected sdy.mesh or func.func at module level, found {render(head)!r}",
                                 *position(head))

    def build(self) -> Module:
        if "main" not in self.funcs:
            raise ParseError("the module has no function @main", 1, 1)
        main = self.funcs["main"]
        self._prepare_gspmd()
        scope, builder = Scope(), Builder(self.meshes, self.facts, self.source)
        args = []
        for name, type_, _ in main.args:
            value = Value.fresh(type_, _hint(name))
            scope.bind(name, value)
            args.append(value)
        returns = self.body(main.body.stmts, scope, builder, main)
        arg_shardings = tuple(self.sharding_of(attrs, type_, main) for _, type_, attrs in main.args)
        result_shardings = tuple(self.sharding_of(attrs, type_, main) for type_, attrs in main.results)
        func = Func("main", builder.block(args, returns), arg_shardings, result_shardings)
        return Module(tuple(self.meshes.items()), (func,))

    # -- shardings ------------------------------------------------------------------------
    def _prepare_gspmd(self) -> None:
        """Without an sdy.mesh, GSPMD strings name the devices: infer a mesh @mesh from them."""
        strings = [value for func in self.funcs.values() for value in _gspmd_strings(func)]
        tiled = []
        for text, where in strings:
            try:
                parsed = gspmd.parse_sharding(text)
            except gspmd.GspmdError as error:
                raise ParseError(str(error), *position(where)) from None
            if isinstance(parsed, gspmd.Tiled):
                tiled.append(parsed)
        if tiled and not self.meshes:
            devices = int(tiled[0].devices.size)
            self.gspmd_mesh = gspmd.infer_mesh(tiled, devices)
            self.meshes[gspmd.MESH_NAME] = self.gspmd_mesh

    def sharding_of(self, attrs: dict, type_: TensorType, where) -> TensorSharding | None:
        """The sharding of an argument, result or custom call: Shardy's or GSPMD's attribute."""
        if "sdy.sharding" in attrs:
            return sharding_attr(attrs["sdy.sharding"], where)
        if "mhlo.sharding" in attrs:
            return self.gspmd_sharding(attrs["mhlo.sharding"], type_, where)
        return None

    def gspmd_sharding(self, value: tuple, type_: TensorType, where) -> TensorSharding | None:
        text = str(value[0])[1:-1] if value and is_token(value[0], "STRING") else None
        if text is None:
            raise ParseError("expected mhlo.sharding = \"{...}\"", *position(where))
        try:
            parsed = gspmd.parse_sharding(text)
            if parsed == "replicated":
                return gspmd.replicated(type_.rank) if self.gspmd_mesh else None
            if parsed == "manual":
                return None
            return gspmd.to_tensor_sharding(parsed, self.gspmd_mesh, type_.rank)
        except gspmd.GspmdError as error:
            raise ParseError(str(error), *position(where)) from None

    # -- bodies ---------------------------------------------------------------------------
    def body(self, stmts, scope: Scope, builder: Builder, where) -> tuple[Value, ...]:
        """Map a body's statements into ``builder``; returns the terminator's values."""
        from .ops_table import map_op

        returns = None
        for position_, stmt in enumerate(stmts):
            if is_token(stmt.items[0], "BLOCK_LABEL"):
                continue
            op = read_op(stmt)
            if op.name in TERMINATORS:
                returns = tuple(_value(scope.lookup(token), op) for token in op.operand_tokens())
                continue
            builder.at(op.name, op.line, op.column)
            saved, self.cursor = self.cursor, (stmts, position_)
            try:
                values = self._constrained(op, map_op(self, op, scope, builder), builder)
            finally:
                self.cursor = saved
            names = op.result_names
            if len(values) != len(names):
                op.fail(f"defines {len(names)} values but maps to {len(values)}")
            declared = op.types()[1]
            for index, (name, value) in enumerate(zip(names, values)):
                if isinstance(value, Value) and index < len(declared) and value.type != declared[index]:
                    op.fail(f"result {index} is declared {declared[index]} but meshjit's ops give {value.type}")
                scope.bind(name, value)
        if returns is None:
            raise ParseError("the body has no return", *position(where))
        return returns

    @property
    def following(self) -> tuple:
        """The statements after the one being mapped, in its body."""
        stmts, index = self.cursor
        return tuple(stmts[index + 1:])

    def _constrained(self, op: OpStmt, values, builder: Builder) -> tuple:
        """An op's results, each under a sharding_constraint when the op carries a result sharding
        (Shardy's ``sdy.sharding = #sdy.sharding_per_value<[...]>`` or GSPMD's ``mhlo.sharding``)."""
        if op.name == "stablehlo.custom_call" or not any(
                is_token(item, "WORD") and str(item) in ("sdy.sharding", "mhlo.sharding")
                for group in op.body if isinstance(group, Group) for item in group.items):
            return values
        attrs = op.attrs()
        if "sdy.sharding" in attrs:
            angle = next(item for item in attrs["sdy.sharding"] if isinstance(item, Group))
            shardings = [sdy_sharding(item) for item in angle.items[0].items if isinstance(item, Group)]
        elif "mhlo.sharding" in attrs:
            shardings = [self.gspmd_sharding(attrs["mhlo.sharding"], values[0].type, op)]
        else:
            return values
        if len(shardings) != len(values):
            op.fail(f"has {len(shardings)} result shardings for {len(values)} results")
        return tuple(self._constrain(value, sharding, builder) for value, sharding in zip(values, shardings))

    def call(self, op: OpStmt, operands, scope: Scope, builder: Builder) -> tuple[Value, ...]:
        """``func.call @f(...)``: @f's body inlined (a GSPMD shard_map body becomes a
        manual_computation)."""
        from .ops_collectives import Local, shard_map_call

        if any(isinstance(value, Local) for value in operands):
            from .ops_table import Context

            return shard_map_call(Context(self, op, scope, builder), operands)
        symbol = next((item for item in op.body if is_token(item, "SYMBOL")), None)
        callee = self.funcs.get(str(symbol)[1:].strip('"')) if symbol is not None else None
        if callee is None:
            op.fail(f"calls an unknown function {render(symbol) if symbol else ''}")
        if len(callee.args) != len(operands):
            op.fail(f"passes {len(operands)} operands to @{callee.name}, which takes {len(callee.args)}")
        scope = Scope()
        for (name, type_, attrs), value in zip(callee.args, operands):
            scope.bind(name, self._constrain(value, self.sharding_of(attrs, type_, callee), builder))
        results = self.body(callee.body.stmts, scope, builder, callee)
        return tuple(self._constrain(value, self.sharding_of(attrs, type_, callee), builder)
                     for value, (type_, attrs) in zip(results, callee.results))

    @staticmethod
    def _constrain(value, sharding: TensorSharding | None, builder: Builder):
        """``value`` under a sharding_constraint (a called function's argument or result
        sharding), or itself when there is none."""
        if sharding is None or not isinstance(value, Value):
            return value
        return builder.emit1("sharding_constraint", [value], {"sharding": sharding})

    def region(self, region: Region, scope: Scope, builder: Builder, args: list[tuple[str, TensorType]],
               isolated: bool = False):
        """A region's body as (argument values, child builder, returned values, captures)."""
        inner = Scope(None if isolated else scope)
        child = builder.child()
        values = []
        for name, type_ in args + _block_label_args(region):
            value = Value.fresh(type_, _hint(name))
            inner.bind(name, value)
            values.append(value)
        returns = self.body(region.stmts, inner, child, region)
        return values, child, returns, inner.captures


def _value(value, op: OpStmt) -> Value:
    if not isinstance(value, Value):
        op.fail("returns a value that only exists inside a GSPMD shard_map pattern")
    return value


def _hint(name: str) -> str | None:
    text = name[1:]
    return text if text.isidentifier() else None


def _module_items(stmts: list[Stmt]) -> list[Stmt]:
    """The statements inside ``module @name attributes {...} {...}`` (or the text's own)."""
    if len(stmts) == 1 and is_token(stmts[0].items[0], "WORD", "module"):
        regions = [item for item in stmts[0].items if isinstance(item, Region)]
        if len(regions) != 1:
            raise ParseError("expected module ... { ... }", stmts[0].line, stmts[0].column)
        return list(regions[0].stmts)
    return stmts


def _read_func(stmt: Stmt) -> FuncText:
    items = stmt.items
    symbol = next((item for item in items if is_token(item, "SYMBOL")), None)
    region = next((item for item in items if isinstance(item, Region)), None)
    if symbol is None or region is None:
        raise ParseError("expected func.func @name(...) -> ... { ... }", stmt.line, stmt.column)
    index = items.index(symbol)
    args_group = items[index + 1]
    args = [_read_arg(part, args_group) for part in split_commas(args_group.items)]
    results = []
    if index + 3 < len(items) and is_token(items[index + 2], "PUNCT", "->"):
        result_item = items[index + 3]
        if is_token(result_item, "TENSOR"):
            results.append((tensor_type(result_item), {}))
        else:
            for part in split_commas(result_item.items):
                results.append((tensor_type(part[0]), _dictionary(part[1:])))
    return FuncText(str(symbol)[1:].strip('"'), args, results, region, stmt.line, stmt.column)


def _read_arg(part: tuple, where) -> tuple[str, TensorType, dict]:
    if len(part) < 3 or not is_token(part[0], "VALUE") or not is_token(part[2], "TENSOR"):
        raise ParseError("expected a function argument such as %arg0: tensor<8xf32>", *position(where))
    return str(part[0]), tensor_type(part[2]), _dictionary(part[3:])


def _dictionary(items) -> dict:
    """An argument's or result's ``{name = value, ...}``."""
    found: dict = {}
    collect_entries(tuple(items), found)
    return found


def _block_label_args(region: Region) -> list[tuple[str, TensorType]]:
    """The arguments a region declares with ``^bb0(%a: tensor<f32>, ...):``."""
    if not region.stmts or not is_token(region.stmts[0].items[0], "BLOCK_LABEL"):
        return []
    group = region.stmts[0].items[1]
    return [(str(part[0]), tensor_type(part[2])) for part in split_commas(group.items)]


def declared_args(group: Group) -> list[tuple[str, TensorType]]:
    """``(%a: tensor<f32>, %b: tensor<f32>)`` as names and types."""
    return [(str(part[0]), tensor_type(part[2])) for part in split_commas(group.items)]


def _gspmd_strings(func: FuncText):
    """Every mhlo.sharding string in a function's signature and body, with where it is."""
    for _, _, attrs in func.args:
        if "mhlo.sharding" in attrs:
            yield str(attrs["mhlo.sharding"][0])[1:-1], func
    for _, attrs in func.results:
        if "mhlo.sharding" in attrs:
            yield str(attrs["mhlo.sharding"][0])[1:-1], func
    yield from _region_strings(func.body)


def _region_strings(region: Region):
    for stmt in region.stmts:
        for item in _flatten(stmt.items):
            if isinstance(item, Region):
                yield from _region_strings(item)
        if any(is_token(item, "WORD", "mhlo.sharding") for item in _flatten(stmt.items)):
            flat = list(_flatten(stmt.items))
            for index, item in enumerate(flat):
                if is_token(item, "WORD", "mhlo.sharding") and index + 2 < len(flat):
                    yield str(flat[index + 2])[1:-1], flat[index + 2]


def _flatten(items):
    for item in items:
        if isinstance(item, Group):
            yield from _flatten(item.items)
        else:
            yield item

