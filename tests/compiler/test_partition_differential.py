"""Differential tests of the partitioner: every global op under a table of shardings on the meshes
(2,), (2,2), (2,4) and (8,), each per-device program run against the unsharded one.

RECORDS is the one op table: an op, its operand types and attributes, and the layouts worth
trying beyond the generic ones (replicated, each dim on each axis, two axes on one dim). A case
builds the one-op program with the IR core, propagates, partitions, verifies, runs both through
the numpy interpreter and compares. Dims that do not divide their axes reach the op through a
``sharding_constraint`` (function arguments must divide).
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from meshjit.compiler.passes.partition import partition
from meshjit.compiler.passes.propagate_shardings import propagate_shardings
from meshjit.compiler.pipeline import normalize_boundaries
from meshjit.compiler.sharding_rules import ELEMENTWISE
from meshjit.ir import (
    AxisRef,
    Block,
    DimSharding,
    DenseAttr,
    Func,
    MeshAttr,
    Module,
    Op,
    TensorSharding,
    TensorType,
    Value,
    infer_result_types,
    interpret,
    verify,
)
from meshjit.ir.dtypes import to_numpy
from meshjit.ir.layout import shard_array, unshard_array

MESHES = {
    "2": MeshAttr((("x", 2),)),
    "2x2": MeshAttr((("x", 2), ("y", 2))),
    "2x4": MeshAttr((("x", 2), ("y", 4))),
    "8": MeshAttr((("x", 8),)),
}
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "collective_permute")


# --- operand values ------------------------------------------------------------------------------

def normal(rng, shape, dtype):
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype in ("i32", "i64"):
        return rng.integers(-5, 5, shape).astype(to_numpy(dtype))
    return rng.standard_normal(shape).astype(to_numpy(dtype))


def positive(rng, shape, dtype):
    return rng.uniform(0.25, 2.0, shape).astype(to_numpy(dtype))


def near_one(rng, shape, dtype):
    return rng.uniform(0.5, 1.5, shape).astype(to_numpy(dtype))


def integers(low: int, high: int):
    """Integers in [low, high): start indices and gather indices, some out of range."""
    def generate(rng, shape, dtype):
        return rng.integers(low, high, shape).astype(to_numpy(dtype))
    return generate


@dataclass(frozen=True)
class Operand:
    """An operand's type (``"f32[8,6]"``) and how its test values are drawn."""

    text: str
    values: Callable = normal

    @property
    def type(self) -> TensorType:
        dtype, dims = re.fullmatch(r"(\w+)\[([\d,]*)\]", self.text).groups()
        return TensorType(tuple(int(size) for size in dims.split(",") if size), dtype)


# --- layouts and cases ---------------------------------------------------------------------------

AXIS = re.compile(r"([a-z])(?:\((\d+)\)(\d+))?")


def layout(text: str, mesh_name: str = "mesh") -> TensorSharding:
    """``"x,-"``: dim 0 on axis x, dim 1 replicated; ``"xy"``: one dim on x then y; ``""``: 0-d;
    ``"y(1)2"``: the sub-axis ``"y":(1)2`` (Shardy's notation)."""
    dims = [] if text == "" else text.split(",")
    axes = [[AxisRef(name, int(pre), int(size)) if size else AxisRef(name)
             for name, pre, size in AXIS.findall(dim)] for dim in dims]
    return TensorSharding(mesh_name, tuple(DimSharding(tuple(dim_axes)) for dim_axes in axes))


def axes_of(text: str | None) -> set[str]:
    return set() if text is None else {name for name, _, _ in AXIS.findall(text)}


@dataclass(frozen=True)
class Case:
    """Layouts of the operands (None: left to propagation) and of the result (None: free).

    ``collectives`` lists the collective kinds the partitioned program must contain, exactly;
    ``meshes`` restricts the case to some meshes (sub-axes exist only on some); ``pinned`` is
    the op's own result sharding, a user sharding propagation keeps even where it does not divide
    (propagation itself never makes one that does not).
    """

    operands: tuple[str | None, ...]
    output: str | None = None
    collectives: tuple[str, ...] | None = None
    meshes: tuple[str, ...] | None = None
    pinned: str | None = None

    @property
    def axes(self) -> set[str]:
        return set().union(*(axes_of(text) for text in self.operands + (self.output,)))

    @property
    def name(self) -> str:
        text = "".join(f"[{operand}]" if operand is not None else "[?]" for operand in self.operands)
        text += f"=[{self.pinned}]" if self.pinned is not None else ""
        return text + (f"->[{self.output}]" if self.output is not None else "")


