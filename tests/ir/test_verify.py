"""The verifier accepts well-formed modules and names what is wrong with the others, including
IR that only Python code (not the parser) can build."""

from __future__ import annotations

import pytest
from meshjit.ir import (
    AxisRef,
    Block,
    DimSharding,
    Func,
    MeshAttr,
    Module,
    Op,
    SymbolRef,
    TensorSharding,
    TensorType,
    Value,
    VerifyError,
    parse_module,
    verify,
)

F32_8 = TensorType((8,), "f32")
MESHES = (("m", MeshAttr((("x", 2), ("y", 4)))), ("other", MeshAttr((("x", 2),))))


def module_of(*ops: Op, args=(), returns=None, meshes=MESHES, **func_fields) -> Module:
    returns = ops[-1].results if returns is None else returns
    return Module(meshes, (Func("main", Block(tuple(args), ops, tuple(returns)), **func_fields),))


def tanh(value: Value, **fields) -> Op:
    return Op("tanh", (value,), (Value.fresh(value.type),), **fields)


def expect_error(module: Module, fragment: str) -> VerifyError:
    with pytest.raises(VerifyError) as info:
        verify(module)
    assert fragment in str(info.value)
    return info.value


# --- accepted --------------------------------------------------------------------------------


def test_a_plain_function_verifies():
    x = Value.fresh(F32_8, "x")
    assert verify(module_of(tanh(x), args=(x,))) is None


def test_an_empty_module_verifies():
    assert verify(Module()) is None


def test_collectives_in_an_spmd_function_verify():
    x = Value.fresh(F32_8)
    op = Op(
        "all_reduce",
        (x,),
        (Value.fresh(F32_8),),
        {"mesh": SymbolRef("m"), "axes": ("x", "y"), "reduction": "max"},
    )
    verify(module_of(op, args=(x,), attrs={"spmd_mesh": SymbolRef("m")}))


MANUAL_TEXT = """mesh @m = <["x"=2, "y"=4]>

func @main(%a: f32[8,8]) -> (f32[8,8]) {
  %0 = manual_computation(%a) {in_shardings = [<@m, [{"x"}, {}]>], manual_axes = ["x"], out_shardings = [<@m, [{"x"}, {}]>]} ({
  ^body(%arg1: f32[4,8]):
    %1 = manual_computation(%arg1) {in_shardings = [<@m, [{}, {"y"}]>], manual_axes = ["y"], out_shardings = [<@m, [{}, {"y"}]>]} ({
    ^body(%arg2: f32[4,2]):
      %2 = all_reduce(%arg2) {axes = ["x", "y"], mesh = @m, reduction = "sum"} : f32[4,2]
      return %2
    }) : f32[4,8]
    return %1
  }) : f32[8,8]
  return %0
}
"""


def test_nested_manual_computations_see_every_enclosing_manual_axis():
    verify(parse_module(MANUAL_TEXT))


def test_the_outer_body_does_not_see_the_inner_manual_axes():
    text = MANUAL_TEXT.replace(
        "return %1\n", '%3 = axis_index() {axis = "y", mesh = @m} : i32[]\n    return %1\n'
    )
    expect_error(
        parse_module(text),
        "names axis 'y', not one of the manual axes of this manual_computation body ('x')",
    )


# --- SSA -------------------------------------------------------------------------------------


def test_a_value_defined_twice():
    x = Value.fresh(F32_8)
    first = tanh(x)
    second = Op("exp", (x,), first.results)
    expect_error(module_of(first, second, args=(x,)), "%0 is defined more than once")


def test_an_argument_listed_twice():
    x = Value.fresh(F32_8, "x")
    expect_error(module_of(tanh(x), args=(x, x)), "is defined more than once")


def test_use_before_definition():
    x = Value.fresh(F32_8)
    later = tanh(x)
    early = tanh(later.result)
    error = expect_error(
        module_of(early, later, args=(x,)), "operand 0 %1 is used before it is defined"
    )
    assert error.op is early


