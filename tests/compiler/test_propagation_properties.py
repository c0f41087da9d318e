"""Properties of sharding propagation on random well-typed programs with random user shardings.

Programs mix elementwise ops, broadcast_in_dim, reshape, transpose, dot_general, reduce_sum,
slice, concatenate and sharding constraints on meshes (2,), (2,2), (2,4) and (8,). For both
built-in strategies: propagation terminates, never changes a user sharding (closed dims stay,
open dims only grow), gives every value a sharding that uses no mesh axis twice, produces IR
that verifies, is deterministic, and is a fixpoint when run again.
"""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from meshjit.compiler.sharding.factor_projection import is_prefix
from meshjit.compiler.propagation.propagate_shardings import propagate_shardings
from meshjit.ir import (
    AxisRef,
    Block,
    DimSharding,
    Func,
    MeshAttr,
    Module,
    Op,
    TensorSharding,
    TensorType,
    Value,
    infer_result_types,
    parse_module,
    print_module,
    verify,
)

MESHES = (
    MeshAttr((("x", 2),)),
    MeshAttr((("x", 2), ("y", 2))),
    MeshAttr((("x", 2), ("y", 4))),
    MeshAttr((("x", 8),)),
)
DIM_SIZES = (1, 2, 4, 6, 8, 8, 16, 16)
OP_KINDS = ("unary", "binary", "broadcast", "reshape", "reshape", "transpose", "dot", "reduce",
            "slice", "concatenate", "constraint")
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def dim_shardings(draw, size: int, free: list[AxisRef], mesh: MeshAttr):
    """Axes for one dim (taken from ``free``) whose device count divides ``size``."""
    axes, count = [], 1
    for axis in draw(st.permutations(free)):
        axis_size = axis.resolved_size(mesh)
        if size % (count * axis_size) or not draw(st.booleans()):
            continue
        axes.append(axis)
        count *= axis_size
    for axis in axes:
        free.remove(axis)
    closed = draw(st.booleans())
    priority = draw(st.sampled_from((None, None, None, 0, 1)))
    return DimSharding(tuple(axes), closed, priority)


@st.composite
def shardings(draw, shape, mesh: MeshAttr, *, unreduced: bool = False):
    """A user sharding: per-dim axes, open or closed, maybe a priority, maybe explicitly
    replicated (or unreduced) axes among the unused ones."""
    free = [AxisRef(name) for name in mesh.axis_names]
    dims = tuple(draw(dim_shardings(size, free, mesh)) for size in shape)
    replicated = tuple(axis for axis in free if draw(st.integers(0, 4)) == 0)
    free = [axis for axis in free if axis not in replicated]
    pending = tuple(axis for axis in free if unreduced and draw(st.booleans()))
    return TensorSharding("mesh", dims, replicated, pending)


class _ProgramBuilder:
    """Grows a random program op by op; every op is well typed by construction."""

    def __init__(self, draw, mesh: MeshAttr):
        self.draw, self.mesh = draw, mesh
        self.args: list[Value] = []
        self.arg_shardings: list[TensorSharding | None] = []
        self.values: list[Value] = []
        self.ops: list[Op] = []

    def sharding_or_none(self, shape, **options):
        return self.draw(st.one_of(st.none(), shardings(shape, self.mesh, **options)))

    def new_arg(self, shape) -> Value:
        value = Value.fresh(TensorType(tuple(shape), "f32"))
        self.args.append(value)
        self.arg_shardings.append(self.sharding_or_none(shape))
        self.values.append(value)
        return value

    def emit(self, name: str, operands, attrs=None, shardings=()) -> Value:
        attrs = attrs or {}
        types = infer_result_types(name, [operand.type for operand in operands], attrs)
        results = tuple(Value.fresh(result_type) for result_type in types)
        self.ops.append(Op(name, tuple(operands), results, attrs, shardings=tuple(shardings)))
        self.values.extend(results)
        return results[0]

    def pick(self, minimum_rank: int = 0) -> Value:
        candidates = [value for value in self.values if value.type.rank >= minimum_rank]
        if not candidates:
            sizes = st.lists(st.sampled_from(DIM_SIZES), min_size=max(1, minimum_rank), max_size=3)
            return self.new_arg(self.draw(sizes))
        return self.draw(st.sampled_from(candidates))

    def module(self, returns, result_shardings) -> Module:
        body = Block(tuple(self.args), tuple(self.ops), tuple(returns))
        func = Func("main", body, tuple(self.arg_shardings), tuple(result_shardings))
        return Module((("mesh", self.mesh),), (func,))