def same(text: str | None, count: int) -> tuple[str | None, ...]:
    return (text,) * count


@dataclass(frozen=True)
class Record:
    """One op of the table: operands, attributes, extra cases, and how many cases a mesh samples."""

    op: str
    label: str
    operands: tuple[Operand, ...]
    attrs: dict = field(default_factory=dict)
    cases: tuple[Case, ...] = ()
    generic: bool = True
    samples: int = 3
    pin: bool = False

    @property
    def id(self) -> str:
        return f"{self.op}-{self.label}" if self.label else self.op


def record(op: str, label: str, operands, attrs=None, cases=(), **options) -> Record:
    if op in ELEMENTWISE and op != "sharding_constraint":
        options.setdefault("pin", True)
    operands = tuple(item if isinstance(item, Operand) else Operand(item) for item in operands)
    return Record(op, label, operands, dict(attrs or {}), tuple(cases), **options)


def generic_cases(record: Record) -> list[Case]:
    """Operand 0 replicated, each dim on each axis, two axes on dim 0; operands of operand 0's
    type follow it, the others are left to propagation. With ``pin`` the result is pinned to
    operand 0's layout, so that ops run on uneven shards too."""
    if not record.operands:
        return []
    first = record.operands[0].type
    texts = ["-" * 1 if first.rank == 1 else ",".join("-" * first.rank)] if first.rank else []
    for axis in ("x", "y"):
        for dim in range(first.rank):
            texts.append(",".join(axis if d == dim else "-" for d in range(first.rank)))
    if first.rank:
        texts.append(",".join("xy" if d == 0 else "-" for d in range(first.rank)))
    cases = []
    for text in texts:
        operands = tuple(text if operand.type == first else None for operand in record.operands)
        cases.append(Case(operands, pinned=text if record.pin else None))
    return cases


# --- the op table --------------------------------------------------------------------------------

F = "f32[8,6]"
I = "i32[8,6]"
B = "bool[8,6]"
UNEVEN = "f32[6,10]"
INDEX = Operand("i32[]", integers(-2, 10))

UNARY_FLOAT = ["exp", "exp2", "expm1", "tanh", "logistic", "sin", "cos", "tan", "cbrt", "floor", "ceil", "erf", "is_finite", "neg", "abs", "sign"]
POSITIVE_UNARY = ["log", "log1p", "sqrt", "rsqrt"]
BINARY_FLOAT = ["add", "sub", "mul", "div", "rem", "max", "min", "atan2"]
BINARY_INT = ["add", "sub", "mul", "div", "rem", "max", "min", "and", "or", "xor"]
SHIFTS = ["shift_left", "shift_right_arithmetic", "shift_right_logical"]
DIRECTIONS = ["eq", "ne", "lt", "le", "gt", "ge"]


def elementwise_records() -> list[Record]:
    records = [record(name, "", [F], samples=1) for name in UNARY_FLOAT]
    records += [record(name, "", [Operand(F, positive)], samples=1) for name in POSITIVE_UNARY]
    records += [record("round", "even", [F], {"rounding_method": "to_nearest_even"}, samples=1)]
    records += [record(name, "f32", [F, F], samples=1) for name in BINARY_FLOAT]
    records += [record(name, "i32", [I, I], samples=1) for name in BINARY_INT]
    records += [record(name, "bool", [B, B], samples=1) for name in ("and", "or", "xor")]
    records += [record(name, "", [I, Operand(I, integers(-2, 40))], samples=1) for name in SHIFTS]
    records += [record("compare", direction, [I, I], {"direction": direction}, samples=1)
                for direction in DIRECTIONS]
    records += [
        record("pow", "", [Operand(F, positive), F], samples=1),
        record("neg", "i32", [I], samples=1),
        record("not", "bool", [B], samples=1),
        record("not", "i32", [I], samples=1),
        record("add", "uneven", [UNEVEN, UNEVEN], samples=4),
        record("mul", "", [F, F], cases=[Case(("x,-", "-,x")), Case(("x,-", "-,y")), Case(("xy,-", "yx,-"))],
               samples=4),
        record("select", "", [B, F, F], cases=[Case(("x,-", "-,x", None))], samples=4),
        record("select", "scalar_predicate", ["bool[]", F, F], samples=2),
        record("clamp", "", [F, F, F], samples=2),
        record("clamp", "scalar_bounds", ["f32[]", F, "f32[]"],
               cases=[Case(("", "x,-", "")), Case(("", "-,y", ""))], samples=3),
        record("convert", "f32_to_i32", [F], {"new_dtype": "i32"}, samples=2),
        record("convert", "i32_to_f32", [I], {"new_dtype": "f32"}, samples=2),
        record("convert", "f32_to_bool", [F], {"new_dtype": "bool"}, samples=1),
        record("integer_pow", "cube", [F], {"y": 3}, samples=2),
        record("integer_pow", "inverse_square", [Operand(F, positive)], {"y": -2}, samples=1),
    ]
    return records


