"""Shape rules: result types on every op-table case, a ShapeError naming the op for every
malformed use, manual_computation's region checks, and registry completeness."""

from __future__ import annotations

import pytest
from meshjit.ir import (
    AxisRef,
    Block,
    DimSharding,
    ShapeError,
    TensorSharding,
    TensorType,
    Value,
    infer_result_types,
)
from meshjit.ir.interpret import region_impls
from meshjit.ir.reference import reference_impls
from meshjit.ir.ops.collectives import collective_impls
from meshjit.ir.registry import MissingRuleError
from meshjit.ir.ops import ALL_OPS
from meshjit.ir.shape_rules import shape_rules
from op_oracles import NUMPY_DTYPES
from op_records import MESH, MESHES, instances, parse_types, rng_for
from op_table import RECORDS, RECORDS_BY_NAME

# The op table of the IR contract, transcribed section by section.
SPEC_OPS = {
    *[
        "exp",
        "exp2",
        "log",
        "log1p",
        "expm1",
        "tanh",
        "logistic",
        "sin",
        "cos",
        "tan",
        "sqrt",
        "rsqrt",
        "cbrt",
        "erf",
        "erf_inv",
        "floor",
        "ceil",
        "round",
    ],
    *["nextafter", "fma", "bitcast_convert_type", "threefry2x32"],
    *["complex", "real", "imag", "conj", "fft"],
    *[
        "neg",
        "abs",
        "sign",
        "square",
        "is_finite",
        "not",
        "add",
        "sub",
        "mul",
        "div",
        "rem",
        "pow",
        "max",
        "min",
        "atan2",
        "and",
        "or",
        "xor",
    ],
    *[
        "shift_left",
        "shift_right_arithmetic",
        "shift_right_logical",
        "compare",
        "select",
        "clamp",
        "convert",
    ],
    *[
        "integer_pow",
        "iota",
        "constant",
        "broadcast_in_dim",
        "reshape",
        "transpose",
        "slice",
        "dynamic_slice",
    ],
    *["dynamic_update_slice", "pad", "concatenate", "rev", "squeeze", "expand_dims", "dot_general"],
    *[
        "reduce_sum",
        "reduce_max",
        "reduce_min",
        "reduce_prod",
        "reduce_and",
        "reduce_or",
        "argmax",
        "argmin",
    ],
    *[
        "cumsum",
        "cumprod",
        "cummax",
        "cummin",
        "sort",
        "top_k",
        "gather",
        "scatter",
        "scatter_add",
        "scatter_mul",
        "scatter_min",
        "scatter_max",
        "conv_general_dilated",
        "reduce_window_sum",
        "reduce_window_max",
        "reduce_window_min",
        "sharding_constraint",
        "manual_computation",
        "scan",
        "while",
        "cond",
    ],
    *[
        "all_reduce",
        "all_gather",
        "reduce_scatter",
        "all_to_all",
        "collective_permute",
        "axis_index",
    ],
    "partition_id",
    "pvary",
    "optimization_barrier",
    "debug_callback",
    "pure_callback",
    "io_callback",
    *["cholesky", "triangular_solve", "lu", "qr", "eigh", "svd", "eig", "hessenberg", "schur"],
}
NUMPY_TO_IR = {numpy_dtype: name for name, numpy_dtype in NUMPY_DTYPES.items()}


def test_all_ops_is_the_spec_table():
    assert set(ALL_OPS) == SPEC_OPS
    assert list(ALL_OPS) == sorted(ALL_OPS)


def test_every_op_has_a_shape_rule_and_exactly_one_implementation():
    assert set(shape_rules) == set(ALL_OPS)
    for op in ALL_OPS:
        owners = [
            registry.name
            for registry in (reference_impls, collective_impls, region_impls)
            if op in registry
        ]
        assert len(owners) == 1, f"{op} is implemented in {owners}"


def test_implementations_cover_only_known_ops():
    implemented = set(reference_impls) | set(collective_impls) | set(region_impls)
    assert implemented == set(ALL_OPS)


