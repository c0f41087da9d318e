"""The interpreter: global modules op by op, per-device (SPMD) modules with every collective on
meshes (2,), (2,2) and (2,4) against hand-computed answers, manual_computation, argument checks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from op_records import MESH, assert_results_match, instances, parse_types, rng_for
from op_table import RECORDS

from meshjit.ir import Attrs, Block, Func, MeshAttr, Module, Op, SymbolRef, TensorSharding, Value
from meshjit.ir import infer_result_types, interpret


class Builder:
    """Builds a one-function module; every op's result types come from the shape rules."""

    def __init__(self, meshes: dict[str, MeshAttr] | None = None):
        self.meshes = meshes or {}
        self.args: list[Value] = []
        self.ops: list[Op] = []

    def arg(self, text: str) -> Value:
        self.args.append(Value.fresh(parse_types(text)[0]))
        return self.args[-1]

    def op(self, name: str, *operands: Value, regions=(), **attrs):
        types = infer_result_types(name, [operand.type for operand in operands], attrs, regions, self.meshes)
        results = tuple(Value.fresh(result_type) for result_type in types)
        self.ops.append(Op(name, operands, results, Attrs(attrs), tuple(regions)))
        return results[0] if len(results) == 1 else results

    def block(self, *returns: Value) -> Block:
        return Block(tuple(self.args), tuple(self.ops), returns)

    def module(self, *returns: Value, spmd_mesh: str | None = None) -> Module:
        attrs = {"spmd_mesh": SymbolRef(spmd_mesh)} if spmd_mesh else {}
        func = Func("main", self.block(*returns), attrs=attrs)
        return Module(tuple(self.meshes.items()), (func,))


def mesh_of(*sizes: int) -> MeshAttr:
    return MeshAttr(tuple(zip(("x", "y"), sizes)))


# --- global modules --------------------------------------------------------------------------

FIRST_DTYPE_CASES = [
    pytest.param(record, case, dtype, test_id, id=test_id)
    for record, case, dtype, test_id in instances(RECORDS)
    if record.oracle is not None and dtype == (case.dtypes or record.dtypes)[0]
]


@pytest.mark.parametrize("record, case, dtype, test_id", FIRST_DTYPE_CASES)
def test_one_op_module_matches_oracle(record, case, dtype, test_id):
    attrs = case.attrs_for(dtype)
    operands = record.make(rng_for(test_id), case.shapes, dtype, attrs)
    builder = Builder()
    args = [builder.arg(f"{_ir_dtype(array)}[{','.join(map(str, array.shape))}]") for array in operands]
    results = builder.op(record.name, *args, **attrs)
    results = results if isinstance(results, tuple) else (results,)
    with np.errstate(all="ignore"):
        expected = record.oracle(Attrs(attrs), *operands)
    assert_results_match(interpret(builder.module(*results), *operands), expected, record)


def _ir_dtype(array: np.ndarray) -> str:
    return {"b": "bool", "i": f"i{array.dtype.itemsize * 8}", "f": f"f{array.dtype.itemsize * 8}"}[array.dtype.kind]


def test_a_chain_of_ops():
    builder = Builder()
    x, w = builder.arg("f32[4,3]"), builder.arg("f32[3,2]")
    product = builder.op("dot_general", x, w, contracting_dims=((1,), (0,)), batch_dims=((), ()))
    total = builder.op("reduce_sum", builder.op("tanh", product), axes=(1,))
    x_value = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    w_value = np.ones((3, 2), np.float32)
    (result,) = interpret(builder.module(total), x_value, w_value)
    np.testing.assert_allclose(result, np.tanh(x_value @ w_value).sum(axis=1), rtol=1e-6)


def test_results_are_always_a_tuple_and_never_alias_arguments():
    builder = Builder()
    x = builder.arg("f64[3]")
    value = np.arange(3.0)
    results = interpret(builder.module(x), value)
    assert isinstance(results, tuple) and len(results) == 1
    results[0][0] = 99.0
    assert value[0] == 0.0
    assert interpret(Builder().module()) == ()


