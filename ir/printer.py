"""The deterministic text form of IR modules (StableHLO/Shardy flavoured); ``parser`` reads it back.

Values print as ``%0, %1, ...`` in definition order, function and region arguments as ``%<hint>``
when the hint is a usable identifier, else ``%argN``. See docs/ir.md for the grammar.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Iterator

from .core import Block, DenseAttr, Func, Module, Op, SymbolRef, Value
from .dense_text import format_dense
from .ops.regions import region_label
from .sharding import AxisRef, DimSharding, MeshAttr, TensorSharding
from .types import TensorType

INDENT = "  "
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_POSITIONAL = re.compile(r"arg[0-9]+\Z")
_BARE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.$]*\Z")
_LOCATION = re.compile(r"(.*?)((?::[0-9]+)*)\Z", re.DOTALL)
# Op names that the grammar would read as keywords where an op may start print quoted.
_OP_KEYWORDS = frozenset({"loc", "return"})
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def print_module(module: Module) -> str:
    """The text of ``module``: meshes first, then functions, separated by blank lines."""
    sections = []
    if module.meshes:
        sections.append("\n".join(format_mesh_def(name, mesh) for name, mesh in module.meshes))
    sections.extend("\n".join(_FunctionPrinter(func).lines()) for func in module.funcs)
    return "\n\n".join(sections) + "\n" if sections else ""


def format_mesh_def(name: str, mesh: MeshAttr) -> str:
    axes = ", ".join(f"{format_string(axis)}={size}" for axis, size in mesh.axes)
    device_ids = ""
    if mesh.device_ids is not None:
        device_ids = ", device_ids=[" + ", ".join(str(device) for device in mesh.device_ids) + "]"
    return f"mesh {format_symbol(name)} = <[{axes}]{device_ids}>"


# --- names -----------------------------------------------------------------------------------


def name_values(func: Func) -> dict[int, str]:
    """The printed name (``%a``, ``%arg3``, ``%7``) of every value ``func`` defines, by value id.

    Names are unique in the whole function: arguments of region bodies continue the ``argN``
    count of the function's arguments, and op results are numbered in textual order.
    """
    arguments = list(_block_arguments(func.body))
    hint_counts = Counter(argument.hint for argument in arguments)
    names = {}
    for position, argument in enumerate(arguments):
        fallback = f"arg{position}"
        hint = argument.hint
        usable = (
            hint is not None
            and _IDENTIFIER.match(hint) is not None
            and hint_counts[hint] == 1
            and (hint == fallback or not _POSITIONAL.match(hint))
        )
        # NOTE: setdefault, so that a value defined twice (invalid IR) keeps its first name.
        names.setdefault(argument.id, "%" + (hint if usable else fallback))
    numbers = itertools.count()
    for op in func.body.walk():
        for result in op.results:
            names.setdefault(result.id, f"%{next(numbers)}")
    return names


def _block_arguments(block: Block) -> Iterator[Value]:
    yield from block.args
    for op in block.ops:
        for region in op.regions:
            yield from _block_arguments(region)


def _value_name(value: Value, names: dict[int, str]) -> str:
    # NOTE: invalid IR still prints; a value defined nowhere shows up as %undefined_<id>.
    return names.get(value.id, f"%undefined_{value.id}")


# --- functions and ops -----------------------------------------------------------------------


class _FunctionPrinter:
    def __init__(self, func: Func):
        self.func = func
        self.names = name_values(func)

    def lines(self) -> list[str]:
        lines = [self.header()]
        lines.extend(block_lines(self.func.body, self.names, INDENT))
        lines.append("}")
        return lines

    def header(self) -> str:
        func = self.func
        arguments = ", ".join(
            self.typed_name(argument, _at(func.arg_shardings, index))
            for index, argument in enumerate(func.args)
        )
        results = ", ".join(
            str(value.type) + _sharding_suffix(_at(func.result_shardings, index))
            for index, value in enumerate(func.returns)
        )
        attributes = f" attributes {format_attrs(func.attrs)}" if func.attrs else ""
        return f"func {format_symbol(func.name)}({arguments}) -> ({results}){attributes} {{"

    def typed_name(self, value: Value, sharding: TensorSharding | None) -> str:
        return f"{_value_name(value, self.names)}: {value.type}{_sharding_suffix(sharding)}"


def _at(items: tuple, index: int):
    return items[index] if index < len(items) else None


def _sharding_suffix(sharding: TensorSharding | None) -> str:
    return "" if sharding is None else f" {{sharding = {format_sharding(sharding)}}}"


def block_lines(block: Block, names: dict[int, str], indent: str) -> list[str]:
    """The ops of ``block`` and its ``return``, each line starting with ``indent``."""
    lines = []
    for op in block.ops:
        lines.extend(op_lines(op, names, indent))
    returned = ", ".join(_value_name(value, names) for value in block.returns)
    lines.append(f"{indent}return {returned}".rstrip())
    return lines


def op_lines(op: Op, names: dict[int, str], indent: str = "") -> list[str]:
    """The printed op; an op with regions spans several lines."""
    results = ", ".join(_value_name(result, names) for result in op.results)
    operands = ", ".join(_value_name(operand, names) for operand in op.operands)
    name = format_string(op.name) if op.name in _OP_KEYWORDS else format_symbol_name(op.name)
    head = f"{indent}{results + ' = ' if results else ''}{name}({operands})"
    if op.attrs:
        head += " " + format_attrs(op.attrs)
    tail = " : " + _result_types(op) + _location_suffix(op.location)
    if not op.regions:
        return [head + tail]
    lines = [head + " ({"]
    for index, region in enumerate(op.regions):
        if index:
            lines.append(f"{indent}}}, {{")
        arguments = ", ".join(f"{_value_name(arg, names)}: {arg.type}"
                              f"{_sharding_suffix(region.arg_sharding(position))}"
                              for position, arg in enumerate(region.args))
        lines.append(f"{indent}^{region_label(op.name, index)}({arguments}):")
        lines.extend(block_lines(region, names, indent + INDENT))
    lines.append(f"{indent}}})" + tail)
    return lines


def _result_types(op: Op) -> str:
    if not op.results:
        return "()"
    parts = []
    for index, result in enumerate(op.results):
        sharding = op.sharding_of(index)
        parts.append(
            str(result.type) + ("" if sharding is None else " " + format_sharding(sharding))
        )
    return ", ".join(parts)


def _location_suffix(location: str | None) -> str:
    if location is None:
        return ""
    file, numbers = _LOCATION.match(location).groups()
    return f" loc({format_string(file)}{numbers})"


# --- attributes ------------------------------------------------------------------------------


def format_attrs(attrs) -> str:
    """``{name = value, ...}`` in the (sorted) order of ``attrs``."""
    entries = (
        f"{format_symbol_name(name)} = {format_attribute(value)}" for name, value in attrs.items()
    )
    return "{" + ", ".join(entries) + "}"


def format_attribute(value) -> str:
    """One attribute value; raises TypeError for kinds the text form does not have."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return format_string(value)
    if isinstance(value, SymbolRef):
        return format_symbol(value.name)
    if isinstance(value, tuple):
        return "[" + ", ".join(format_attribute(item) for item in value) + "]"
    if isinstance(value, TensorType):
        return str(value)
    if isinstance(value, TensorSharding):
        return format_sharding(value)
    if isinstance(value, DenseAttr):
        return format_dense(value)
    raise TypeError(f"attribute value {value!r} of type {type(value).__name__} has no text form")