def creation_records() -> list[Record]:
    outputs = ["x,-", "-,x", "-,y", "xy,-", "y,x"]
    rng = np.random.default_rng(7)
    constant = DenseAttr.from_array(rng.standard_normal((6, 10)).astype(np.float32))
    return [
        record("iota", "dim0", [], {"dtype": "i32", "shape": (8, 6), "dimension": 0},
               [Case((), output) for output in outputs], generic=False),
        record("iota", "dim1_f32", [], {"dtype": "f32", "shape": (8, 6), "dimension": 1},
               [Case((), output) for output in outputs], generic=False),
        record("iota", "uneven", [], {"dtype": "i32", "shape": (6, 10), "dimension": 1},
               [Case((), output) for output in outputs], generic=False),
        record("constant", "uneven", [], {"value": constant},
               [Case((), output) for output in outputs], generic=False),
    ]


def layout_records() -> list[Record]:
    return [
        record("broadcast_in_dim", "new_dim", ["f32[6]"], {"shape": (8, 6), "broadcast_dimensions": (1,)},
               [Case((None,), "x,-"), Case((None,), "xy,y")]),
        record("broadcast_in_dim", "stretch", ["f32[1,6]"], {"shape": (8, 6), "broadcast_dimensions": (0, 1)},
               [Case((None,), "x,y"), Case(("-,x",), "x,-")]),
        record("broadcast_in_dim", "scalar", ["f32[]"], {"shape": (6, 10), "broadcast_dimensions": ()},
               [Case((None,), "y,x"), Case((None,), "x,-")], generic=False),
        record("reshape", "split", [F], {"new_sizes": (2, 4, 6)}),
        record("reshape", "merge", ["f32[2,4,6]"], {"new_sizes": (8, 6)}, [Case(("x,y,-",))]),
        record("reshape", "flatten", [F], {"new_sizes": (48,)}, [Case(("x,y",)), Case(("-,x",))]),
        record("reshape", "unflatten", ["f32[48]"], {"new_sizes": (8, 6)}, [Case(("-",), "-,x")]),
        record("reshape", "unaligned", ["f32[6,5]"], {"new_sizes": (5, 6)}),
        record("transpose", "2d", [F], {"permutation": (1, 0)}, [Case(("x,y",))]),
        record("transpose", "3d", ["f32[2,4,6]"], {"permutation": (2, 0, 1)}, [Case(("x,y,-",))]),
        record("slice", "strided", [F], {"start_indices": (1, 0), "limit_indices": (7, 6), "strides": (2, 1)},
               [Case(("-,x",))]),
        record("slice", "other_dim", [F], {"start_indices": (0, 1), "limit_indices": (8, 5), "strides": (1, 1)},
               [Case(("x,-",)), Case(("xy,-",))]),
        record("slice", "uneven", [UNEVEN], {"start_indices": (2, 0), "limit_indices": (6, 9), "strides": (3, 2)}),
        record("dynamic_slice", "rows", [F, INDEX, INDEX], {"slice_sizes": (3, 6)}, [Case(("-,x", None, None))]),
        record("dynamic_slice", "block", [F, INDEX, INDEX], {"slice_sizes": (8, 2)}),
        record("dynamic_update_slice", "rows", [F, "f32[3,6]", INDEX, INDEX], cases=[
            Case(("-,x", "-,x", None, None)), Case(("x,-", "-,y", None, None))]),
        record("pad", "interior", [F, "f32[]"], {"padding_config": ((1, 2, 0), (0, 0, 1))}),
        record("pad", "negative", [F, "f32[]"], {"padding_config": ((-1, 2, 1), (0, -1, 0))}),
        record("pad", "one_dim", [F, "f32[]"], {"padding_config": ((0, 0, 0), (2, 1, 0))}),
        record("concatenate", "dim0", [F, "f32[4,6]"], {"dimension": 0}, [Case(("-,x", "-,y"))]),
        record("concatenate", "dim1", [F, "f32[8,2]", "f32[8,4]"], {"dimension": 1},
               [Case(("x,-", "y,-", None))]),
        record("rev", "dim0", [F], {"dimensions": (0,)}),
        record("rev", "both", [UNEVEN], {"dimensions": (0, 1)}),
        record("squeeze", "", ["f32[8,1,6]"], {"dimensions": (1,)}),
        record("expand_dims", "", [F], {"dimensions": (1,)}),
    ]