def test_a_value_defined_nowhere():
    stray = Value.fresh(F32_8)
    expect_error(
        module_of(tanh(stray)), f"operand 0 %undefined_{stray.id} is not defined in this scope"
    )


def test_a_returned_value_defined_nowhere():
    x = Value.fresh(F32_8)
    expect_error(module_of(tanh(x), args=(x,), returns=(Value.fresh(F32_8),)), "returned value 0")


def manual_op(operand: Value, body_ops, argument: Value, returned: Value) -> Op:
    sharding = TensorSharding.from_axis_names("m", (("x",),))
    attrs = {"in_shardings": (sharding,), "out_shardings": (sharding,), "manual_axes": ("x",)}
    return Op(
        "manual_computation",
        (operand,),
        (Value.fresh(F32_8),),
        attrs,
        (Block((argument,), tuple(body_ops), (returned,)),),
    )


def test_region_bodies_are_isolated_from_above():
    x = Value.fresh(F32_8)
    argument = Value.fresh(TensorType((4,), "f32"))
    inner = Op("add", (argument, x), (Value.fresh(argument.type),))
    op = manual_op(x, [inner], argument, inner.result)
    error = expect_error(
        module_of(op, args=(x,)), "defined outside this region body; bodies are isolated from above"
    )
    assert error.op is inner


def test_region_values_are_not_visible_after_the_region():
    x = Value.fresh(F32_8)
    argument = Value.fresh(TensorType((4,), "f32"))
    inner = tanh(argument)
    op = manual_op(x, [inner], argument, inner.result)
    expect_error(
        module_of(op, tanh(inner.result), args=(x,)), "operand 0 %1 is not defined in this scope"
    )


def test_a_value_type_that_is_not_a_tensor_type():
    x = Value(10**9, "f32[8]")
    expect_error(module_of(tanh(Value.fresh(F32_8)), args=(x,), returns=()), "not a TensorType")


# --- types and attributes --------------------------------------------------------------------


def test_a_region_on_an_op_that_takes_none():
    x = Value.fresh(F32_8)
    op = Op("tanh", (x,), (Value.fresh(F32_8),), regions=(Block((), (), ()),))
    expect_error(module_of(op, args=(x,)), "takes no regions")


def test_an_attribute_of_an_unsupported_kind():
    x = Value.fresh(F32_8)
    error = expect_error(
        module_of(tanh(x, attrs={"note": None}), args=(x,)),
        "attribute 'note' holds None of type NoneType",
    )
    assert '%0 = tanh(%arg0) {note = "<NoneType>"} : f32[8]' in str(error)


def test_a_function_attribute_of_an_unsupported_kind():
    x = Value.fresh(F32_8)
    expect_error(module_of(tanh(x), args=(x,), attrs={"note": object()}), "of type object")


# --- shardings -------------------------------------------------------------------------------


def sharded_arg_module(sharding) -> Module:
    x = Value.fresh(F32_8)
    return module_of(tanh(x), args=(x,), arg_shardings=(sharding,))


@pytest.mark.parametrize(
    ("sharding", "fragment"),
    [
        (
            TensorSharding.from_axis_names("nowhere", (("x",),)),
            "names mesh @nowhere, which is not defined",
        ),
        (
            TensorSharding("m", (DimSharding((AxisRef("x", 2),)),)),
            '"x":(2) has a pre-size but no size',
        ),
        (
            TensorSharding("m", (DimSharding((AxisRef("y", 0, 2),)),)),
            "needs a positive pre-size and size",
        ),
        (
            TensorSharding("m", (DimSharding((AxisRef("y", 4, 2),)),)),
            "does not divide axis 'y' of size 4",
        ),
        (TensorSharding("m", (DimSharding((), True, -1),)), "priorities are non-negative ints"),
        (
            TensorSharding("m", (DimSharding(),), unreduced=(AxisRef("y"), AxisRef("y", 2, 2))),
            "overlap",
        ),
        (
            TensorSharding("m", (DimSharding((AxisRef("w"),)),)),
            '"w" is not an axis of the mesh (x, y)',
        ),
        ("not a sharding", "is a str, not a TensorSharding"),
    ],
)
def test_argument_shardings_must_fit_their_mesh(sharding, fragment):
    expect_error(sharded_arg_module(sharding), fragment)


