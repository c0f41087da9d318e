"""JAX's jaxpr objects as a view of meshjit's traced program: what ``make_jaxpr`` and
``Traced.jaxpr`` return, printed as JAX 0.10.2 prints a jaxpr (``{ lambda ; a:f32[]. let ...
in (b,) }``).

Variables are named a, b, ..., z, ba, bb, ... in the order they are first printed (constvars,
invars, then each equation's outvars before its sub-jaxprs), unused equation results print ``_``,
scalar constants print as literals (``2.0:f32[]``) and other constants are constvars. A line
that does not fit in 80 columns breaks as JAX breaks it: one equation per line, then one
parameter per line. ``_jaxpr_from_ir`` builds these objects from the IR.
"""

from __future__ import annotations

import itertools

import numpy as np

from meshjit.compiler.sharding.sharding_types import format_type
from meshjit.ir.dtypes import from_numpy

WIDTH = 80


class ShapedArray:
    """An abstract value (``jax.core.ShapedArray``): shape and dtype, printed ``f32[3,2]``; with
    a sharding type on a mesh, its Explicit axes and varying/unreduced axes (``f32[6@i]``,
    ``f32[3]{V:i}``)."""

    __slots__ = ("shape", "dtype", "weak_type", "sharding")

    def __init__(self, shape, dtype, weak_type: bool = False, sharding=None):
        self.shape, self.dtype, self.weak_type = tuple(shape), np.dtype(dtype), weak_type
        self.sharding = sharding

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def str_short(self) -> str:
        if self.sharding is not None and not self.sharding.is_trivial:
            return format_type(self.shape, self.dtype, self.sharding, short=True)
        return f"{_short_dtype(self.dtype)}[{','.join(str(size) for size in self.shape)}]"

    def __eq__(self, other) -> bool:
        return (isinstance(other, ShapedArray) and (self.shape, self.dtype, self.weak_type)
                == (other.shape, other.dtype, other.weak_type))

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.weak_type))

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self.dtype.name}[{','.join(str(size) for size in self.shape)}]{weak})"


def _short_dtype(dtype: np.dtype) -> str:
    """JAX's short dtype name (``f32``, ``bf16``, ``bool``): the IR's names are JAX's."""
    try:
        return from_numpy(dtype)
    except TypeError:
        return dtype.name


class Var:
    """A jaxpr variable: its abstract value; its name comes from the printing context."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self) -> str:
        return f"Var({self.aval.str_short()})"


class DropVar(Var):
    """An equation result nothing uses, printed ``_``."""

    __slots__ = ()


class Literal:
    """A scalar constant written in place: ``2.0:f32[]``."""

    __slots__ = ("val", "aval")

    def __init__(self, val, aval: ShapedArray):
        self.val, self.aval = val, aval

    def text(self) -> str:
        return f"{_scalar_text(np.asarray(self.val, self.aval.dtype)[()])}:{self.aval.str_short()}"

    def __repr__(self) -> str:
        return self.text()


def _scalar_text(value) -> str:
    """A literal's value as JAX prints it: Python's repr for the width of its dtype."""
    if isinstance(value, np.bool_):
        return str(bool(value))
    if isinstance(value, np.floating) and value.dtype == np.float64:
        return repr(float(value))
    text = str(value)
    if isinstance(value, (np.integer, np.complexfloating)) or any(mark in text for mark in ".ein"):
        return text
    return text + ".0"  # NOTE: ml_dtypes prints an integral bfloat16 without its ".0"


class Primitive:
    """The name of an equation's operation (``eqn.primitive.name``)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


class JaxprEqn:
    """One equation: ``outvars = primitive[params] invars``."""

    __slots__ = ("primitive", "invars", "outvars", "params")

    def __init__(self, primitive: str, invars, outvars, params: dict):
        self.primitive = Primitive(primitive)
        self.invars, self.outvars, self.params = list(invars), list(outvars), dict(params)

    def __repr__(self) -> str:
        return _Printer().equation(self, 0)


class Jaxpr:
    """``{ lambda constvars ; invars . let eqns in (outvars) }``."""

    __slots__ = ("constvars", "invars", "outvars", "eqns")

    def __init__(self, constvars, invars, outvars, eqns):
        self.constvars, self.invars = list(constvars), list(invars)
        self.outvars, self.eqns = list(outvars), list(eqns)

    @property
    def in_avals(self) -> list[ShapedArray]:
        return [var.aval for var in self.invars]

    @property
    def out_avals(self) -> list[ShapedArray]:
        return [var.aval for var in self.outvars]

    def pretty_print(self) -> str:
        return _Printer().jaxpr(self, 0)

    def __str__(self) -> str:
        return self.pretty_print()

    __repr__ = __str__