def dot(lhs: str, rhs: str, contracting, batch=((), ())) -> dict:
    return {"contracting_dims": contracting, "batch_dims": batch}


MATMUL = {"contracting_dims": ((1,), (0,)), "batch_dims": ((), ())}
BATCHED = {"contracting_dims": ((2,), (1,)), "batch_dims": ((0,), (0,))}
TWO_CONTRACTING = {"contracting_dims": ((1, 2), (0, 1)), "batch_dims": ((), ())}


def contraction_records() -> list[Record]:
    contracted = [
        Case(("-,x", "x,-")),
        Case(("-,x", None)),
        Case(("x,-", "-,y")),
        Case(("y,x", "x,-")),
        Case(("-,xy", "xy,-")),
        Case(("-,x", "x,-"), "x,-", ("reduce_scatter",)),
        Case(("-,x", "x,-"), "-,-", ("all_reduce",)),
    ]
    return [
        record("dot_general", "matmul", [F, "f32[6,4]"], MATMUL, contracted, samples=5),
        record("dot_general", "matmul_uneven", ["f32[8,10]", "f32[10,4]"], MATMUL, contracted, samples=5),
        record("dot_general", "matmul_i32", [I, "i32[6,4]"], MATMUL, contracted[:3], samples=2),
        record("dot_general", "batched", ["f32[2,8,6]", "f32[2,6,4]"], BATCHED,
               [Case(("x,-,y", "x,y,-")), Case(("x,y,-", "-,-,y")), Case(("-,-,x", "-,x,-"), "-,x,-")],
               samples=4),
        record("dot_general", "two_contracting", ["f32[4,2,6]", "f32[2,6,4]"], TWO_CONTRACTING,
               [Case(("-,x,y", "x,y,-")), Case(("-,-,x", "-,x,-"))], samples=3),
    ]


def reduction_records() -> list[Record]:
    records = []
    for name in ("reduce_sum", "reduce_max", "reduce_min"):
        records += [record(name, "dim0", [F], {"axes": (0,)}, samples=2),
                    record(name, "uneven", [UNEVEN], {"axes": (1,)}, samples=3),
                    record(name, "all", [UNEVEN], {"axes": (0, 1)}, [Case(("x,y",)), Case(("y,x",))], samples=3)]
    records += [
        record("reduce_max", "i32", [I], {"axes": (1,)}, samples=2),
        record("reduce_prod", "", [Operand(F, near_one)], {"axes": (0,)}, samples=3),
        record("reduce_and", "", [B], {"axes": (1,)}, samples=2),
        record("reduce_or", "", ["bool[6,10]"], {"axes": (0,)}, samples=3),
    ]
    for name in ("argmax", "argmin"):
        records += [record(name, "dim0", [I], {"axis": 0, "index_dtype": "i32"}, samples=2),
                    record(name, "uneven", ["i32[6,10]"], {"axis": 1, "index_dtype": "i32"}, samples=3)]
    for name, values in (("cumsum", normal), ("cumprod", near_one), ("cummax", normal), ("cummin", normal)):
        records += [record(name, "", [Operand(F, values)], {"axis": 0, "reverse": False}, samples=2),
                    record(name, "reverse", [Operand(UNEVEN, values)], {"axis": 1, "reverse": True}, samples=2)]
    records += [
        record("cumsum", "i32", [I], {"axis": 1, "reverse": False}, samples=2),
        record("sort", "", [F], {"dimension": 0, "is_stable": True, "num_keys": 1}),
        record("sort", "key_value", [I, F], {"dimension": 1, "is_stable": True, "num_keys": 1},
               [Case(("x,-", "-,x"))]),
        record("sort", "two_keys", ["i32[6,10]", "i32[6,10]", "f32[6,10]"],
               {"dimension": 0, "is_stable": False, "num_keys": 2}),
        record("gather", "clip", [F, Operand("i32[5]", integers(-3, 11))], {"axis": 0, "mode": "clip"},
               [Case(("-,x", "x")), Case((None, "x"))]),
        record("gather", "fill", [UNEVEN, Operand("i32[2,3]", integers(-3, 13))], {"axis": 1, "mode": "fill"},
               [Case(("x,-", "-,x")), Case(("y,-", "x,-"))]),
    ]
    return records