def test_op_table_has_one_record_per_op_with_bad_cases():
    assert len(RECORDS) == len(RECORDS_BY_NAME)
    assert set(RECORDS_BY_NAME) == set(ALL_OPS)
    for record in RECORDS:
        assert record.bad, f"{record.name} has no malformed case"
        assert record.oracle is not None or record.name not in reference_impls, record.name


def operand_types_of(record, case, dtype, test_id) -> list[TensorType]:
    if record.oracle is None:
        return [TensorType(shape, dtype) for shape in case.shapes]
    operands = record.make(rng_for(test_id), case.shapes, dtype, case.attrs_for(dtype))
    return [TensorType(array.shape, NUMPY_TO_IR[array.dtype]) for array in operands]


@pytest.mark.parametrize(
    "record, case, dtype, test_id",
    [pytest.param(*instance, id=instance[-1]) for instance in instances(RECORDS)],
)
def test_result_types(record, case, dtype, test_id):
    attrs = case.attrs_for(dtype)
    operand_types = operand_types_of(record, case, dtype, test_id)
    if record.oracle is None:
        expected = parse_types(" ".join(text.format(dtype=dtype) for text in case.expected))
    else:
        operands = record.make(rng_for(test_id), case.shapes, dtype, attrs)
        results = record.oracle(attrs, *operands)
        expected = [TensorType(array.shape, NUMPY_TO_IR[array.dtype]) for array in results]
    assert infer_result_types(record.name, operand_types, attrs, meshes=MESHES) == tuple(expected)


BAD_CASES = [
    pytest.param(record.name, bad, id=f"{record.name}-{i}")
    for record in RECORDS
    for i, bad in enumerate(record.bad)
]


@pytest.mark.parametrize("name, bad", BAD_CASES)
def test_malformed_use_raises_shape_error(name, bad):
    with pytest.raises(ShapeError) as raised:
        infer_result_types(name, parse_types(bad.operands), bad.attrs, meshes=MESHES)
    assert isinstance(raised.value, TypeError)
    assert str(raised.value).startswith(f"{name}: ")
    assert bad.message in str(raised.value)


def test_unknown_op_names_the_registry():
    with pytest.raises(
        MissingRuleError, match="'frobnicate' has no entry in the shape rule registry"
    ):
        infer_result_types("frobnicate", [], {})


def test_regions_only_where_the_op_takes_them():
    body = Block((), (), ())
    with pytest.raises(ShapeError, match="add: takes no regions, got 1"):
        infer_result_types("add", parse_types("f32[2] f32[2]"), {}, regions=(body,))


def test_collectives_need_the_meshes():
    with pytest.raises(
        ShapeError, match="all_reduce: needs the module's meshes to look up mesh @mesh"
    ):
        infer_result_types(
            "all_reduce", parse_types("f32[2]"), {"mesh": MESH, "axes": ("x",), "reduction": "sum"}
        )


def test_operands_must_be_tensor_types():
    with pytest.raises(ShapeError, match="neg: operand 0 must be a TensorType"):
        infer_result_types("neg", ["f32[2]"], {})


# --- manual_computation ----------------------------------------------------------------------


def sharding(*dims) -> TensorSharding:
    return TensorSharding.from_axis_names("mesh", dims)


def manual(
    operand_types,
    body_arg_types,
    body_return_types,
    in_shardings,
    out_shardings,
    manual_axes=("x", "y"),
):
    args = tuple(Value.fresh(parse_types(text)[0]) for text in body_arg_types)
    returns = tuple(Value.fresh(parse_types(text)[0]) for text in body_return_types)
    attrs = {
        "in_shardings": in_shardings,
        "out_shardings": out_shardings,
        "manual_axes": manual_axes,
    }
    # NOTE: the body's ops do not matter to the rule; it reads only the signature.
    body = Block(args, (), returns)
    return infer_result_types(
        "manual_computation", parse_types(operand_types), attrs, (body,), MESHES
    )


def test_manual_computation_result_types():
    result = manual(
        "f32[8,16] f32[16,12]", ["f32[4,4]", "f32[4,12]"], ["f32[4,12]"],
        (sharding(("x",), ("y",)), sharding(("y",), ())), (sharding(("x",), ()),),
    )  # fmt: skip
    assert result == (TensorType((8, 12), "f32"),)


