"""The text form: golden files re-print byte-identical, and printing then parsing round-trips."""

from __future__ import annotations

import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
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
    parse_module,
    print_module,
    renumber,
    verify,
)

GOLDEN_DIR = Path(__file__).parent.parent / "golden" / "ir"
GOLDEN_FILES = sorted(GOLDEN_DIR.glob("*.mjir"))
F32_8 = TensorType((8,), "f32")


def round_trip(module: Module) -> Module:
    """Print, parse and check both round-trip properties; the parsed module is returned."""
    text = print_module(module)
    parsed = parse_module(text)
    assert renumber(parsed) == renumber(module)
    assert print_module(parsed) == text
    return parsed


def single_op_module(op: Op, *args: Value, meshes=()) -> Module:
    return Module(meshes, (Func("main", Block(args, (op,), op.results)),))


def test_there_is_a_golden_file_per_op_family():
    assert len(GOLDEN_FILES) >= 8


@pytest.mark.parametrize("path", GOLDEN_FILES, ids=lambda path: path.stem)
def test_golden_file_parses_verifies_and_reprints_identically(path):
    text = path.read_text(encoding="utf-8")
    module = parse_module(text)
    verify(module)
    assert print_module(module) == text
    assert renumber(parse_module(print_module(module))) == renumber(module)


def test_str_of_module_is_its_text():
    module = parse_module((GOLDEN_DIR / "sharding_manual.mjir").read_text())
    assert str(module) == print_module(module)


def test_the_design_example_prints_as_documented():
    x = Value.fresh(TensorType((8, 16), "f32"), "a")
    y = Value.fresh(TensorType((16, 32), "f32"), "b")
    sharding = TensorSharding.from_axis_names("mesh", (("x",), ()))
    dot = Op(
        "dot_general",
        (x, y),
        (Value.fresh(TensorType((8, 32), "f32")),),
        {"contracting_dims": ((1,), (0,)), "batch_dims": ((), ())},
        shardings=(sharding,),
    )
    tanh = Op("tanh", dot.results, (Value.fresh(TensorType((8, 32), "f32")),))
    func = Func("main", Block((x, y), (dot, tanh), tanh.results), (sharding, None))
    module = Module((("mesh", MeshAttr((("x", 2), ("y", 4)))),), (func,))
    assert print_module(module) == (
        'mesh @mesh = <["x"=2, "y"=4]>\n\n'
        'func @main(%a: f32[8,16] {sharding = <@mesh, [{"x"}, {}]>}, %b: f32[16,32]) -> (f32[8,32]) {\n'
        "  %0 = dot_general(%a, %b) {batch_dims = [[], []], contracting_dims = [[1], [0]]}"
        ' : f32[8,32] <@mesh, [{"x"}, {}]>\n'
        "  %1 = tanh(%0) : f32[8,32]\n"
        "  return %1\n"
        "}\n"
    )
    round_trip(module)


@pytest.mark.parametrize(
    ("sharding", "text"),
    [
        (TensorSharding("m", ()), "<@m, []>"),
        (TensorSharding.from_axis_names("m", (("x", "y"), ())), '<@m, [{"x", "y"}, {}]>'),
        (
            TensorSharding(
                "m", (DimSharding((AxisRef("z", 1, 2),), False), DimSharding((), False))
            ),
            '<@m, [{"z":(1)2, ?}, {?}]>',
        ),
        (TensorSharding("m", (DimSharding((), True, 1),)), "<@m, [{}p1]>"),
        (
            TensorSharding("m", (DimSharding(),), (AxisRef("w"),), (AxisRef("v"),)),
            '<@m, [{}], replicated={"w"}, unreduced={"v"}>',
        ),
        (
            TensorSharding("m", (), unreduced=(AxisRef("v"),), reduction="max"),
            '<@m, [], unreduced_max={"v"}>',
        ),
        (TensorSharding("m", (), reduction="min"), "<@m, [], unreduced_min={}>"),
        (TensorSharding("two words", ()), '<@"two words", []>'),
    ],
)
def test_sharding_text(sharding, text):
    assert str(sharding) == text
    value = Value.fresh(
        TensorType((), "f32") if not sharding.dims else TensorType((4,) * sharding.rank, "f32")
    )
    op = Op("sharding_constraint", (value,), (Value.fresh(value.type),), {"sharding": sharding})
    mesh = MeshAttr(tuple((name, 4) for name in "vwxyz"))
    parsed = round_trip(single_op_module(op, value, meshes=(("m", mesh), ("two words", mesh))))
    assert parsed.main.body.ops[0].attrs["sharding"] == sharding