class ClosedJaxpr:
    """A jaxpr with the values of its constvars (``consts``)."""

    __slots__ = ("jaxpr", "consts")

    def __init__(self, jaxpr: Jaxpr, consts):
        self.jaxpr, self.consts = jaxpr, list(consts)

    @property
    def in_avals(self) -> list[ShapedArray]:
        return self.jaxpr.in_avals

    @property
    def out_avals(self) -> list[ShapedArray]:
        return self.jaxpr.out_avals

    @property
    def eqns(self) -> list[JaxprEqn]:
        return self.jaxpr.eqns

    @property
    def literals(self) -> list:
        return self.consts

    def pretty_print(self) -> str:
        return self.jaxpr.pretty_print()

    def __str__(self) -> str:
        return self.pretty_print()

    __repr__ = __str__


def _alphabetic(number: int) -> str:
    """0 -> a, 25 -> z, 26 -> ba: base 26 with a as the zero digit."""
    text = ""
    while not text or number:
        number, digit = divmod(number, 26)
        text = chr(97 + digit) + text
    return text


def _fill(words: list[str], column: int) -> str:
    """``words`` joined by spaces, wrapped to 80 columns; continuation lines indented by 4."""
    lines, line = [], ""
    for word in words:
        if line and column + len(line) + 1 + len(word) > WIDTH:
            lines.append(line)
            line, column = " " * (column + 4) + word, 0
        else:
            line = f"{line} {word}" if line else word
    return "\n".join(lines + [line])


class _Printer:
    """Names variables on first sight and lays a jaxpr out in 80 columns."""

    def __init__(self):
        self.names: dict[int, str] = {}
        self.fresh = (_alphabetic(index) for index in itertools.count())

    def atom(self, atom, binder: bool = False) -> str:
        if isinstance(atom, Literal):
            return atom.text()
        name = "_" if isinstance(atom, DropVar) else self.names.get(id(atom))
        if name is None:
            name = self.names[id(atom)] = next(self.fresh)
        return f"{name}:{atom.aval.str_short()}" if binder else name

    def jaxpr(self, jaxpr: Jaxpr, column: int) -> str:
        constvars = [self.atom(var, True) for var in jaxpr.constvars]
        invars = [self.atom(var, True) for var in jaxpr.invars]
        constvars = constvars[:-1] + [constvars[-1] + ";"] if constvars else [";"]
        invars = invars[:-1] + [invars[-1] + "."] if invars else ["."]
        head = _fill(["{ lambda", *constvars, *invars], column) + " let"
        flats = [self.equation(eqn, column + 4) for eqn in jaxpr.eqns]
        outs = ", ".join(self.atom(var) for var in jaxpr.outvars)
        tail = f"in ({outs}{',' if len(jaxpr.outvars) == 1 else ''}) }}"
        flat = f"{head} {'; '.join(flats)} {tail}" if flats else f"{head}  {tail}"
        if "\n" not in flat and column + len(flat) <= WIDTH:
            return flat
        lines = [head] + [" " * (column + 4) + text for text in flats] + [" " * (column + 2) + tail]
        return "\n".join(lines)

    def equation(self, eqn: JaxprEqn, column: int) -> str:
        outs = " ".join(self.atom(var, True) for var in eqn.outvars)
        args = " ".join(self.atom(atom) for atom in eqn.invars)
        name = eqn.primitive.name
        lead = f"{outs} = {name}" if outs else name
        if not eqn.params:
            return f"{lead} {args}"
        params = [(key, eqn.params[key]) for key in sorted(eqn.params)]
        flat_params = [f"{key}={self.param(value, column)}" for key, value in params]
        head = f"{lead}[{' '.join(flat_params)}]"
        # NOTE: as JAX's printer, the parameters stay on one line when the line fits up to their
        # closing bracket (the operands after it may run past 80 columns)
        if "\n" not in head and column + len(head) <= WIDTH:
            return f"{head} {args}"
        inner = column + 2
        lines = [f"{lead}["] + [" " * inner + f"{key}={self.param(value, inner)}"
                                for key, value in params]
        return "\n".join(lines + [" " * column + f"] {args}"])

    def param(self, value, column: int) -> str:
        if isinstance(value, (Jaxpr, ClosedJaxpr)):
            return self.jaxpr(value.jaxpr if isinstance(value, ClosedJaxpr) else value, column)
        if isinstance(value, tuple) and value and all(isinstance(item, (Jaxpr, ClosedJaxpr)) for item in value):
            texts = [self.param(item, column + 2) for item in value]
            return "(\n" + "".join(" " * (column + 2) + text + "\n" for text in texts) + " " * column + ")"
        if isinstance(value, np.dtype):
            return value.name
        return repr(value)