def test_manual_computation_ignores_axes_that_are_not_manual():
    result = manual(
        "f32[8,16]",
        ["f32[8,4]"],
        ["i32[2]"],
        (sharding(("x",), ("y",)),),
        (sharding(("x", "y")),),
        manual_axes=("y",),
    )
    assert result == (TensorType((8,), "i32"),)


def test_manual_computation_with_a_sub_axis():
    half_of_y = TensorSharding("mesh", (DimSharding((AxisRef("y", 1, 2),)),))
    assert manual("f32[6]", ["f32[3]"], ["f32[3]"], (half_of_y,), (half_of_y,)) == (
        TensorType((6,), "f32"),
    )


@pytest.mark.parametrize(
    "operands, args, returns, in_shardings, out_shardings, manual_axes, message",
    [
        ("f32[8]", ["f32[8]"], [], (sharding(("x",)),), (), ("x",), "body argument 0 is f32[8], expected f32[4]"),
        ("f32[6]", ["f32[2]"], [], (sharding(("y",)),), (), ("y",), "operand 0 f32[6]: dim 0 of size 6 does not divide into 4 shards"),
        ("f32[8]", ["f32[4]"], [], (sharding(("x",)),), (), ("z",), "manual axis 'z' is not an axis of the mesh ['x', 'y']"),
        ("f32[8]", ["f32[4]"], ["f32[4]"], (sharding(("x",)),), (), ("x",), "the body returns 1 values for 0 out_shardings"),
        ("f32[8]", [], [], (sharding(("x",)),), (), ("x",), "the body takes 0 arguments for 1 operands"),
        ("f32[8]", ["f32[4]"], ["f32[4]"], (sharding(("x",)),), (sharding(),), ("x",), "out_shardings[0] has 0 dims but f32[4] has rank 1"),
        ("f32[8]", ["f32[4]"], [], (sharding(("x",)),), (), ("x", "x"), "manual_axes ('x', 'x') has duplicates"),
        ("", [], [], (), (), ("x",), "needs at least one operand or result sharding to name its mesh"),
        ("f32[8]", ["f32[4]"], ["f32[4]"], (sharding(("x",)),), (TensorSharding.from_axis_names("other", (("x",),)),), ("x",),
         "all in_shardings and out_shardings must use mesh @mesh"),
    ],
)  # fmt: skip
def test_manual_computation_errors(
    operands, args, returns, in_shardings, out_shardings, manual_axes, message
):
    with pytest.raises(ShapeError) as raised:
        manual(operands, args, returns, in_shardings, out_shardings, manual_axes)
    assert str(raised.value).startswith("manual_computation: ")
    assert message in str(raised.value)


# Attribute values of every wrong kind: a rule must answer each with a ShapeError or a type,
# never with another exception (the verifier reports ShapeErrors as bad ops).
GARBAGE = (None, "x", 1.5, (1.5,), ((),), -1, 10**9, True, (True,), ((True, 1),), (("a", "b"),), ())


OPTIONAL_ATTRS = {("round", "rounding_method"), ("dot_general", "preferred_element_type")}


def test_garbage_attributes_raise_only_shape_errors():
    first_cases = {}
    for record, case, dtype, test_id in instances(RECORDS):
        first_cases.setdefault(record.name, (record, case, dtype, test_id))
    for name, (record, case, dtype, test_id) in first_cases.items():
        attrs = case.attrs_for(dtype)
        operand_types = operand_types_of(record, case, dtype, test_id)
        for key in attrs:
            for garbage in GARBAGE:
                try:
                    infer_result_types(name, operand_types, {**attrs, key: garbage}, meshes=MESHES)
                except ShapeError:
                    pass
            if (name, key) in OPTIONAL_ATTRS:
                continue
            without = {other: value for other, value in attrs.items() if other != key}
            with pytest.raises(ShapeError, match=f"{name}: missing attribute '{key}'"):
                infer_result_types(name, operand_types, without, meshes=MESHES)