# every layout of a 2-d value per mesh, sub-axes included where an axis splits
LAYOUTS_2D = {
    "2": ["-,-", "x,-", "-,x"],
    "2x2": ["-,-", "x,-", "y,-", "xy,-", "yx,-", "-,x", "-,y", "-,xy", "-,yx", "x,y", "y,x"],
    "2x4": ["-,-", "x,-", "y,-", "xy,-", "yx,-", "-,x", "-,y", "-,xy", "-,yx", "x,y", "y,x",
            "y(1)2,y(2)2", "y(2)2,y(1)2", "xy(1)2,y(2)2", "y(2)2,x", "y(1)2,-", "-,y(2)2x"],
    "8": ["-,-", "x,-", "-,x", "x(1)2,x(2)4", "x(1)4,x(4)2", "x(2)4,x(1)2", "x(1)2,-", "-,x(1)4"],
}


def reshard_matrix() -> list[Case]:
    """Every source layout to every target layout, per mesh."""
    return [Case((source,), target, meshes=(mesh_name,))
            for mesh_name, layouts in LAYOUTS_2D.items() for source in layouts for target in layouts
            if source != target]


def constraint_records() -> list[Record]:
    """Reshards forced by a sharding_constraint, and the collectives each one needs."""
    square, uneven = "f32[8,8]", UNEVEN
    return [
        record("sharding_constraint", "matrix", [square], cases=reshard_matrix(), generic=False, samples=1000),
        record("sharding_constraint", "matrix_uneven", [uneven], cases=reshard_matrix(), generic=False,
               samples=1000),
        record("sharding_constraint", "square", [square], cases=[
            Case(("x,-",), "-,x", ("all_to_all",)),
            Case(("-,-",), "x,-", ()),
            Case(("x,-",), "-,-", ("all_gather",)),
            Case(("x,-",), "xy,-", ()),
            Case(("x,y",), "y,x"),
            Case(("xy,-",), "x,-", ("all_gather",)),
            Case(("xy,-",), "yx,-"),
            Case(("x,-",), "y,-"),
            Case(("-,x",), "x,y"),
        ], generic=False, samples=9),
        record("sharding_constraint", "uneven", [uneven], cases=[
            Case(("-,-",), "x,-"), Case(("-,-",), "-,xy"), Case(("x,-",), "-,x"), Case(("x,y",), "-,-"),
            Case(("-,x",), "y,x"), Case(("x,-",), "xy,-"),
        ], generic=False, samples=6),
    ]


RECORDS = (elementwise_records() + creation_records() + layout_records() + contraction_records()
           + reduction_records() + constraint_records())


def cases_for(record: Record, mesh_name: str) -> list[Case]:
    """The record's extra cases, then a rotating sample of the generic ones, that fit the mesh."""
    axes = set(MESHES[mesh_name].axis_names)
    extra = [case for case in record.cases
             if case.axes <= axes and (case.meshes is None or mesh_name in case.meshes)]
    generic = [case for case in generic_cases(record) if case.axes <= axes] if record.generic else []
    start = zlib.crc32(f"{record.id}-{mesh_name}".encode()) % max(len(generic), 1)
    rotated = generic[start:] + generic[:start]
    return (extra + rotated)[:max(record.samples, len(extra))]


def all_cases():
    for record in RECORDS:
        for mesh_name in MESHES:
            for case in cases_for(record, mesh_name):
                yield pytest.param(record, mesh_name, case, id=f"{record.id}-{mesh_name}-{case.name}")


# --- building, partitioning and running ---------------------------------------------------------