def format_string(text: str) -> str:
    """A double-quoted string; quotes, backslashes and unprintable characters are escaped."""
    pieces = []
    for character in text:
        if character in _ESCAPES:
            pieces.append(_ESCAPES[character])
        elif character.isprintable():
            pieces.append(character)
        elif ord(character) > 0xFFFF:
            # JSON spells astral characters as a surrogate pair.
            high, low = divmod(ord(character) - 0x10000, 0x400)
            pieces.append(f"\\u{0xD800 + high:04x}\\u{0xDC00 + low:04x}")
        else:
            pieces.append(f"\\u{ord(character):04x}")
    return '"' + "".join(pieces) + '"'


def format_symbol_name(name: str) -> str:
    """An op or attribute name: bare when it is a plain name, else quoted."""
    return name if _BARE_NAME.match(name) else format_string(name)


def format_symbol(name: str) -> str:
    return "@" + format_symbol_name(name)


# --- shardings -------------------------------------------------------------------------------


def format_sharding(sharding: TensorSharding) -> str:
    """``<@mesh, [{"x", "y"}, {"z":(1)2, ?}, {}p1], replicated={"w"}, unreduced={"v"}>``."""
    parts = [
        format_symbol(sharding.mesh_name),
        "[" + ", ".join(map(_format_dim, sharding.dims)) + "]",
    ]
    if sharding.replicated:
        parts.append(f"replicated={_format_axis_set(sharding.replicated)}")
    if sharding.unreduced or sharding.reduction != "sum":
        keyword = "unreduced" if sharding.reduction == "sum" else f"unreduced_{sharding.reduction}"
        parts.append(f"{keyword}={_format_axis_set(sharding.unreduced)}")
    return "<" + ", ".join(parts) + ">"


def _format_dim(dim: DimSharding) -> str:
    entries = [format_axis(axis) for axis in dim.axes]
    if not dim.is_closed:
        entries.append("?")
    priority = "" if dim.priority is None else f"p{dim.priority}"
    return "{" + ", ".join(entries) + "}" + priority


def _format_axis_set(axes: tuple[AxisRef, ...]) -> str:
    return "{" + ", ".join(format_axis(axis) for axis in axes) + "}"


def format_axis(axis: AxisRef) -> str:
    """``"x"`` for a whole axis, ``"x":(pre_size)size`` for a sub-axis."""
    if axis.size is None and axis.pre_size == 1:
        return format_string(axis.name)
    size = "" if axis.size is None else str(axis.size)
    return f"{format_string(axis.name)}:({axis.pre_size}){size}"