def test_disjoint_sub_axes_fit():
    sharding = TensorSharding(
        "m", (DimSharding((AxisRef("y", 1, 2),)),), (AxisRef("y", 2, 2), AxisRef("x"))
    )
    verify(sharded_arg_module(sharding))


def test_sharding_counts_match_the_signature():
    x = Value.fresh(F32_8)
    op = tanh(x)
    func = Func("main", Block((x,), (op,), op.results), (None, None))
    expect_error(Module(MESHES, (func,)), "1 arguments but 2 argument shardings")
    func = Func("main", Block((x,), (op,), op.results), result_shardings=(None, None))
    expect_error(Module(MESHES, (func,)), "1 results but 2 result shardings")


def test_op_result_shardings_are_checked():
    x = Value.fresh(F32_8)
    op = tanh(x, shardings=(TensorSharding.from_axis_names("m", (("x",), ("y",))),))
    expect_error(
        module_of(op, args=(x,)), "the sharding of result 0 has 2 dims for a rank-1 tensor"
    )


def test_shardings_inside_attributes_are_checked():
    x = Value.fresh(F32_8)
    bad = TensorSharding.from_axis_names("m", (("x", "x"),))
    op = Op("sharding_constraint", (x,), (Value.fresh(F32_8),), {"sharding": bad})
    expect_error(module_of(op, args=(x,)), 'axis "x" is used twice')


# --- module level and per-device ops ---------------------------------------------------------


def test_duplicate_symbols():
    x = Value.fresh(F32_8)
    func = Func("main", Block((x,), (), (x,)))
    with pytest.raises(VerifyError, match="function @main twice"):
        verify(Module(MESHES, (func, func)))
    with pytest.raises(VerifyError, match="mesh @m twice"):
        verify(Module(MESHES + MESHES[:1], (func,)))
    with pytest.raises(VerifyError, match="not a MeshAttr"):
        verify(Module((("m", "x=2"),), (func,)))


def collective(name: str, operand: Value | None, **attrs) -> Op:
    operands = () if operand is None else (operand,)
    result = TensorType((), "i32") if operand is None else operand.type
    return Op(name, operands, (Value.fresh(result),), attrs)


@pytest.mark.parametrize(
    ("op_name", "attrs", "fragment"),
    [
        (
            "all_reduce",
            {"mesh": SymbolRef("other"), "axes": ("x",), "reduction": "sum"},
            "must name mesh = @m",
        ),
        ("all_gather", {"axes": ("x",), "dim": 0}, "must name mesh = @m"),
        (
            "axis_index",
            {"mesh": SymbolRef("m"), "axis": "z"},
            "names axis 'z', not one of the axes ('x', 'y')",
        ),
        ("partition_id", {"mesh": SymbolRef("m")}, None),
    ],
)
def test_per_device_ops_in_an_spmd_function(op_name, attrs, fragment):
    x = Value.fresh(F32_8)
    op = collective(op_name, None if op_name in ("axis_index", "partition_id") else x, **attrs)
    module = module_of(op, args=(x,), attrs={"spmd_mesh": SymbolRef("m")})
    if fragment is None:
        verify(module)
    else:
        expect_error(module, fragment)


def test_spmd_mesh_must_be_a_symbol():
    x = Value.fresh(F32_8)
    expect_error(
        module_of(tanh(x), args=(x,), attrs={"spmd_mesh": "m"}), "spmd_mesh must name a mesh"
    )