def divides(shape, sharding: TensorSharding, mesh: MeshAttr) -> bool:
    return all(size % shards == 0 for size, shards in zip(shape, sharding.dim_shards(mesh)))


class ProgramBuilder:
    """A global function over mesh ``@mesh`` built op by op with the IR core."""

    def __init__(self, mesh: MeshAttr):
        self.mesh = mesh
        self.args: list[Value] = []
        self.arg_shardings: list[TensorSharding | None] = []
        self.ops: list[Op] = []

    def emit(self, name: str, operands, attrs, pinned: str | None = None) -> list[Value]:
        """Append an op; ``pinned`` is the layout of its first result, as a user sharding."""
        types = infer_result_types(name, [value.type for value in operands], attrs, meshes={"mesh": self.mesh})
        results = [Value.fresh(result_type) for result_type in types]
        shardings = () if pinned is None else (layout(pinned),) + (None,) * (len(results) - 1)
        self.ops.append(Op(name, tuple(operands), tuple(results), attrs, shardings=shardings))
        return results

    def constrain(self, value: Value, text: str) -> Value:
        return self.emit("sharding_constraint", [value], {"sharding": layout(text)})[0]

    def argument(self, value_type: TensorType, text: str | None) -> Value:
        """An argument laid out as ``text``: on the argument when its dims divide, else through a
        constraint on a replicated argument."""
        arg = Value.fresh(value_type)
        self.args.append(arg)
        if text is None:
            self.arg_shardings.append(None)
            return arg
        sharding = layout(text)
        whole_axes = not any(axis.is_sub_axis for axis in sharding.used_axes())
        if whole_axes and divides(value_type.shape, sharding, self.mesh):
            self.arg_shardings.append(sharding)
            return arg
        self.arg_shardings.append(TensorSharding.replicated_over("mesh", value_type.rank))
        return self.constrain(arg, text)

    def module(self, returns) -> Module:
        func = Func("main", Block(tuple(self.args), tuple(self.ops), tuple(returns)), tuple(self.arg_shardings))
        return Module((("mesh", self.mesh),), (func,))


def build_case(record: Record, mesh_name: str, case: Case) -> Module:
    builder = ProgramBuilder(MESHES[mesh_name])
    operands = [builder.argument(operand.type, text) for operand, text in zip(record.operands, case.operands)]
    attrs = dict(record.attrs)
    if record.op == "sharding_constraint":
        attrs["sharding"] = layout(case.output)
    results = builder.emit(record.op, operands, attrs, case.pinned)
    if case.output is not None and record.op != "sharding_constraint":
        results[0] = builder.constrain(results[0], case.output)
    return builder.module(results)


def operand_values(record: Record, test_id: str) -> list[np.ndarray]:
    rng = np.random.default_rng(zlib.crc32(test_id.encode()))
    return [np.asarray(operand.values(rng, operand.type.shape, operand.type.dtype)) for operand in record.operands]


def assert_same(got: np.ndarray, expected: np.ndarray, what: str) -> None:
    assert got.dtype == expected.dtype, f"{what}: dtype {got.dtype}, expected {expected.dtype}"
    if expected.dtype.kind == "f":
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6, err_msg=what)
    else:
        np.testing.assert_array_equal(got, expected, err_msg=what)


def partition_and_compare(module: Module, arrays) -> Module:
    """Propagate, partition and verify ``module``, then check the per-device run against it.
    Padding is poisoned with NaN so that any padding that leaks into a result shows."""
    propagated = normalize_boundaries(propagate_shardings(module))
    partitioned = partition(propagated, poison_padding=True)
    verify(partitioned)
    mesh = partitioned.mesh(partitioned.main.spmd_mesh)
    expected = interpret(module, *arrays)
    stacked = [shard_array(array, sharding, mesh) for array, sharding in zip(arrays, partitioned.main.arg_shardings)]
    outputs = interpret(partitioned, *stacked)
    for index, (output, sharding, value) in enumerate(zip(outputs, partitioned.main.result_shardings,
                                                          module.main.returns)):
        got = unshard_array(output, sharding, mesh, value.type.shape)
        assert_same(got, expected[index], f"result {index}")
    return partitioned


def collective_kinds(module: Module) -> Counter:
    return Counter(op.name for op in module.main.body.ops if op.name in COLLECTIVES)


