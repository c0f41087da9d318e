"""The interpreter on global modules: every op-table case as a one-op module, results and
argument checks, and manual_computation (splitting, SPMD bodies, assembling)."""

from __future__ import annotations

import numpy as np
import pytest
from meshjit.ir import Attrs, Block, Func, Module, Op, TensorSharding, Value, interpret
from module_builder import Builder, mesh_of, type_text
from op_records import MESH, MESHES, assert_results_match, instances, parse_types, rng_for
from op_table import RECORDS

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
    builder = Builder(MESHES)
    args = [builder.arg(type_text(array.shape, array.dtype)) for array in operands]
    results = builder.op(record.name, *args, **attrs)
    results = results if isinstance(results, tuple) else (results,)
    with np.errstate(all="ignore"):
        expected = record.oracle(Attrs(attrs), *operands)
    assert_results_match(interpret(builder.module(*results), *operands), expected, record)


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
    with pytest.raises(
        ValueError,
        match=r"a leading device axis of 4 for mesh @mesh, then the per-device shape \(3,\)",
    ):
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
    with pytest.raises(
        ValueError, match=r"neg result 0: the IR declares f32\[4\], the op computed float32 \(3,\)"
    ):
        interpret(module, np.zeros(3, np.float32))


# --- manual_computation ----------------------------------------------------------------------


def sharding(*dims) -> TensorSharding:
    return TensorSharding.from_axis_names("mesh", dims)


def manual_module(
    meshes, body: Builder, body_returns, operand_types, in_shardings, out_shardings, manual_axes
):
    outer = Builder(meshes)
    operands = [outer.arg(text) for text in operand_types]
    results = outer.op(
        "manual_computation", *operands, regions=(body.block(*body_returns),),
        in_shardings=in_shardings, out_shardings=out_shardings, manual_axes=manual_axes,
    )  # fmt: skip
    return outer.module(*(results if isinstance(results, tuple) else (results,)))


@pytest.mark.parametrize(
    "manual_axes, lhs_sharding, local_lhs",
    [(("x", "y"), (("x",), ("y",)), "f64[4,4]"), (("y",), (("x",), ("y",)), "f64[8,4]")],
)
def test_sharded_matmul_with_psum_equals_the_matmul(manual_axes, lhs_sharding, local_lhs):
    meshes = {"mesh": mesh_of(2, 4)}
    body = Builder(meshes)
    lhs, rhs = body.arg(local_lhs), body.arg("f64[4,12]")
    partial = body.op("dot_general", lhs, rhs, contracting_dims=((1,), (0,)), batch_dims=((), ()))
    total = body.op("all_reduce", partial, mesh=MESH, axes=("y",), reduction="sum")
    out_sharding = sharding(("x",), ()) if "x" in manual_axes else sharding((), ())
    module = manual_module(
        meshes, body, [total], ["f64[8,16]", "f64[16,12]"],
        (sharding(*lhs_sharding), sharding(("y",), ())), (out_sharding,), manual_axes,
    )  # fmt: skip
    rng = np.random.default_rng(0)
    lhs_value, rhs_value = rng.normal(size=(8, 16)), rng.normal(size=(16, 12))
    (result,) = interpret(module, lhs_value, rhs_value)
    np.testing.assert_allclose(result, lhs_value @ rhs_value, rtol=1e-12)


def test_outputs_are_assembled_from_coordinate_zero_of_unsharded_axes():
    meshes = {"mesh": mesh_of(2, 4)}
    body = Builder(meshes)
    x_index = body.op("axis_index", mesh=MESH, axis="x")
    y_index = body.op("axis_index", mesh=MESH, axis="y")
    ten = body.op("constant", value=np.array(10, np.int32))
    code = body.op("add", body.op("mul", x_index, ten), y_index)  # 10 * x + y
    pair = body.op("broadcast_in_dim", code, shape=(2,), broadcast_dimensions=())
    outs = (sharding(("x",)), sharding(("y",)), sharding(()), sharding(("y", "x")))
    module = manual_module(meshes, body, [pair] * 4, [], (), outs, ("x", "y"))
    by_x, by_y, neither, by_y_then_x = interpret(module)
    np.testing.assert_array_equal(by_x, [0, 0, 10, 10])
    np.testing.assert_array_equal(by_y, [0, 0, 1, 1, 2, 2, 3, 3])
    np.testing.assert_array_equal(neither, [0, 0])
    np.testing.assert_array_equal(by_y_then_x, np.repeat([0, 10, 1, 11, 2, 12, 3, 13], 2))


@pytest.mark.parametrize(
    "dims", [(("x",), ("y",)), (("y", "x"), ()), ((), ("x", "y")), ((), ()), (("y",), ())]
)
def test_split_then_assemble_is_the_identity(dims):
    meshes = {"mesh": mesh_of(2, 4)}
    body = Builder(meshes)
    local_type = sharding(*dims).local_shape((8, 8), meshes["mesh"])
    arg = body.arg(f"i64[{local_type[0]},{local_type[1]}]")
    module = manual_module(
        meshes, body, [arg], ["i64[8,8]"], (sharding(*dims),), (sharding(*dims),), ("x", "y")
    )
    value = np.arange(64).reshape(8, 8)
    np.testing.assert_array_equal(interpret(module, value)[0], value)


def test_partition_id_inside_a_manual_body():
    meshes = {"mesh": mesh_of(2, 4)}
    body = Builder(meshes)
    position = body.op("expand_dims", body.op("partition_id", mesh=MESH), dimensions=(0,))
    module = manual_module(meshes, body, [position], [], (), (sharding(("x", "y")),), ("x", "y"))
    np.testing.assert_array_equal(interpret(module)[0], np.arange(8))
    partial = manual_module(meshes, body, [position], [], (), (sharding(("y",)),), ("y",))
    with pytest.raises(
        ValueError, match="partition_id needs every axis of mesh @mesh to be manual"
    ):
        interpret(partial)


def test_collectives_in_a_body_name_only_manual_axes():
    meshes = {"mesh": mesh_of(2, 4)}
    body = Builder(meshes)
    arg = body.arg("f32[2]")
    total = body.op("all_reduce", arg, mesh=MESH, axes=("x",), reduction="sum")
    module = manual_module(
        meshes, body, [total], ["f32[8]"], (sharding(("y",)),), (sharding(("y",)),), ("y",)
    )
    with pytest.raises(
        ValueError,
        match=r"all_reduce names axis 'x', but this run steps only over the axes \['y'\]",
    ):
        interpret(module, np.zeros(8, np.float32))