def test_argument_names_use_usable_unique_hints():
    hints = ["a", "a", "1bad", "with space", "arg0", "arg5", None, "b"]
    args = tuple(Value.fresh(F32_8, hint) for hint in hints)
    op = Op("add", (args[-1], args[0]), (Value.fresh(F32_8),))
    header = print_module(Module((), (Func("f", Block(args, (op,), op.results)),))).splitlines()[0]
    names = [part.split(":")[0] for part in header.split("(", 1)[1].split(", %")]
    assert names == ["%arg0", "arg1", "arg2", "arg3", "arg4", "arg5", "arg6", "b"]


def test_region_arguments_continue_the_argument_count():
    module = parse_module((GOLDEN_DIR / "sharding_manual.mjir").read_text())
    assert "^body(%arg3: f32[4,32], %arg4: f32[4,8]):" in print_module(module)


def test_parsed_arguments_keep_their_names_as_hints():
    module = parse_module("func @f(%weights: f32[8]) -> (f32[8]) {\n  return %weights\n}\n")
    assert module.main.args[0].hint == "weights"


@pytest.mark.parametrize(
    "value",
    [
        0,
        -7,
        2**70,
        True,
        False,
        1.5,
        -0.0,
        5e-324,
        1e300,
        math.inf,
        -math.inf,
        math.nan,
        "",
        "plain",
        'quote " and \\ backslash',
        "tab\tnewline\nreturn\r",
        "\x00\x1f\x7f",
        "ünïcödé",
        "emoji \U0001f600",
        "lone \ud800 surrogate",
        SymbolRef("main"),
        SymbolRef("with space"),
        (),
        (1, (2.5, ("x",)), ()),
        TensorType((), "bool"),
        TensorType((0, 3), "i64"),
        DenseAttr.from_array(np.arange(3, dtype=np.int32)),
    ],
    ids=repr,
)
def test_attribute_values_round_trip(value):
    op = Op("custom", (), (Value.fresh(F32_8),), {"value": value})
    parsed = round_trip(single_op_module(op))
    assert parsed.main.body.ops[0].attrs == op.attrs


def float_bits(values, dtype):
    unsigned = np.uint32 if dtype == np.float32 else np.uint64
    return np.array(values, dtype=unsigned).view(dtype)


@pytest.mark.parametrize(
    "array",
    [
        np.array(1.5, dtype=np.float32),
        np.array([0.1, -0.0, 1e-45, 3.4028235e38, np.inf, -np.inf, np.nan], dtype=np.float32),
        float_bits([0x7F800001, 0xFFC00000, 0x7FC12345, 0x00000001], np.float32),
        float_bits([0x7FF0000000000001, 0x7FF8000000000000, 0x0000000000000001], np.float64),
        np.array([0.1, 1 / 3, 2.0**-1074, -1e308], dtype=np.float64),
        np.array([[True, False], [False, True]]),
        np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max], dtype=np.int64),
        np.array([np.iinfo(np.int32).min, -1, 0], dtype=np.int32),
        np.zeros((2, 0, 3), dtype=np.float32),
        np.zeros((0,), dtype=np.bool_),
        np.arange(65, dtype=np.float32) / 7,
        np.array([True, False] * 40).reshape(8, 10),
        np.zeros((1000, 0), dtype=np.int32),
        float_bits(np.arange(0x7F800001, 0x7F800001 + 100), np.float32),
        # 16-bit floats: subnormals, the largest finite, infinities, NaN payloads, every bit pattern
        np.array([0.1, -0.0, 6e-8, 65504.0, np.inf, -np.inf, np.nan], dtype=np.float16),
        np.array([0x7C01, 0xFE00, 0x0001, 0x3C00, 0x8001], np.uint16).view(np.float16),
        np.array([0x7F81, 0xFFC0, 0x0001, 0x7F7F, 0x3F80, 0x3DCD], np.uint16).view(ml_dtypes.bfloat16),
        np.arange(0, 2**16, 997, dtype=np.uint16)[:60].view(ml_dtypes.bfloat16),
        np.arange(0, 2**16, 1021, dtype=np.uint16).view(np.float16),
    ],
    ids=lambda array: f"{array.dtype}{list(array.shape)}",
)
def test_constants_keep_their_exact_bits(array):
    attr = DenseAttr.from_array(array)
    op = Op("constant", (), (Value.fresh(attr.type),), {"value": attr})
    parsed = round_trip(single_op_module(op))
    assert parsed.main.body.ops[0].attrs["value"].data == attr.data


