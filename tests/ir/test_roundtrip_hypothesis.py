"""Random well-typed modules (meshes, shardings, op chains, manual computations) verify, and
round-trip through the text form."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from meshjit.ir import (
    AxisRef,
    Block,
    DenseAttr,
    DimSharding,
    Func,
    MeshAttr,
    Module,
    Op,
    SymbolRef,
    TensorSharding,
    TensorType,
    Value,
    infer_result_types,
    parse_module,
    print_module,
    renumber,
    verify,
)

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MESH_NAMES = ("mesh", "m2", "grid 2")
AXIS_NAMES = ("x", "y", "z", "data", 'mo"del')
HINTS = (None, None, "a", "b", "x", "arg0", "arg3", "1bad", "with space", "_w")
LOCATIONS = (None, None, None, "model.py:12", "a:b:3:4", 'weird "q".py', "<stdin>")
SIZES = (1, 2, 4, 6, 8)
UNARY = ("exp", "tanh", "neg", "abs", "sqrt", "logistic", "floor")
BINARY = ("add", "sub", "mul", "max", "div", "atan2")


# --- meshes and shardings --------------------------------------------------------------------


@st.composite
def meshes(draw):
    count = draw(st.integers(1, 2))
    result = []
    for name in MESH_NAMES[:count]:
        axis_names = draw(
            st.lists(st.sampled_from(AXIS_NAMES), min_size=1, max_size=3, unique=True)
        )
        axes = tuple((axis, draw(st.sampled_from((1, 2, 4)))) for axis in axis_names)
        size = math.prod(size for _, size in axes)
        device_ids = draw(st.none() | st.permutations(range(size)).map(tuple))
        result.append((name, MeshAttr(axes, device_ids)))
    return tuple(result)


def axis_pieces(name: str, size: int, draw) -> list[AxisRef]:
    """Disjoint pieces of one axis: the whole axis, or two sub-axes of a size-4 axis."""
    if size == 4 and draw(st.booleans()):
        return [AxisRef(name, 1, 2), AxisRef(name, 2, 2)]
    return [AxisRef(name)]


@st.composite
def shardings(draw, mesh_name: str, mesh: MeshAttr, rank: int):
    pieces = [piece for axis, size in mesh.axes for piece in axis_pieces(axis, size, draw)]
    dims = [[] for _ in range(rank)]
    replicated, unreduced = [], []
    for piece in draw(st.permutations(pieces)):
        # Each piece lands in one place at most, so no axis is ever used twice.
        place = draw(st.integers(-3, rank - 1))
        target = {-3: None, -2: replicated, -1: unreduced}.get(place) if place < 0 else dims[place]
        if target is not None:
            target.append(piece)
    dim_shardings = tuple(
        DimSharding(tuple(axes), draw(st.booleans()), draw(st.none() | st.integers(0, 3)))
        for axes in dims
    )
    reduction = draw(st.sampled_from(("sum", "sum", "max", "min")))
    return TensorSharding(mesh_name, dim_shardings, tuple(replicated), tuple(unreduced), reduction)


# --- op chains -------------------------------------------------------------------------------


class Builder:
    """Grows a block from random ops; result types come from the shape rules."""

    def __init__(self, draw, mesh_table, values):
        self.draw = draw
        self.meshes = mesh_table
        self.values = list(values)
        self.ops: list[Op] = []

    def emit(self, name, operands, attrs, regions=(), sharded=True):
        types = infer_result_types(
            name, [value.type for value in operands], attrs, regions, self.meshes
        )
        results = tuple(Value.fresh(type) for type in types)
        result_shardings = ()
        if sharded and self.draw(st.integers(0, 3)) == 0:
            result_shardings = tuple(self.maybe_sharding(type.rank) for type in types)
        if all(sharding is None for sharding in result_shardings):
            # NOTE: all-None shardings print like none at all and parse back as ().
            result_shardings = ()
        location = self.draw(st.sampled_from(LOCATIONS))
        self.ops.append(
            Op(name, tuple(operands), results, attrs, regions, result_shardings, location)
        )
        self.values.extend(results)
        return results

    def maybe_sharding(self, rank):
        if self.draw(st.booleans()):
            return None
        mesh_name = self.draw(st.sampled_from(sorted(self.meshes)))
        return self.draw(shardings(mesh_name, self.meshes[mesh_name], rank))

    def pick(self, predicate=lambda value: True):
        candidates = [value for value in self.values if predicate(value.type)]
        return self.draw(st.sampled_from(candidates)) if candidates else None

    def step(self):
        makers = (
            self.unary,
            self.binary,
            self.broadcast,
            self.reshape,
            self.transpose,
            self.reduce,
            self.dot,
            self.slice,
            self.concatenate,
            self.constant,
            self.iota,
            self.sort,
            self.compare_select,
            self.constraint,
            self.loop,
            self.branch,
        )
        self.draw(st.sampled_from(makers))()

    def region(self, arg_types, count=2):
        """A region over fresh arguments of ``arg_types`` (some sharded) with a few unary ops;
        returns the body builder, for the caller to pick what it returns."""
        args = [Value.fresh(type, self.draw(st.sampled_from(HINTS))) for type in arg_types]
        body = Builder(self.draw, self.meshes, args)
        for _ in range(self.draw(st.integers(0, count))):
            body.unary()
        shardings = tuple(self.maybe_sharding(arg.type.rank) for arg in args)
        return body, args, shardings

    def loop(self):
        """A scan carrying a float value over a stack of it, or a while whose body keeps it."""
        if (value := self.floats()) is None:
            return
        if self.draw(st.booleans()):
            stacked = TensorType((self.draw(st.sampled_from((0, 1, 3))),) + value.type.shape, "f32")
            (xs,) = self.emit("broadcast_in_dim", [value], {"shape": stacked.shape,
                                                            "broadcast_dimensions": tuple(range(1, stacked.rank))})
            body, args, shardings = self.region([value.type, value.type])
            carry = self.draw(st.sampled_from([item for item in body.values if item.type == value.type]))
            region = Block(tuple(args), tuple(body.ops), (carry, args[1]), shardings)
            attrs = {"length": stacked.shape[0], "num_consts": 0, "num_carry": 1,
                     "reverse": self.draw(st.booleans()), "unroll": self.draw(st.integers(1, 3))}
            self.emit("scan", [value, xs], attrs, (region,))
            return
        body, args, shardings = self.region([value.type])
        test, _, _ = self.region([value.type], count=0)
        zero = Value.fresh(TensorType((), "bool"))
        test.ops.append(Op("constant", (), (zero,), {"value": DenseAttr.from_array(np.zeros((), np.bool_))}))
        cond = Block(tuple(test.values[:1]), tuple(test.ops), (zero,))
        carry = self.draw(st.sampled_from([item for item in body.values if item.type == value.type]))
        self.emit("while", [value], {"num_consts": 0}, (cond, Block(tuple(args), tuple(body.ops), (carry,), shardings)))

    def branch(self):
        """A cond on an i32 constant over two or three branches of one float value."""
        if (value := self.floats()) is None:
            return
        (index,) = self.emit("constant", [], {"value": DenseAttr.from_array(np.int32(self.draw(st.integers(-1, 3))))})
        regions = []
        for _ in range(self.draw(st.integers(1, 3))):
            body, args, shardings = self.region([value.type])
            result = self.draw(st.sampled_from([item for item in body.values if item.type == value.type]))
            regions.append(Block(tuple(args), tuple(body.ops), (result,), shardings))
        self.emit("cond", [index, value], {}, tuple(regions))

    def floats(self, min_rank=0):
        return self.pick(lambda type: type.dtype == "f32" and type.rank >= min_rank)

    def unary(self):
        if (value := self.floats()) is not None:
            self.emit(self.draw(st.sampled_from(UNARY)), [value], {})

    def binary(self):
        if (value := self.floats()) is not None:
            other = self.pick(lambda type: type == value.type)
            self.emit(self.draw(st.sampled_from(BINARY)), [value, other], {})

    def broadcast(self):
        if (value := self.pick(lambda type: type.rank <= 2)) is None:
            return
        position = self.draw(st.integers(0, value.type.rank))
        shape = list(value.type.shape)
        shape.insert(position, self.draw(st.sampled_from(SIZES)))
        dims = [dim if dim < position else dim + 1 for dim in range(value.type.rank)]
        self.emit(
            "broadcast_in_dim",
            [value],
            {"shape": tuple(shape), "broadcast_dimensions": tuple(dims)},
        )

    def reshape(self):
        value = self.pick()
        shape = value.type.shape
        new_sizes = self.draw(st.sampled_from([(value.type.size,), (1,) + shape, shape[::-1]]))
        self.emit("reshape", [value], {"new_sizes": tuple(new_sizes)})

    def transpose(self):
        value = self.pick()
        permutation = self.draw(st.permutations(range(value.type.rank)))
        self.emit("transpose", [value], {"permutation": tuple(permutation)})

    def reduce(self):
        if (value := self.floats(min_rank=1)) is None:
            return
        axes = self.draw(st.lists(st.integers(0, value.type.rank - 1), min_size=1, unique=True))
        name = self.draw(st.sampled_from(("reduce_sum", "reduce_max", "reduce_min")))
        self.emit(name, [value], {"axes": tuple(sorted(axes))})

    def dot(self):
        if (value := self.floats(min_rank=1)) is None:
            return
        last = value.type.rank - 1
        batch = ((0,), (0,)) if last >= 2 and self.draw(st.booleans()) else ((), ())
        attrs = {"contracting_dims": ((last,), (last,)), "batch_dims": batch}
        self.emit("dot_general", [value, value], attrs)

    def slice(self):
        value = self.pick(lambda type: type.rank >= 1)
        if value is None:
            return
        starts, limits, strides = [], [], []
        for size in value.type.shape:
            start = self.draw(st.integers(0, size))
            starts.append(start)
            limits.append(self.draw(st.integers(start, size)))
            strides.append(self.draw(st.integers(1, 3)))
        attrs = {
            "start_indices": tuple(starts),
            "limit_indices": tuple(limits),
            "strides": tuple(strides),
        }
        self.emit("slice", [value], attrs)

    def concatenate(self):
        if (value := self.pick(lambda type: type.rank >= 1)) is not None:
            dimension = self.draw(st.integers(0, value.type.rank - 1))
            self.emit("concatenate", [value, value], {"dimension": dimension})

    def constant(self):
        dtype = self.draw(st.sampled_from(("f32", "f64", "i32", "u32", "u64", "bool")))
        shape = tuple(self.draw(st.lists(st.sampled_from((0, 1, 2, 3, 9)), max_size=3)))
        size = math.prod(shape)
        if dtype in ("f32", "f64"):
            unsigned = np.uint32 if dtype == "f32" else np.uint64
            bits = self.draw(
                st.lists(st.integers(0, np.iinfo(unsigned).max), min_size=size, max_size=size)
            )
            array = np.array(bits, dtype=unsigned).view(
                np.float32 if dtype == "f32" else np.float64
            )
        elif dtype in ("u32", "u64"):
            unsigned = np.uint32 if dtype == "u32" else np.uint64
            words = st.integers(0, np.iinfo(unsigned).max)
            array = np.array(self.draw(st.lists(words, min_size=size, max_size=size)), dtype=unsigned)
        else:
            array = np.array(self.draw(st.lists(st.integers(-9, 9), min_size=size, max_size=size)))
            array = array.astype(np.bool_ if dtype == "bool" else np.int32)
        self.emit("constant", [], {"value": DenseAttr.from_array(array.reshape(shape))})

    def iota(self):
        shape = tuple(self.draw(st.lists(st.sampled_from(SIZES), min_size=1, max_size=3)))
        dimension = self.draw(st.integers(0, len(shape) - 1))
        self.emit("iota", [], {"dtype": "i32", "shape": shape, "dimension": dimension})

    def sort(self):
        if (value := self.floats(min_rank=1)) is not None:
            attrs = {
                "dimension": value.type.rank - 1,
                "is_stable": self.draw(st.booleans()),
                "num_keys": 1,
            }
            self.emit("sort", [value, value], attrs)

    def compare_select(self):
        if (value := self.floats()) is None:
            return
        other = self.pick(lambda type: type == value.type)
        direction = self.draw(st.sampled_from(("eq", "ne", "lt", "le", "gt", "ge")))
        (predicate,) = self.emit("compare", [value, other], {"direction": direction})
        self.emit("select", [predicate, value, other], {})

    def constraint(self):
        value = self.pick()
        mesh_name = self.draw(st.sampled_from(sorted(self.meshes)))
        sharding = self.draw(shardings(mesh_name, self.meshes[mesh_name], value.type.rank))
        self.emit("sharding_constraint", [value], {"sharding": sharding})

    def manual_computation(self):
        value = self.floats(min_rank=1)
        if value is None:
            return
        mesh_name = self.draw(st.sampled_from(sorted(self.meshes)))
        mesh = self.meshes[mesh_name]
        manual_axes = tuple(
            self.draw(st.lists(st.sampled_from(mesh.axis_names), min_size=1, unique=True))
        )
        dims = [[] for _ in value.type.shape]
        for axis in manual_axes:
            # An axis shards a dim only where the dim stays divisible.
            fitting = [
                d
                for d, size in enumerate(value.type.shape)
                if size % (math.prod(mesh.axis_size(a) for a in dims[d]) * mesh.axis_size(axis))
                == 0
            ]
            if fitting and self.draw(st.booleans()):
                dims[self.draw(st.sampled_from(fitting))].append(axis)
        sharding = TensorSharding.from_axis_names(mesh_name, dims)
        local = value.type.with_shape(sharding.local_shape(value.type.shape, mesh))
        body = Builder(
            self.draw, self.meshes, [Value.fresh(local, self.draw(st.sampled_from(HINTS)))]
        )
        for _ in range(self.draw(st.integers(0, 3))):
            body.unary()
        (argument,), result = body.values[:1], body.values[-1]
        if self.draw(st.booleans()):
            attrs = {"mesh": SymbolRef(mesh_name), "axes": manual_axes[:1], "reduction": "sum"}
            (result,) = body.emit("all_reduce", [result], attrs, sharded=False)
        region = Block((argument,), tuple(body.ops), (result,))
        attrs = {
            "in_shardings": (sharding,),
            "out_shardings": (sharding,),
            "manual_axes": manual_axes,
        }
        self.emit("manual_computation", [value], attrs, (region,))


@st.composite
def functions(draw, name, mesh_table):
    types = draw(st.lists(shapes(), min_size=1, max_size=3))
    args = [Value.fresh(TensorType(shape, "f32"), draw(st.sampled_from(HINTS))) for shape in types]
    builder = Builder(draw, mesh_table, args)
    for _ in range(draw(st.integers(1, 10))):
        builder.step()
    if draw(st.integers(0, 4)) == 0:
        builder.manual_computation()
    returns = draw(st.lists(st.sampled_from(builder.values), min_size=1, max_size=3))
    return Func(
        name,
        Block(tuple(args), tuple(builder.ops), tuple(returns)),
        tuple(builder.maybe_sharding(arg.type.rank) for arg in args),
        tuple(builder.maybe_sharding(value.type.rank) for value in returns),
    )


def shapes():
    return st.lists(st.sampled_from(SIZES), max_size=3).map(tuple)


@st.composite
def modules(draw):
    mesh_list = draw(meshes())
    mesh_table = dict(mesh_list)
    names = ["main"] + draw(st.lists(st.sampled_from(("helper", "two words")), max_size=1))
    return Module(mesh_list, tuple(draw(functions(name, mesh_table)) for name in names))


# --- properties ------------------------------------------------------------------------------


@SETTINGS
@given(modules())
def test_random_modules_verify_and_round_trip(module):
    verify(module)
    text = print_module(module)
    parsed = parse_module(text)
    assert renumber(parsed) == renumber(module)
    assert print_module(parsed) == text
    verify(parsed)
    locations = [op.location for func in module.funcs for op in func.body.walk()]
    assert locations == [op.location for func in parsed.funcs for op in func.body.walk()]


attribute_leaves = (
    st.integers()
    | st.booleans()
    | st.floats(allow_nan=False)
    | st.just(math.nan)
    | st.text()
    | st.text().map(SymbolRef)
    | st.builds(TensorType, shapes(), st.sampled_from(("bool", "i32", "i64", "u32", "u64", "f32", "f64")))
)
attribute_values = st.recursive(
    attribute_leaves, lambda inner: st.lists(inner, max_size=4).map(tuple), max_leaves=12
)


@SETTINGS
@given(st.dictionaries(st.text(min_size=1), attribute_values, max_size=4), st.text(min_size=1))
def test_random_attributes_and_names_round_trip(attrs, op_name):
    result = Value.fresh(TensorType((2,), "f32"))
    module = Module((), (Func("f", Block((), (Op(op_name, (), (result,), attrs),), (result,))),))
    text = print_module(module)
    parsed = parse_module(text)
    assert renumber(parsed) == renumber(module)
    assert print_module(parsed) == text