def _add_unary(builder: _ProgramBuilder) -> None:
    builder.emit(builder.draw(st.sampled_from(("exp", "tanh", "neg"))), [builder.pick()])


def _add_binary(builder: _ProgramBuilder) -> None:
    first = builder.pick()
    partners = [value for value in builder.values if value.type == first.type]
    if builder.draw(st.booleans()):
        second = builder.draw(st.sampled_from(partners))
    else:
        second = builder.new_arg(first.type.shape)
    builder.emit(builder.draw(st.sampled_from(("add", "mul"))), [first, second])


def _add_broadcast(builder: _ProgramBuilder) -> None:
    operand = builder.pick()
    if operand.type.rank >= 3:
        return _add_unary(builder)
    position = builder.draw(st.integers(0, operand.type.rank))
    shape = list(operand.type.shape)
    shape.insert(position, builder.draw(st.sampled_from(DIM_SIZES)))
    shape = [builder.draw(st.sampled_from((1, 4))) if size == 1 else size for size in shape]
    dims = [dim for dim in range(len(shape)) if dim != position]
    builder.emit("broadcast_in_dim", [operand], {"broadcast_dimensions": dims, "shape": shape})


def _add_reshape(builder: _ProgramBuilder) -> None:
    operand, dim = _reshape_operand(builder)
    shape = list(operand.type.shape)
    divisors = [d for d in range(2, shape[dim]) if shape[dim] % d == 0]
    if divisors and len(shape) < 3 and builder.draw(st.booleans()):
        # a small major part splits sharded axes into sub-axes
        part = builder.draw(st.sampled_from([divisors[0]] * len(divisors) + divisors))
        shape[dim:dim + 1] = [part, shape[dim] // part]
    elif dim + 1 < len(shape):
        shape[dim:dim + 2] = [shape[dim] * shape[dim + 1]]
    else:
        shape = [math.prod(shape)]
    builder.emit("reshape", [operand], {"new_sizes": shape})


def _reshape_operand(builder: _ProgramBuilder) -> tuple[Value, int]:
    """Half the time a seed-sharded argument and one of its sharded dims (exercises sub-axes)."""
    sharded = [(arg, dim) for arg, sharding in zip(builder.args, builder.arg_shardings)
               if sharding is not None for dim, dim_sharding in enumerate(sharding.dims)
               if dim_sharding.axes]
    if sharded and builder.draw(st.booleans()):
        return builder.draw(st.sampled_from(sharded))
    operand = builder.pick(minimum_rank=1)
    return operand, builder.draw(st.integers(0, operand.type.rank - 1))


def _add_transpose(builder: _ProgramBuilder) -> None:
    operand = builder.pick(minimum_rank=1)
    permutation = builder.draw(st.permutations(range(operand.type.rank)))
    builder.emit("transpose", [operand], {"permutation": list(permutation)})


def _add_dot(builder: _ProgramBuilder) -> None:
    lhs = builder.pick(minimum_rank=1)
    rank = lhs.type.rank
    contracting = builder.draw(st.integers(0, rank - 1))
    batch = [0] if rank == 3 and contracting != 0 else []
    rhs_shape = [lhs.type.shape[0]] * len(batch) + [lhs.type.shape[contracting],
                                                    builder.draw(st.sampled_from(DIM_SIZES))]
    rhs = builder.new_arg(rhs_shape)
    builder.emit("dot_general", [lhs, rhs], {"batch_dims": [batch, [0] * len(batch)],
                                             "contracting_dims": [[contracting], [len(batch)]]})


def _add_reduce(builder: _ProgramBuilder) -> None:
    operand = builder.pick(minimum_rank=1)
    axes = builder.draw(st.sets(st.integers(0, operand.type.rank - 1), min_size=1))
    builder.emit("reduce_sum", [operand], {"axes": sorted(axes)})


def _add_slice(builder: _ProgramBuilder) -> None:
    operand = builder.pick(minimum_rank=1)
    starts, limits, strides = [], [], []
    for size in operand.type.shape:
        start = builder.draw(st.integers(0, size - 1))
        starts.append(start)
        limits.append(builder.draw(st.integers(start + 1, size)))
        strides.append(builder.draw(st.sampled_from((1, 1, 2))))
    builder.emit("slice", [operand],
                 {"start_indices": starts, "limit_indices": limits, "strides": strides})


def _add_concatenate(builder: _ProgramBuilder) -> None:
    operand = builder.pick(minimum_rank=1)
    dimension = builder.draw(st.integers(0, operand.type.rank - 1))
    other = builder.new_arg(operand.type.shape)
    builder.emit("concatenate", [operand, other], {"dimension": dimension})


def _add_constraint(builder: _ProgramBuilder) -> None:
    operand = builder.pick()
    sharding = builder.draw(shardings(operand.type.shape, builder.mesh, unreduced=True))
    builder.emit("sharding_constraint", [operand], {"sharding": sharding})


ADD_OP = {"unary": _add_unary, "binary": _add_binary, "broadcast": _add_broadcast,
          "reshape": _add_reshape, "transpose": _add_transpose, "dot": _add_dot,
          "reduce": _add_reduce, "slice": _add_slice, "concatenate": _add_concatenate,
          "constraint": _add_constraint}


@st.composite
def programs(draw):
    builder = _ProgramBuilder(draw, draw(st.sampled_from(MESHES)))
    for _ in range(draw(st.integers(1, 2))):
        builder.new_arg(draw(st.lists(st.sampled_from(DIM_SIZES), min_size=1, max_size=3)))
    for _ in range(draw(st.integers(1, 8))):
        ADD_OP[draw(st.sampled_from(OP_KINDS))](builder)
    results = [builder.values[-1]] + draw(st.lists(st.sampled_from(builder.values), max_size=1))
    result_shardings = [builder.sharding_or_none(value.type.shape) for value in results]
    module = builder.module(results, result_shardings)
    verify(module)
    return module


def _user_shardings(module: Module):
    """(where, sharding) for every sharding the user wrote: arguments, results, constraints."""
    func = module.main
    for index, sharding in enumerate(func.arg_shardings):
        yield ("arg", index), sharding
    for index, sharding in enumerate(func.result_shardings):
        yield ("result", index), sharding
    for index, op in enumerate(func.body.ops):
        if op.name == "sharding_constraint":
            yield ("constraint", index), op.attrs["sharding"]


def _final_sharding(module: Module, where) -> TensorSharding:
    kind, index = where
    func = module.main
    if kind == "arg":
        return func.arg_shardings[index]
    if kind == "result":
        return func.result_shardings[index]
    return func.body.ops[index].shardings[0]


def _respects(user: TensorSharding, final: TensorSharding, mesh: MeshAttr) -> bool:
    """``final`` is ``user`` with (at most) its open dims grown."""
    if (final.mesh_name, final.replicated, final.unreduced, final.reduction) != (
            user.mesh_name, user.replicated, user.unreduced, user.reduction):
        return False
    for wanted, got in zip(user.dims, final.dims, strict=True):
        if (wanted.is_closed, wanted.priority) != (got.is_closed, got.priority):
            return False
        if wanted.is_closed and wanted.axes != got.axes:
            return False
        if not is_prefix(wanted.axes, got.axes, mesh):
            return False
    return True


def _every_sharding(module: Module):
    func = module.main
    yield from zip(func.args, func.arg_shardings)
    yield from zip(func.returns, func.result_shardings)
    for op in func.body.ops:
        assert len(op.shardings) == len(op.results), f"{op.name} has no sharding"
        yield from zip(op.results, op.shardings)


def _check_propagated(module: Module, propagated: Module) -> None:
    verify(propagated)
    mesh = module.mesh("mesh")
    for where, user in _user_shardings(module):
        if user is not None:
            final = _final_sharding(propagated, where)
            assert _respects(user, final, mesh), f"{where}: user {user} became {final}"
    for value, sharding in _every_sharding(propagated):
        assert sharding is not None and sharding.rank == value.type.rank
        used = sharding.used_axes()
        for first in range(len(used)):
            for second in range(first + 1, len(used)):
                assert not used[first].overlaps(used[second], mesh), f"{sharding} reuses an axis"


@SETTINGS
@given(programs(), st.sampled_from(("shardy", "gspmd")))
def test_propagation_keeps_user_shardings_and_shards_every_value(module, strategy):
    _check_propagated(module, propagate_shardings(module, strategy))


@SETTINGS
@given(programs(), st.sampled_from(("shardy", "gspmd")))
def test_propagation_is_deterministic_and_a_fixpoint(module, strategy):
    first = print_module(propagate_shardings(module, strategy))
    assert print_module(propagate_shardings(module, strategy)) == first
    # the same program read back from text (new value ids) propagates to the same text
    assert print_module(propagate_shardings(parse_module(print_module(module)), strategy)) == first
    assert print_module(propagate_shardings(parse_module(first), strategy)) == first


@SETTINGS
@given(programs())
def test_gspmd_never_introduces_sub_axes(module):
    propagated = propagate_shardings(module, "gspmd")
    for _, sharding in _every_sharding(propagated):
        assert not any(axis.is_sub_axis for axis in sharding.used_axes()), str(sharding)


RESHAPE_SPLIT = """
mesh @mesh = <["x"=2, "y"=4]>
func @main(%a: f32[8,16] {sharding = <@mesh, [{"y"}, {}]>}) -> (f32[2,4,16]) {
  %0 = reshape(%a) {new_sizes = [2, 4, 16]} : f32[2,4,16]
  return %0
}
"""


def test_reshape_split_uses_sub_axes_under_shardy_only():
    module = parse_module(RESHAPE_SPLIT)
    shardy = propagate_shardings(module, "shardy").main.body.ops[0].shardings[0]
    gspmd = propagate_shardings(module, "gspmd").main.body.ops[0].shardings[0]
    assert [dim.axes for dim in shardy.dims] == [(AxisRef("y", 1, 2),), (AxisRef("y", 2, 2),), ()]
    assert [dim.axes for dim in gspmd.dims] == [(), (), ()]


HIDDEN_PRIORITY = """
mesh @mesh = <["x"=2, "y"=4]>
func @main(%a: f32[8,16] {sharding = <@mesh, [{?}, {"y"}p1]>},
           %b: f32[8,16] {sharding = <@mesh, [{"y"}, {}]>}) -> (f32[8,16]) {
  %0 = add(%a, %b) : f32[8,16]
  return %0
}
"""


def test_a_dim_hidden_by_its_priority_still_owns_its_axes():
    """At level p0, %a's dim 1 ("y", p1) is hidden, but its "y" is not free for %a's open dim 0:
    as in Shardy, hidden axes count as explicitly replicated until their level."""
    propagated = propagate_shardings(parse_module(HIDDEN_PRIORITY))
    verify(propagated)
    a_sharding = propagated.main.arg_shardings[0]
    assert [dim.axes for dim in a_sharding.dims] == [(), (AxisRef("y"),)]
    result_sharding = propagated.main.body.ops[0].shardings[0]
    assert [dim.axes for dim in result_sharding.dims] == [(), (AxisRef("y"),)]
