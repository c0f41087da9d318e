"""The op table: each StableHLO, CHLO, func or Shardy op name and the meshjit ops it becomes.

Elementwise ops map by name (``_ELEMENTWISE``); the others have a function that reads the
statement's attributes and emits meshjit ops (regions, collectives and custom calls live in
ops_regions.py). An op missing here is a ParseError naming it and its line.
"""

from __future__ import annotations

import numpy as np
from lark import Token

from ..core import DenseAttr, Value
from .builder import Builder, Scope
from .statements import OpStmt, collect_entries
from .syntax import Group, is_token, split_commas
from .values import dense_array, int_list, single_int
from ..dtypes import kind_of

# StableHLO/CHLO name -> (meshjit name, fixed attributes)
_ELEMENTWISE = {
    "stablehlo.add": ("add", {}), "stablehlo.subtract": ("sub", {}), "stablehlo.multiply": ("mul", {}),
    "stablehlo.divide": ("div", {}), "stablehlo.remainder": ("rem", {}), "stablehlo.maximum": ("max", {}),
    "stablehlo.minimum": ("min", {}), "stablehlo.power": ("pow", {}), "stablehlo.atan2": ("atan2", {}),
    "stablehlo.and": ("and", {}), "stablehlo.or": ("or", {}), "stablehlo.xor": ("xor", {}),
    "stablehlo.shift_left": ("shift_left", {}),
    "stablehlo.shift_right_arithmetic": ("shift_right_arithmetic", {}),
    "stablehlo.shift_right_logical": ("shift_right_logical", {}),
    "stablehlo.negate": ("neg", {}), "stablehlo.abs": ("abs", {}), "stablehlo.sign": ("sign", {}),
    "stablehlo.exponential": ("exp", {}), "stablehlo.exponential_minus_one": ("expm1", {}),
    "stablehlo.log": ("log", {}), "stablehlo.log_plus_one": ("log1p", {}), "stablehlo.tanh": ("tanh", {}),
    "stablehlo.logistic": ("logistic", {}), "stablehlo.sine": ("sin", {}), "stablehlo.cosine": ("cos", {}),
    "stablehlo.tan": ("tan", {}), "stablehlo.sqrt": ("sqrt", {}), "stablehlo.rsqrt": ("rsqrt", {}),
    "stablehlo.cbrt": ("cbrt", {}), "stablehlo.floor": ("floor", {}), "stablehlo.ceil": ("ceil", {}),
    "stablehlo.is_finite": ("is_finite", {}), "stablehlo.not": ("not", {}),
    "stablehlo.round_nearest_afz": ("round", {"rounding_method": "away_from_zero"}),
    "stablehlo.round_nearest_even": ("round", {"rounding_method": "to_nearest_even"}),
    "stablehlo.select": ("select", {}), "stablehlo.clamp": ("clamp", {}),
    "chlo.erf": ("erf", {}), "chlo.erf_inv": ("erf_inv", {}), "chlo.tan": ("tan", {}),
    "chlo.next_after": ("nextafter", {}),
    "stablehlo.optimization_barrier": ("optimization_barrier", {}),
    "stablehlo.real": ("real", {}), "stablehlo.imag": ("imag", {}), "stablehlo.complex": ("complex", {}),
}
_DIRECTIONS = {"EQ": "eq", "NE": "ne", "LT": "lt", "LE": "le", "GT": "gt", "GE": "ge"}


class Context:
    """One op being mapped: its statement, operands, declared types, and where to emit."""

    def __init__(self, importer, op: OpStmt, scope: Scope, builder: Builder):
        self.importer, self.op, self.scope, self.b = importer, op, scope, builder

    def operands(self) -> list:
        return [self.scope.lookup(token) for token in self.op.operand_tokens()]

    def result_types(self):
        return self.op.types()[1]

    def ints(self, name: str) -> tuple[int, ...]:
        return int_list(self.op.require(name), self.op)

    def int(self, name: str) -> int:
        return single_int(self.op.require(name), self.op)


def map_op(importer, op: OpStmt, scope: Scope, builder: Builder) -> tuple:
    """The values op ``op`` defines, after emitting its meshjit ops into ``builder``."""
    from .ops_regions import REGION_TABLE

    context = Context(importer, op, scope, builder)
    if op.name in _ELEMENTWISE:
        name, attrs = _ELEMENTWISE[op.name]
        return builder.emit(name, context.operands(), attrs)
    rule = _TABLE.get(op.name) or REGION_TABLE.get(op.name)
    if rule is None:
        op.fail("this op has no meshjit counterpart in the importer (see docs/stablehlo.md for the ops "
                "it maps)")
    return tuple(rule(context))