@pytest.mark.parametrize("record, mesh_name, case", list(all_cases()))
def test_partitioned_op_matches_unsharded(record: Record, mesh_name: str, case: Case, request):
    module = build_case(record, mesh_name, case)
    partitioned = partition_and_compare(module, operand_values(record, request.node.callspec.id))
    if case.collectives is not None:
        assert sorted(collective_kinds(partitioned).elements()) == sorted(case.collectives)


# --- never replicate silently ---------------------------------------------------------------------

LOCAL_SHAPES = [
    # (record, mesh, case, op that must run on local shards, its per-device result shape)
    (record("add", "", ["f32[8,8]", "f32[8,8]"]), "8", Case(("x,-", "x,-")), "add", (1, 8)),
    (record("add", "uneven", [UNEVEN, UNEVEN]), "2x4", Case(("-,xy", "-,xy"), pinned="-,xy"), "add", (6, 2)),
    (record("exp", "", [F]), "2x4", Case(("x,y",), pinned="x,y"), "exp", (4, 2)),
    (record("exp", "", [F]), "2x4", Case(("x,-",)), "exp", (4, 6)),
    (record("dot_general", "rows", [F, "f32[6,4]"], MATMUL), "2", Case(("x,-", None)), "dot_general", (4, 4)),
    (record("dot_general", "both", ["f32[8,8]", "f32[8,4]"], MATMUL), "2x4", Case(("x,y", "y,-")),
     "dot_general", (4, 4)),
    (record("dot_general", "contracting", ["f32[8,8]", "f32[8,4]"], MATMUL), "8", Case(("-,x", "x,-")),
     "dot_general", (8, 4)),
    (record("reduce_sum", "", [F], {"axes": (1,)}), "2x4", Case(("x,-",)), "reduce_sum", (4,)),
]


@pytest.mark.parametrize("record, mesh_name, case, op_name, shape", LOCAL_SHAPES,
                         ids=[f"{item[0].id}-{item[1]}-{item[2].name}" for item in LOCAL_SHAPES])
def test_sharded_ops_run_on_local_shards(record: Record, mesh_name: str, case: Case, op_name: str, shape, request):
    module = build_case(record, mesh_name, case)
    partitioned = partition_and_compare(module, operand_values(record, request.node.callspec.id))
    # NOTE: 0-d ops of the same name compute shard offsets
    shapes = [op.result.type.shape for op in partitioned.main.body.ops if op.name == op_name and op.result.type.rank]
    assert shapes == [shape], f"{op_name} ran on {shapes}, expected the local shape {shape}"


def test_contracting_dim_sharded_on_both_operands_is_one_all_reduce():
    dot_record = record("dot_general", "", ["f32[8,8]", "f32[8,4]"], MATMUL)
    module = build_case(dot_record, "8", Case(("-,x", "x,-"), "-,-"))
    partitioned = partition_and_compare(module, operand_values(dot_record, "all_reduce"))
    assert collective_kinds(partitioned) == Counter({"all_reduce": 1})


# --- random programs -----------------------------------------------------------------------------

SIZES = (2, 4, 6, 8, 10)
LAYOUTS_1D = {"2": ["-", "x"], "2x2": ["-", "x", "y", "xy"], "2x4": ["-", "x", "y", "yx", "y(2)2"],
              "8": ["-", "x", "x(1)4"]}


