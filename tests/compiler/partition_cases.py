"""The partitioner's op table: every global op with its operand types, attributes and the layouts
worth trying, and the meshes they run on. ``test_partition_differential`` turns each record into
one-op programs, one per mesh and sampled layout; a new op gets differential tests by adding one
record.

Layouts are written per dim, comma-separated: ``"x,-"`` puts dim 0 on axis x; ``"xy"`` is one
dim on x then y; ``"y(1)2"`` is the sub-axis ``"y":(1)2``; ``""`` is a 0-d value.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from meshjit.ir import (
    AxisRef,
    DenseAttr,
    DimSharding,
    MeshAttr,
    TensorSharding,
    TensorType,
    infer_result_types,
)
from meshjit.ir.dtypes import to_numpy

MESHES = {
    "2": MeshAttr((("x", 2),)),
    "2x2": MeshAttr((("x", 2), ("y", 2))),
    "2x4": MeshAttr((("x", 2), ("y", 4))),
    "8": MeshAttr((("x", 8),)),
}


# --- operand values ------------------------------------------------------------------------------

def normal(rng, shape, dtype):
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype in ("i32", "i64"):
        return rng.integers(-5, 5, shape).astype(to_numpy(dtype))
    return rng.standard_normal(shape).astype(to_numpy(dtype))


def words(rng, shape, dtype):
    """Unsigned words over their whole range (threefry's keys and counters)."""
    return rng.integers(0, 2**32, shape, dtype=np.uint32).astype(to_numpy(dtype))


def inside_unit_interval(rng, shape, dtype):
    return rng.uniform(-0.99, 0.99, shape).astype(to_numpy(dtype))


def positive(rng, shape, dtype):
    return rng.uniform(0.25, 2.0, shape).astype(to_numpy(dtype))


def negative(rng, shape, dtype):
    return rng.uniform(-2.0, -0.25, shape).astype(to_numpy(dtype))


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
    """The sharding a layout text (see the module docstring) stands for."""
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
        return set().union(*(axes_of(text) for text in self.operands + (self.output, self.pinned)))

    @property
    def name(self) -> str:
        text = "".join(f"[{operand}]" if operand is not None else "[?]" for operand in self.operands)
        text += f"=[{self.pinned}]" if self.pinned is not None else ""
        return text + (f"->[{self.output}]" if self.output is not None else "")


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

    @property
    def id(self) -> str:
        return f"{self.op}-{self.label}" if self.label else self.op


def record(op: str, label: str, operands, attrs=None, cases=(), **options) -> Record:
    """A Record from operand texts (or Operands)."""
    operands = tuple(item if isinstance(item, Operand) else Operand(item) for item in operands)
    return Record(op, label, operands, dict(attrs or {}), tuple(cases), **options)


def generic_cases(record: Record) -> list[Case]:
    """Operand 0 replicated, each dim on each axis, two axes on dim 0; operands of operand 0's
    type follow it, the others are left to propagation. Where the result has operand 0's type,
    every other case pins the result to operand 0's layout, so that ops run on uneven shards
    (propagation never makes those)."""
    if not record.operands:
        return []
    first = record.operands[0].type
    texts = [",".join("-" * first.rank)] if first.rank else []
    for axis in ("x", "y"):
        for dim in range(first.rank):
            texts.append(",".join(axis if d == dim else "-" for d in range(first.rank)))
    if first.rank:
        texts.append(",".join("xy" if d == 0 else "-" for d in range(first.rank)))
    types = [operand.type for operand in record.operands]
    same_type = infer_result_types(record.op, types, record.attrs)[0] == first
    cases = []
    for index, text in enumerate(texts):
        operands = tuple(text if operand.type == first else None for operand in record.operands)
        cases.append(Case(operands, pinned=text if same_type and index % 2 else None))
    return cases


# --- the op table --------------------------------------------------------------------------------

F = "f32[8,6]"
INT = "i32[8,6]"
U32 = "u32[8,6]"
B = "bool[8,6]"
UNEVEN = "f32[6,10]"
INDEX = Operand("i32[]", integers(-2, 10))

UNARY_FLOAT = ["exp", "exp2", "expm1", "tanh", "logistic", "sin", "cos", "tan", "cbrt", "floor", "ceil",
               "erf", "is_finite", "neg", "abs", "sign", "square"]
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
    records += [record(name, "i32", [INT, INT], samples=1) for name in BINARY_INT]
    records += [record(name, "bool", [B, B], samples=1) for name in ("and", "or", "xor")]
    records += [record(name, "", [INT, Operand(INT, integers(-2, 40))], samples=1) for name in SHIFTS]
    records += [record("compare", direction, [INT, INT], {"direction": direction}, samples=1)
                for direction in DIRECTIONS]
    records += [
        record("pow", "", [Operand(F, positive), F], samples=1),
        record("neg", "i32", [INT], samples=1),
        record("not", "bool", [B], samples=1),
        record("not", "i32", [INT], samples=1),
        record("add", "uneven", [UNEVEN, UNEVEN], samples=4),
        record("mul", "", [F, F], cases=[Case(("x,-", "-,x")), Case(("x,-", "-,y")), Case(("xy,-", "yx,-"))],
               samples=4),
        record("select", "", [B, F, F], cases=[Case(("x,-", "-,x", None))], samples=4),
        record("select", "scalar_predicate", ["bool[]", F, F], samples=2),
        record("clamp", "", [F, F, F], samples=2),
        record("clamp", "scalar_bounds", ["f32[]", F, "f32[]"],
               cases=[Case(("", "x,-", "")), Case(("", "-,y", ""))], samples=3),
        record("convert", "f32_to_i32", [F], {"new_dtype": "i32"}, samples=2),
        record("convert", "i32_to_f32", [INT], {"new_dtype": "f32"}, samples=2),
        record("convert", "f32_to_bool", [F], {"new_dtype": "bool"}, samples=1),
        record("integer_pow", "cube", [F], {"y": 3}, samples=2),
        record("integer_pow", "inverse_square", [Operand(F, positive)], {"y": -2}, samples=1),
        record("erf_inv", "", [Operand(F, inside_unit_interval)], samples=1),
        record("nextafter", "", [F, F], samples=1),
        record("fma", "", [F, F, F], samples=2),
        record("bitcast_convert_type", "f32_to_u32", [F], {"new_dtype": "u32"}, samples=1),
        record("bitcast_convert_type", "narrowing", ["f64[8,6]"], {"new_dtype": "u32"}, samples=2),
        record("bitcast_convert_type", "widening", [Operand("u32[8,6,2]", words)], {"new_dtype": "f64"},
               cases=[Case(("x,-,-",)), Case(("-,y,-",))], samples=2),
        record("add", "u32", [Operand(U32, words), Operand(U32, words)], samples=1),
        record("optimization_barrier", "pair", [F, UNEVEN], samples=3),
    ]
    return records


def random_records() -> list[Record]:
    word = Operand(U32, words)
    return [record("threefry2x32", "", [word, word, word, word], samples=3)]


def creation_cases() -> list[Case]:
    """The result constrained, or pinned (so it may not divide), to each layout; sub-axes on 2x4."""
    texts = ["x,-", "-,x", "-,y", "xy,-", "y,x"]
    cases = [Case((), text) for text in texts] + [Case((), pinned=text) for text in texts]
    return cases + [Case((), pinned=text, meshes=("2x4",)) for text in ("y(2)2,x", "y(1)2x,y(2)2")]


def creation_records() -> list[Record]:
    rng = np.random.default_rng(7)
    constant = DenseAttr.from_array(rng.standard_normal((6, 10)).astype(np.float32))
    return [
        record("iota", "dim0", [], {"dtype": "i32", "shape": (8, 6), "dimension": 0}, creation_cases(),
               generic=False),
        record("iota", "dim1_f32", [], {"dtype": "f32", "shape": (8, 6), "dimension": 1}, creation_cases(),
               generic=False),
        record("iota", "uneven", [], {"dtype": "i32", "shape": (6, 10), "dimension": 1}, creation_cases(),
               generic=False),
        record("constant", "uneven", [], {"value": constant}, creation_cases(), generic=False),
    ]


def layout_records() -> list[Record]:
    return [
        record("broadcast_in_dim", "new_dim", ["f32[6]"], {"shape": (8, 6), "broadcast_dimensions": (1,)},
               [Case((None,), "x,-"), Case((None,), "y,x"), Case(("y",), pinned="x,y")]),
        record("broadcast_in_dim", "stretch", ["f32[1,6]"], {"shape": (8, 6), "broadcast_dimensions": (0, 1)},
               [Case((None,), "x,y"), Case(("-,x",), "x,-")]),
        record("broadcast_in_dim", "scalar", ["f32[]"], {"shape": (6, 10), "broadcast_dimensions": ()},
               [Case((None,), "y,x"), Case((None,), "x,-")], generic=False),
        record("reshape", "split", [F], {"new_sizes": (2, 4, 6)}),
        record("reshape", "merge", ["f32[2,4,6]"], {"new_sizes": (8, 6)}, [Case(("x,y,-",))]),
        record("reshape", "flatten", [F], {"new_sizes": (48,)}, [Case(("x,y",)), Case(("-,x",))]),
        record("reshape", "unflatten", ["f32[48]"], {"new_sizes": (8, 6)}, [Case(("-",), "-,x")]),
        record("reshape", "unaligned", ["f32[6,5]"], {"new_sizes": (5, 6)}),
        record("transpose", "2d", [F], {"permutation": (1, 0)}, [Case(("x,y",)), Case(("x,y",), pinned="y,x")]),
        record("transpose", "3d", ["f32[2,4,6]"], {"permutation": (2, 0, 1)}, [Case(("x,y,-",))]),
        record("slice", "strided", [F], {"start_indices": (1, 0), "limit_indices": (7, 6), "strides": (2, 1)},
               [Case(("-,x",))]),
        record("slice", "other_dim", [F], {"start_indices": (0, 1), "limit_indices": (8, 5), "strides": (1, 1)},
               [Case(("x,-",)), Case(("xy,-",)), Case(("-,y",), pinned="y,-")]),
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
        record("dot_general", "matmul_i32", [INT, "i32[6,4]"], MATMUL, contracted[:3], samples=2),
        record("dot_general", "uneven_result", [UNEVEN, "f32[10,4]"], MATMUL,
               [Case(("y,x", "x,-"), pinned="y,-"), Case(("-,xy", "xy,-"), pinned="y,x"),
                Case(("xy,-", None), pinned="xy,-")], samples=3),
        record("dot_general", "batched", ["f32[2,8,6]", "f32[2,6,4]"], BATCHED,
               [Case(("x,-,y", "x,y,-")), Case(("x,y,-", "-,-,y")), Case(("-,-,x", "-,x,-"), "-,x,-")],
               samples=4),
        record("dot_general", "two_contracting", ["f32[4,2,6]", "f32[2,6,4]"], TWO_CONTRACTING,
               [Case(("-,x,y", "x,y,-")), Case(("-,-,x", "-,x,-"))], samples=3),
    ]


def reduction_records() -> list[Record]:
    records = []
    # max over negative and min over positive values: padding masked with 0 would show
    for name, values in (("reduce_sum", normal), ("reduce_max", negative), ("reduce_min", positive)):
        records += [record(name, "dim0", [Operand(F, values)], {"axes": (0,)}, samples=2),
                    record(name, "uneven", [Operand(UNEVEN, values)], {"axes": (1,)}, samples=3),
                    record(name, "all", [Operand(UNEVEN, values)], {"axes": (0, 1)},
                           [Case(("x,y",)), Case(("y,x",))], samples=3)]
    records += [
        record("reduce_max", "i32", [Operand(INT, integers(-50, -1))], {"axes": (1,)},
               [Case(("-,x",)), Case(("-,xy",))], samples=3),
        record("reduce_min", "i32_pinned", [Operand("i32[6,10]", integers(1, 50))], {"axes": (1,)},
               [Case(("y,x",), pinned="y"), Case(("xy,-",), pinned="xy")], samples=2),
        record("reduce_sum", "pinned", [UNEVEN], {"axes": (0,)},
               [Case(("y,x",), pinned="x"), Case(("x,y",), pinned="y"), Case(("-,xy",), pinned="xy")], samples=3),
        record("reduce_prod", "", [Operand(F, near_one)], {"axes": (0,)}, samples=3),
        record("reduce_and", "", [B], {"axes": (1,)}, samples=2),
        record("reduce_or", "", ["bool[6,10]"], {"axes": (0,)}, samples=3),
    ]
    for name in ("argmax", "argmin"):
        records += [record(name, "dim0", [INT], {"axis": 0, "index_dtype": "i32"}, samples=2),
                    record(name, "uneven", ["i32[6,10]"], {"axis": 1, "index_dtype": "i32"},
                           [Case(("y,x",), pinned="y")], samples=3)]
    for name, values in (("cumsum", normal), ("cumprod", near_one), ("cummax", normal), ("cummin", normal)):
        records += [record(name, "", [Operand(F, values)], {"axis": 0, "reverse": False}, samples=2),
                    record(name, "reverse", [Operand(UNEVEN, values)], {"axis": 1, "reverse": True}, samples=2)]
    records += [
        record("cumsum", "i32", [INT], {"axis": 1, "reverse": False}, samples=2),
        record("sort", "", [F], {"dimension": 0, "is_stable": True, "num_keys": 1}),
        record("sort", "key_value", [INT, F], {"dimension": 1, "is_stable": True, "num_keys": 1},
               [Case(("x,-", "-,x"))]),
        record("sort", "rows_all_to_all", ["f32[8,16]"], {"dimension": 1, "is_stable": True, "num_keys": 1},
               [Case(("-,x",), "-,x", ("all_to_all", "all_to_all"), meshes=("8",))], samples=2),
        record("top_k", "", [Operand("f32[4,128]", normal)], {"k": 3},
               [Case(("-,x",), None, ("all_gather", "all_gather"), meshes=("8",)), Case(("y,x",)), Case(("-,xy",))],
               samples=3),
        record("top_k", "uneven_i32", [Operand("i32[3,10]", integers(-4, 4))], {"k": 2},
               [Case(("-,x",)), Case(("x,y",))], samples=3),
        record("sort", "two_keys", ["i32[6,10]", "i32[6,10]", "f32[6,10]"],
               {"dimension": 0, "is_stable": False, "num_keys": 2}),
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
    square = "f32[8,8]"
    return [
        record("sharding_constraint", "matrix", [square], cases=reshard_matrix(), generic=False, samples=1000),
        record("sharding_constraint", "matrix_uneven", [UNEVEN], cases=reshard_matrix(), generic=False,
               samples=1000),
        record("sharding_constraint", "square", [square], cases=[
            Case(("x,-",), "-,x", ("all_to_all",)),
            Case(("-,-",), "x,-", ()),
            Case(("x,-",), "-,-", ("all_gather",)),
            Case(("x,-",), "xy,-", ()),
            Case(("x,y",), "y,x", ("collective_permute",), meshes=("2x2",)),
            Case(("xy,-",), "x,-", ("all_gather",)),
            Case(("xy,-",), "yx,-", ("collective_permute",)),
            Case(("-,xy",), "-,yx", ("collective_permute",)),
            Case(("x,-",), "y,-", ("collective_permute",), meshes=("2x2",)),
            Case(("x,y",), "-,x"),
            Case(("-,x",), "x,y"),
        ], generic=False, samples=9),
    ]


def _gather(offset, collapsed, index_map, sizes, mode="clip", batching=((), ())):
    return {"offset_dims": offset, "collapsed_slice_dims": collapsed, "start_index_map": index_map,
            "operand_batching_dims": batching[0], "start_indices_batching_dims": batching[1],
            "slice_sizes": sizes, "mode": mode}


def _scatter(window, inserted, index_map, mode="fill", batching=((), ())):
    return {"update_window_dims": window, "inserted_window_dims": inserted, "scatter_dims_to_operand_dims": index_map,
            "operand_batching_dims": batching[0], "scatter_indices_batching_dims": batching[1], "mode": mode}


IDS = Operand("i32[5,1]", integers(-3, 11))
ROWS = _gather((1,), (0,), (0,), (1, 6))
# the table's rows sharded (each device takes the rows it holds), the ids sharded, both, uneven
TABLE_CASES = [Case(("x,-", None)), Case(("x,-", "-,-"), "-,-"), Case(("-,-", "x,-")),
               Case(("x,y", "y,-")), Case(("y,-", "x,-")), Case(("xy,-", "-,-"))]


def indexing_records() -> list[Record]:
    # (rows 6 of the uneven operand do not split over 8: its result is gathered for the output)
    scatter_cases = [Case(("x,-", None, None)), Case(("x,-", "-,-", "-,-"), "x,-", (), meshes=("2", "2x2", "2x4")),
                     Case(("x,y", "y,-", "y,-")), Case(("-,-", "x,-", "x,-")), Case(("y,x", "x,-", None))]
    records = [
        record("gather", "rows", [F, IDS], ROWS, TABLE_CASES, samples=6),
        # a table larger than the result: a masked local gather and one all_reduce, no gather
        record("gather", "vocab", ["f32[32,4]", Operand("i32[3,1]", integers(-3, 35))], _gather((1,), (0,), (0,), (1, 4)),
               [Case(("x,-", "-,-"), "-,-", ("all_reduce",)), Case(("x,-", "-,-"), "-,x", ("reduce_scatter",), meshes=("2", "2x2", "2x4")),
                Case(("xy,-", "-,-"), "-,-", ("all_reduce",))], samples=3),
        record("gather", "rows_fill", [UNEVEN, Operand("i32[5,1]", integers(-3, 9))],
               _gather((1,), (0,), (0,), (1, 10), "fill"), TABLE_CASES[:4], samples=4),
        record("gather", "batching", ["f32[4,6,2]", Operand("i32[4,3,1]", integers(-1, 7))],
               _gather((2,), (1,), (1,), (1, 1, 2), batching=((0,), (0,))),
               [Case(("x,y,-", "x,-,-")), Case(("-,x,-", None))], samples=3),
        record("gather", "windows", [F, Operand("i32[3,2]", integers(-1, 9))], _gather((1, 2), (), (0, 1), (2, 3)),
               [Case(("x,-", "x,-"))], samples=2),
    ]
    for name in ("scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max"):
        records.append(record(name, "rows", [F, IDS, "f32[5,6]"], _scatter((1,), (0,), (0,)), scatter_cases,
                              samples=5))
    records += [
        record("scatter_add", "clip_uneven", [UNEVEN, Operand("i32[5,1]", integers(-3, 9)), "f32[5,10]"],
               _scatter((1,), (0,), (0,), "clip"), scatter_cases[:3], samples=3),
        record("scatter_add", "batching", ["f32[4,6,2]", Operand("i32[4,3,1]", integers(-1, 7)), "f32[4,3,2]"],
               _scatter((2,), (1,), (1,), batching=((0,), (0,))),
               [Case(("x,y,-", "x,-,-", "x,-,-")), Case(("-,x,-", None, None))], samples=3),
        record("scatter", "int_windows", [INT, Operand("i32[3,2]", integers(-1, 9)), "i32[3,2,3]"],
               _scatter((1, 2), (), (0, 1)), [Case(("x,-", "x,-", None))], samples=2),
    ]
    return records


def _conv(lhs_spec, rhs_spec, out_spec, strides, padding, lhs_dilation=(1, 1), rhs_dilation=(1, 1), groups=1):
    return {"lhs_spec": lhs_spec, "rhs_spec": rhs_spec, "out_spec": out_spec, "window_strides": strides,
            "padding": padding, "lhs_dilation": lhs_dilation, "rhs_dilation": rhs_dilation,
            "feature_group_count": groups, "batch_group_count": 1}


def _window(window, strides, padding, base=(1, 1), dilation=(1, 1)):
    return {"window_dimensions": window, "window_strides": strides, "padding": padding, "base_dilation": base,
            "window_dilation": dilation}


NHWC = ((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))


def window_records() -> list[Record]:
    # the spatial dims (H, W) sharded: halos; the batch; the input features (partial sums)
    image_cases = [Case(("-,x,-,-", None)), Case(("-,x,y,-", None)), Case(("x,y,-,-", None)),
                   Case(("-,-,-,x", "-,-,x,-")), Case(("-,xy,-,-", None))]
    return [
        record("conv_general_dilated", "same", ["f32[2,8,6,4]", "f32[3,3,4,2]"], _conv(*NHWC, (1, 1), ((1, 1), (1, 1))),
               image_cases, samples=5),
        record("conv_general_dilated", "strided_dilated", ["f32[1,10,7,2]", "f32[3,2,2,3]"],
               _conv(*NHWC, (2, 1), ((2, 0), (-1, 1)), (1, 1), (2, 1)), image_cases[:3], samples=3),
        record("conv_general_dilated", "lhs_dilation", ["f32[1,6,5,2]", "f32[2,2,2,2]"],
               _conv(*NHWC, (1, 2), ((1, 1), (0, 0)), (2, 1)), image_cases[:2], samples=2),
        record("conv_general_dilated", "groups", ["f32[2,4,8]", "f32[6,2,3]"],
               _conv((0, 1, 2), (0, 1, 2), (0, 1, 2), (1,), ((1, 1),), (1,), (1,), 2),
               [Case(("-,-,x", None)), Case(("x,-,-", None))], samples=2),
        record("reduce_window_sum", "", ["f32[8,6]", "f32[]"], _window((3, 1), (1, 1), ((1, 1), (0, 0))),
               [Case(("x,-", "")), Case(("x,y", ""))], samples=3),
        record("reduce_window_max", "pool", [Operand("f32[8,6]", negative), "f32[]"],
               _window((2, 3), (2, 2), ((0, 1), (1, 1))), [Case(("x,-", "")), Case(("y,x", ""))], samples=3),
        record("reduce_window_min", "dilated", [Operand("f32[9,6]", positive), "f32[]"],
               _window((2, 2), (1, 2), ((1, 0), (0, 0)), (2, 1), (1, 2)), [Case(("x,-", ""))], samples=3),
    ]


def _complex_and_fft_records() -> list[Record]:
    from partition_cases_complex import complex_records, fft_records  # it builds on this module

    return complex_records() + fft_records()


def callback_records() -> list[Record]:
    """Host callbacks returning their first operand: a sharded operand is gathered whole first."""
    from meshjit.ir.ops.debug import register_callback

    echo = register_callback(lambda first, *rest: [np.array(first)])
    attrs = {"callback": echo, "result_shapes": ((8, 6),), "result_dtypes": ("f32",)}
    gathered = Case(("x,-", "-"), collectives=("all_gather",))
    # NOTE: a vmapped pure_callback needs a vmap_method (JAX's NotImplementedError otherwise)
    return [record("pure_callback", "", ["f32[8,6]", "f32[4]"], {**attrs, "vmap_method": "expand_dims"},
                   cases=(gathered,)),
            record("io_callback", "", ["f32[8,6]", "f32[4]"], attrs, cases=(gathered,))]


# NOTE: imported here, after the helpers it uses are defined
from partition_cases_linalg import linalg_records  # noqa: E402

RECORDS = (elementwise_records() + random_records() + creation_records() + layout_records() + contraction_records()
           + reduction_records() + indexing_records() + window_records() + constraint_records() + linalg_records()
           + _complex_and_fft_records() + callback_records())


def cases_for(record: Record, mesh_name: str) -> list[Case]:
    """The record's extra cases, then a rotating sample of the generic ones, that fit the mesh."""
    axes = set(MESHES[mesh_name].axis_names)
    extra = [case for case in record.cases
             if case.axes <= axes and (case.meshes is None or mesh_name in case.meshes)]
    generic = [case for case in generic_cases(record) if case.axes <= axes and case not in extra] \
        if record.generic else []
    start = zlib.crc32(f"{record.id}-{mesh_name}".encode()) % max(len(generic), 1)
    rotated = generic[start:] + generic[:start]
    return (extra + rotated)[:max(record.samples, len(extra))]