def _constant(c: Context):
    array = dense_array(c.op.body + (Token("PUNCT", ":"),) + c.op.signature, c.op)
    value = c.b.emit1("constant", [], {"value": DenseAttr.from_array(array)})
    c.b.facts.constants[value.id] = array
    return (value,)


def _iota(c: Context):
    (type_,) = c.result_types()
    dimension = c.int("dim")
    value = c.b.emit1("iota", [], {"dtype": type_.dtype, "shape": type_.shape, "dimension": dimension})
    c.b.facts.iotas[value.id] = dimension
    return (value,)


def _compare(c: Context):
    direction = next((str(item) for item in c.op.body if is_token(item, "WORD") and str(item) in _DIRECTIONS),
                     None)
    if direction is None:
        c.op.fail("expected a comparison direction (EQ, NE, LT, LE, GT, GE)")
    if any(is_token(item, "WORD", "TOTALORDER") for item in c.op.body):
        c.op.fail("compares in TOTALORDER (NaN and -0.0 ordered), which is read only inside sort "
                  "comparators; meshjit's compare is IEEE's")
    return c.b.emit("compare", c.operands(), {"direction": _DIRECTIONS[direction]})


def _convert(c: Context):
    (operand,) = c.operands()
    (type_,) = c.result_types()
    if operand.type == type_:
        return (operand,)
    return c.b.emit("convert", [operand], {"new_dtype": type_.dtype})


def _bitcast(c: Context):
    (type_,) = c.result_types()
    return c.b.emit("bitcast_convert_type", c.operands(), {"new_dtype": type_.dtype})


def _square(c: Context):
    (operand,) = c.operands()
    return c.b.emit("mul", [operand, operand])


def broadcast(b: Builder, value: Value, shape, dims) -> Value:
    """``broadcast_in_dim`` whose dims may be out of order (meshjit's increase): a transpose
    first puts the operand's dims in the order they take in the result."""
    dims = tuple(dims)
    if list(dims) != sorted(dims):
        order = sorted(range(len(dims)), key=lambda index: dims[index])
        value = b.emit1("transpose", [value], {"permutation": tuple(order)})
        dims = tuple(sorted(dims))
    if value.type.shape == tuple(shape) and dims == tuple(range(len(shape))):
        return value
    return b.emit1("broadcast_in_dim", [value], {"shape": tuple(shape), "broadcast_dimensions": dims})


def _broadcast_in_dim(c: Context):
    (operand,) = c.operands()
    (type_,) = c.result_types()
    return (broadcast(c.b, operand, type_.shape, c.ints("dims")),)


def _reshape(c: Context):
    (type_,) = c.result_types()
    return c.b.emit("reshape", c.operands(), {"new_sizes": type_.shape})


def _transpose(c: Context):
    return c.b.emit("transpose", c.operands(), {"permutation": c.ints("dims")})


def _slice(c: Context):
    ranges = next((item for item in c.op.body if isinstance(item, Group) and item.kind == "bracket"), None)
    if ranges is None:
        starts, limits = c.ints("start_indices"), c.ints("limit_indices")
        strides = c.ints("strides") if c.op.attr("strides") else (1,) * len(starts)
    else:
        starts, limits, strides = [], [], []
        for part in split_commas(ranges.items):
            numbers = [int(item) for item in part if is_token(item, "INT")]
            starts.append(numbers[0])
            limits.append(numbers[1])
            strides.append(numbers[2] if len(numbers) > 2 else 1)
    return c.b.emit("slice", c.operands(),
                    {"start_indices": tuple(starts), "limit_indices": tuple(limits), "strides": tuple(strides)})


def _dynamic_slice(c: Context):
    return c.b.emit("dynamic_slice", c.operands(), {"slice_sizes": c.ints("sizes")})


def _dynamic_update_slice(c: Context):
    return c.b.emit("dynamic_update_slice", c.operands())


def _pad(c: Context):
    config = tuple(zip(c.ints("low"), c.ints("high"), c.ints("interior")))
    return c.b.emit("pad", c.operands(), {"padding_config": tuple(tuple(row) for row in config)})


def _concatenate(c: Context):
    return c.b.emit("concatenate", c.operands(), {"dimension": c.int("dim")})


def _reverse(c: Context):
    return c.b.emit("rev", c.operands(), {"dimensions": c.ints("dims")})