class RandomProgram:
    """Draws a small well-typed f32 program op by op from a pool of values."""

    def __init__(self, data, mesh_name: str):
        self.data = data
        self.mesh_name = mesh_name
        self.builder = ProgramBuilder(MESHES[mesh_name])
        self.pool: list[Value] = []

    def draw(self, strategy):
        return self.data.draw(strategy)

    def layout_for(self, value: Value) -> str:
        options = {1: LAYOUTS_1D, 2: LAYOUTS_2D}[value.type.rank][self.mesh_name]
        return self.draw(st.sampled_from(options))

    def pick(self, rank: int | None = None) -> Value | None:
        choices = [value for value in self.pool if value.type.rank and (rank is None or value.type.rank == rank)]
        return self.draw(st.sampled_from(choices)) if choices else None

    def emit(self, name: str, operands, attrs=None) -> Value:
        """Append an op; sometimes its result is pinned to a layout, which may not divide."""
        attrs = dict(attrs or {})
        result_type = infer_result_types(name, [value.type for value in operands], attrs)[0]
        pinned = None
        if result_type.rank in (1, 2) and self.draw(st.booleans()):
            pinned = self.draw(st.sampled_from({1: LAYOUTS_1D, 2: LAYOUTS_2D}[result_type.rank][self.mesh_name]))
        return self.builder.emit(name, operands, attrs, pinned)[0]

    def unary(self):
        value = self.pick()
        name = self.draw(st.sampled_from(["exp", "tanh", "cos", "neg", "log_square"]))
        if name == "log_square":
            # finite on the data, -inf on zero padding: catches padding that is not masked
            return self.emit("log", [self.emit("mul", [value, value])])
        return self.emit(name, [value])

    def binary(self):
        value = self.pick()
        partners = [other for other in self.pool if other.type == value.type]
        other = self.draw(st.sampled_from(partners))
        return self.emit(self.draw(st.sampled_from(["add", "mul", "sub", "max"])), [value, other])

    def constrain(self):
        value = self.pick()
        return self.builder.constrain(value, self.layout_for(value))

    def reduce(self):
        value = self.pick()
        axis = self.draw(st.integers(0, value.type.rank - 1))
        return self.emit(self.draw(st.sampled_from(["reduce_sum", "reduce_max", "reduce_min"])), [value],
                         {"axes": (axis,)})

    def broadcast(self):
        value = self.pick(1)
        if value is None:
            return None
        size, new_dim = self.draw(st.sampled_from(SIZES)), self.draw(st.integers(0, 1))
        shape = (size,) + value.type.shape if new_dim == 0 else value.type.shape + (size,)
        return self.emit("broadcast_in_dim", [value], {"shape": shape, "broadcast_dimensions": (1 - new_dim,)})

    def transpose(self):
        value = self.pick(2)
        return None if value is None else self.emit("transpose", [value], {"permutation": (1, 0)})

    def dot(self):
        lhs = self.pick(2)
        if lhs is None:
            return None
        partners = [(value, side) for value in self.pool if value.type.rank == 2
                    for side in (0, 1) if value.type.shape[side] == lhs.type.shape[1]]
        if not partners:
            return None
        rhs, side = self.draw(st.sampled_from(partners))
        return self.emit("dot_general", [lhs, rhs], {"contracting_dims": ((1,), (side,)), "batch_dims": ((), ())})

    def reshape(self):
        value = self.pick()
        if value.type.rank == 2:
            return self.emit("reshape", [value], {"new_sizes": (value.type.size,)})
        size = value.type.shape[0]
        return self.emit("reshape", [value], {"new_sizes": (2, size // 2)}) if size % 2 == 0 else None

    def scan(self):
        value = self.pick()
        axis = self.draw(st.integers(0, value.type.rank - 1))
        return self.emit("cumsum", [value], {"axis": axis, "reverse": self.draw(st.booleans())})

    def slice(self):
        value = self.pick(2)
        if value is None:
            return None
        dim = self.draw(st.integers(0, 1))
        size = value.type.shape[dim]
        start = self.draw(st.integers(0, size - 1))
        limit = self.draw(st.integers(start + 1, size))
        stride = self.draw(st.integers(1, 3))
        starts, limits, strides = [0, 0], list(value.type.shape), [1, 1]
        starts[dim], limits[dim], strides[dim] = start, limit, stride
        return self.emit("slice", [value], {"start_indices": tuple(starts), "limit_indices": tuple(limits),
                                            "strides": tuple(strides)})

    STEPS = ("unary", "binary", "constrain", "reduce", "broadcast", "transpose", "dot", "reshape", "scan",
             "slice")

    def build(self) -> Module:
        rows, inner, cols = (self.draw(st.sampled_from(SIZES)) for _ in range(3))
        for shape in ((rows, inner), (inner, cols)):
            value_type = TensorType(shape, "f32")
            self.pool.append(self.builder.argument(value_type, self.draw(st.sampled_from(LAYOUTS_2D[self.mesh_name]))))
        for _ in range(self.draw(st.integers(2, 9))):
            value = getattr(self, self.draw(st.sampled_from(self.STEPS)))()
            if value is not None:
                self.pool.append(value)
        return self.builder.module(self.pool[-2:])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_programs_match_unsharded(data):
    program = RandomProgram(data, data.draw(st.sampled_from(sorted(MESHES))))
    module = program.build()
    rng = np.random.default_rng(0)
    arrays = [normal(rng, arg.type.shape, "f32") for arg in module.main.args]
    partition_and_compare(module, arrays)