@pytest.mark.parametrize(
    "arrays, error, message",
    [
        ((np.zeros(3, np.float32),), TypeError, "@main takes 2 arguments, got 1"),
        ((np.zeros(3, np.float64), np.zeros((), np.int32)), TypeError, "argument 0 of @main must have dtype float32 (IR f32), got float64"),
        ((np.zeros(4, np.float32), np.zeros((), np.int32)), ValueError, "argument 0 of @main must have shape (3,), got (4,)"),
        ((np.zeros(3, np.float32), np.zeros(1, np.int32)), ValueError, "argument 1 of @main must have shape (), got (1,)"),
    ],
)  # fmt: skip
def test_argument_checks(arrays, error, message):
    builder = Builder()
    x, _ = builder.arg("f32[3]"), builder.arg("i32[]")
    with pytest.raises(error) as raised:
        interpret(builder.module(x), *arrays)
    assert message in str(raised.value)


def test_spmd_arguments_need_the_device_axis():
    builder = Builder({"mesh": mesh_of(2, 2)})
    x = builder.arg("f32[3]")
    with pytest.raises(ValueError, match=r"a leading device axis of 4 for mesh @mesh, then the per-device shape \(3,\)"):
        interpret(builder.module(x, spmd_mesh="mesh"), np.zeros(3, np.float32))


def test_per_device_op_outside_spmd_is_an_error():
    builder = Builder({"mesh": mesh_of(2)})
    x = builder.arg("f32[3]")
    total = builder.op("all_reduce", x, mesh=MESH, axes=("x",), reduction="sum")
    with pytest.raises(ValueError, match="all_reduce is a per-device op"):
        interpret(builder.module(total), np.zeros(3, np.float32))


def test_ir_that_disagrees_with_the_op_is_reported():
    x = Value.fresh(parse_types("f32[3]")[0])
    wrong = Value.fresh(parse_types("f32[4]")[0])
    module = Module((), (Func("main", Block((x,), (Op("neg", (x,), (wrong,)),), (wrong,))),))
    with pytest.raises(ValueError, match=r"neg result 0: the IR declares f32\[4\], the op computed float32 \(3,\)"):
        interpret(module, np.zeros(3, np.float32))


# --- per-device modules: hand-written answers ------------------------------------------------


def run_per_device(mesh: MeshAttr, name: str, stacked: np.ndarray, **attrs) -> np.ndarray:
    """Interpret a per-device module that applies op ``name`` to one stacked argument."""
    builder = Builder({"mesh": mesh})
    x = builder.arg(f"{_ir_dtype(stacked)}[{','.join(map(str, stacked.shape[1:]))}]")
    result = builder.op(name, x, mesh=MESH, **attrs)
    (output,) = interpret(builder.module(result, spmd_mesh="mesh"), stacked)
    return output


def test_elementwise_and_reductions_run_on_every_device():
    builder = Builder({"mesh": mesh_of(2, 2)})
    x = builder.arg("f64[3]")
    total = builder.op("reduce_sum", builder.op("exp", x), axes=(0,))
    stacked = np.arange(12.0).reshape(4, 3) / 4
    (result,) = interpret(builder.module(total, spmd_mesh="mesh"), stacked)
    np.testing.assert_allclose(result, np.exp(stacked).sum(axis=1))


def test_all_reduce_on_two_devices():
    result = run_per_device(mesh_of(2), "all_reduce", np.int32([[1, 2], [10, 20]]), axes=("x",), reduction="sum")
    np.testing.assert_array_equal(result, [[11, 22], [11, 22]])


@pytest.mark.parametrize(
    "axes, reduction, expected",
    [(("y",), "sum", [3, 3, 7, 7]), (("x",), "sum", [4, 6, 4, 6]), (("x", "y"), "sum", [10] * 4),
     ((), "sum", [1, 2, 3, 4]), (("y",), "max", [2, 2, 4, 4]), (("x",), "min", [1, 2, 1, 2])],
)  # fmt: skip
def test_all_reduce_sub_groups_on_2x2(axes, reduction, expected):
    result = run_per_device(mesh_of(2, 2), "all_reduce", np.float32([1, 2, 3, 4]), axes=axes, reduction=reduction)
    np.testing.assert_array_equal(result, np.float32(expected))