def test_small_constants_list_their_elements_and_large_ones_use_hex():
    small = print_module(single_op_module(constant_op(np.arange(64, dtype=np.int32))))
    large = print_module(single_op_module(constant_op(np.arange(65, dtype=np.int32))))
    assert "dense<[0, 1, 2," in small
    assert 'dense<"0x00000000010000000200' in large


def constant_op(array) -> Op:
    attr = DenseAttr.from_array(array)
    return Op("constant", (), (Value.fresh(attr.type),), {"value": attr})


@pytest.mark.parametrize(
    ("location", "text"),
    [
        ("model.py:12", 'loc("model.py":12)'),
        ("model.py:12:5", 'loc("model.py":12:5)'),
        ("<stdin>", 'loc("<stdin>")'),
        ('C:\\dir "x".py:3', 'loc("C:\\\\dir \\"x\\".py":3)'),
    ],
)
def test_locations(location, text):
    value = Value.fresh(F32_8)
    op = Op("tanh", (value,), (Value.fresh(F32_8),), location=location)
    module = single_op_module(op, value)
    assert print_module(module).splitlines()[1].endswith(" " + text)
    assert round_trip(module).main.body.ops[0].location == location


def test_op_and_attribute_names_that_are_not_plain_names_are_quoted():
    value = Value.fresh(F32_8)
    ops = [
        Op("return", (value,), (Value.fresh(F32_8),)),
        Op("loc", (), ()),
        Op("my op", (), (Value.fresh(F32_8),), {"attr name": 1, "mesh": SymbolRef("mesh")}),
        Op("sdy.sharding", (), (Value.fresh(F32_8),)),
    ]
    module = Module((), (Func("weird func", Block((value,), tuple(ops), (value,))),))
    text = print_module(module)
    assert '"return"(%arg0)' in text and '"loc"() : ()' in text
    assert '"my op"() {"attr name" = 1, mesh = @mesh}' in text and "sdy.sharding()" in text
    assert text.startswith('func @"weird func"(')
    round_trip(module)


def test_results_with_and_without_shardings():
    value = Value.fresh(TensorType((4, 4), "f32"))
    sharding = TensorSharding.from_axis_names("m", (("x",), ()))
    op = Op(
        "sort",
        (value, value),
        (Value.fresh(value.type), Value.fresh(value.type)),
        {"dimension": 1, "is_stable": True, "num_keys": 1},
        shardings=(None, sharding),
    )
    module = single_op_module(op, value, meshes=(("m", MeshAttr((("x", 2),))),))
    assert ': f32[4,4], f32[4,4] <@m, [{"x"}, {}]>' in print_module(module)
    assert round_trip(module).main.body.ops[0].shardings == (None, sharding)


def test_meshes_with_device_order_and_no_axes():
    meshes = (("ring", MeshAttr((("i", 4),), (3, 2, 1, 0))), ("single", MeshAttr(())))
    value = Value.fresh(F32_8)
    module = Module(meshes, (Func("f", Block((value,), (), (value,))),))
    assert print_module(module).splitlines()[:2] == [
        'mesh @ring = <["i"=4], device_ids=[3, 2, 1, 0]>',
        "mesh @single = <[]>",
    ]
    round_trip(module)


def test_function_attributes_and_several_functions():
    value = Value.fresh(F32_8)
    first = Func("main", Block((value,), (), (value,)), attrs={"spmd_mesh": SymbolRef("m")})
    second = Func("helper", Block((), (), ()))
    module = Module((("m", MeshAttr((("x", 2),))),), (first, second))
    text = print_module(module)
    assert "func @main(%arg0: f32[8]) -> (f32[8]) attributes {spmd_mesh = @m} {" in text
    assert "func @helper() -> () {\n  return\n}\n" in text
    round_trip(module)


def test_the_parser_accepts_comments_bare_results_and_bytes():
    text = (
        "// a comment line\n"
        "func @f(%x: f32[8]) -> f32[8] {  // trailing comment\n"
        "  %0 = tanh(%x) : f32[8]\n"
        "  return %0\n"
        "}\n"
    )
    module = parse_module(text.encode("utf-8"))
    assert print_module(module).splitlines()[0] == "func @f(%x: f32[8]) -> (f32[8]) {"


def test_invalid_ir_still_prints():
    stray = Value.fresh(F32_8)
    op = Op("tanh", (stray,), (Value.fresh(F32_8),))
    text = print_module(Module((), (Func("f", Block((), (op,), op.results)),)))
    assert f"%undefined_{stray.id}" in text


def test_attributes_without_a_text_form_are_refused():
    op = Op("custom", (), (Value.fresh(F32_8),), {"bad": object()})
    with pytest.raises(TypeError, match="has no text form"):
        print_module(single_op_module(op))