def _dims_pair(value, op) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``[0, 1] x [0, 1]`` as two tuples."""
    lists = [item for item in value if isinstance(item, Group) and item.kind == "bracket"]
    if len(lists) != 2:
        op.fail("expected dims such as [1] x [0]")
    return tuple(int_list((lists[0],), op)), tuple(int_list((lists[1],), op))


def _dot_general(c: Context):
    lhs, rhs = c.operands()
    (type_,) = c.result_types()
    attrs = c.op.attrs()
    contracting = _dims_pair(attrs.get("contracting_dims", ()), c.op) if "contracting_dims" in attrs else ((), ())
    batch = _dims_pair(attrs["batching_dims"], c.op) if "batching_dims" in attrs else ((), ())
    if "dot_dimension_numbers" in attrs:
        c.op.fail("the generic #stablehlo.dot<...> form is not read; JAX prints the pretty form")
    new = {"contracting_dims": contracting, "batch_dims": batch}
    if type_.dtype != lhs.type.dtype:
        new["preferred_element_type"] = type_.dtype
    return c.b.emit("dot_general", [lhs, rhs], new)


def _call(c: Context):
    return c.importer.call(c.op, c.operands(), c.scope, c.b)


def _sharding_constraint(c: Context):
    from .values import sdy_sharding

    (operand,) = c.operands()
    group = next((item for item in c.op.body if isinstance(item, Group) and item.kind == "angle"), None)
    if group is None:
        c.op.fail("expected a sharding <@mesh, [...]>")
    return c.b.emit("sharding_constraint", [operand], {"sharding": sdy_sharding(group)})


def _top_k(c: Context):
    found: dict = {}
    for item in c.op.body:
        if isinstance(item, Group) and item.kind == "paren":
            collect_entries(item.items, found)
    if "k" not in found:
        c.op.fail("expected chlo.top_k(%x, k = n)")
    return c.b.emit("top_k", c.operands(), {"k": single_int(found["k"], c.op)})


def _fft(c: Context):
    # stablehlo.fft %x, type = FFT, length = [8]
    fft_type = c.op.require("type")
    if not fft_type or str(fft_type[0]) not in ("FFT", "IFFT", "RFFT", "IRFFT"):
        c.op.fail("expected type = FFT, IFFT, RFFT or IRFFT")
    return c.b.emit("fft", c.operands(), {"fft_type": str(fft_type[0]), "fft_lengths": c.ints("length")})


def _convolution(c: Context):
    from .ops_windows import convolution

    return convolution(c)


_TABLE = {
    "stablehlo.constant": _constant, "stablehlo.iota": _iota, "stablehlo.compare": _compare,
    "stablehlo.convert": _convert, "stablehlo.bitcast_convert": _bitcast, "chlo.square": _square,
    "stablehlo.broadcast_in_dim": _broadcast_in_dim, "stablehlo.reshape": _reshape,
    "stablehlo.transpose": _transpose, "stablehlo.slice": _slice, "stablehlo.dynamic_slice": _dynamic_slice,
    "stablehlo.dynamic_update_slice": _dynamic_update_slice, "stablehlo.pad": _pad,
    "stablehlo.concatenate": _concatenate, "stablehlo.reverse": _reverse,
    "stablehlo.dot_general": _dot_general, "func.call": _call, "call": _call,
    "sdy.sharding_constraint": _sharding_constraint, "chlo.top_k": _top_k,
    "stablehlo.convolution": _convolution, "stablehlo.fft": _fft,
}


def known_ops() -> list[str]:
    """Every op name the importer maps (for the docs and tests)."""
    from .ops_regions import REGION_TABLE

    return sorted(set(_ELEMENTWISE) | set(_TABLE) | set(REGION_TABLE))


def identity_of(b: Builder, value: Value, kind: str) -> bool:
    """Whether ``value`` is the constant identity of reduction ``kind`` (add, max, min, ...)."""
    array = b.facts.constants.get(value.id)
    if array is None or array.size != 1:
        return False
    element = array.reshape(-1)[0]
    identities = {"sum": 0, "prod": 1, "and": True, "or": False}
    if kind in identities:
        return element == identities[kind]
    if kind == "max":
        return bool(element == (-np.inf if kind_of(array.dtype) == "f" else np.iinfo(array.dtype).min)) \
            if array.dtype.kind != "b" else not element
    if kind == "min":
        return bool(element == (np.inf if kind_of(array.dtype) == "f" else np.iinfo(array.dtype).max)) \
            if array.dtype.kind != "b" else bool(element)
    return False