@pytest.mark.parametrize("axes, order", [(("x", "y"), [0, 1, 2, 3]), (("y", "x"), [0, 2, 1, 3])])
def test_all_gather_concatenates_in_the_listed_axes_order(axes, order):
    result = run_per_device(mesh_of(2, 2), "all_gather", np.int32([[0], [1], [2], [3]]), axes=axes, dim=0)
    np.testing.assert_array_equal(result, [order] * 4)


def test_all_gather_over_y_on_2x4():
    result = run_per_device(mesh_of(2, 4), "all_gather", np.arange(8, dtype=np.int64).reshape(8, 1), axes=("y",), dim=0)
    np.testing.assert_array_equal(result, [[0, 1, 2, 3]] * 4 + [[4, 5, 6, 7]] * 4)


def test_reduce_scatter_on_two_devices():
    stacked = np.float64([[1, 2, 3, 4], [10, 20, 30, 40]])
    result = run_per_device(mesh_of(2), "reduce_scatter", stacked, axes=("x",), dim=0, reduction="sum")
    np.testing.assert_array_equal(result, [[11, 22], [33, 44]])


def test_all_to_all_on_two_devices():
    stacked = np.int32([[[0, 1], [2, 3]], [[4, 5], [6, 7]]])
    same_dim = run_per_device(mesh_of(2), "all_to_all", stacked.reshape(2, 4), axes=("x",), split_dim=0, concat_dim=0)
    np.testing.assert_array_equal(same_dim, [[0, 1, 4, 5], [2, 3, 6, 7]])
    other_dim = run_per_device(mesh_of(2), "all_to_all", stacked, axes=("x",), split_dim=0, concat_dim=1)
    np.testing.assert_array_equal(other_dim, [[[0, 1, 4, 5]], [[2, 3, 6, 7]]])


def test_collective_permute_shifts_along_y_and_zero_fills():
    stacked = np.arange(1, 9, dtype=np.float32)
    result = run_per_device(mesh_of(2, 4), "collective_permute", stacked, axes=("y",), pairs=((0, 1), (1, 2), (2, 3)))
    np.testing.assert_array_equal(result, [0, 1, 2, 3, 0, 5, 6, 7])


def test_collective_permute_indices_follow_the_listed_axes():
    stacked = np.arange(1, 9, dtype=np.int32)
    # Over ("y", "x") group index 1 is y=0, x=1: position 4.
    result = run_per_device(mesh_of(2, 4), "collective_permute", stacked, axes=("y", "x"), pairs=((0, 1),))
    np.testing.assert_array_equal(result, [0, 0, 0, 0, 1, 0, 0, 0])
    cycle = tuple((index, (index + 1) % 8) for index in range(8))
    rolled = run_per_device(mesh_of(2, 4), "collective_permute", stacked, axes=("x", "y"), pairs=cycle)
    np.testing.assert_array_equal(rolled, np.roll(stacked, 1))


def run_no_operand(mesh: MeshAttr, name: str, **attrs) -> np.ndarray:
    builder = Builder({"mesh": mesh})
    result = builder.op(name, mesh=MESH, **attrs)
    (output,) = interpret(builder.module(result, spmd_mesh="mesh"))
    return output


def test_axis_index_on_2x4():
    np.testing.assert_array_equal(run_no_operand(mesh_of(2, 4), "axis_index", axis="x"), [0, 0, 0, 0, 1, 1, 1, 1])
    np.testing.assert_array_equal(run_no_operand(mesh_of(2, 4), "axis_index", axis="y"), [0, 1, 2, 3] * 2)


def test_partition_id_is_the_mesh_position():
    result = run_no_operand(mesh_of(2, 2), "partition_id")
    assert result.dtype == np.int32
    np.testing.assert_array_equal(result, [0, 1, 2, 3])
    reordered = MeshAttr((("x", 2), ("y", 2)), device_ids=(3, 1, 2, 0))
    np.testing.assert_array_equal(run_no_operand(reordered, "partition_id"), [0, 1, 2, 3])
