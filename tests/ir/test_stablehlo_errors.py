"""parse_stablehlo's boundary: an op or attribute it cannot map is a ParseError naming the op and
its line, malformed text one with the line and column; GSPMD strings and small hand-written
modules; and every CLI command reading a .mlir file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from meshjit import cli
from meshjit.ir import ParseError, interpret
from meshjit.ir import parse_stablehlo
from meshjit.ir.stablehlo import known_ops
from meshjit.ir.stablehlo.gspmd import GspmdError, infer_mesh, parse_sharding, to_tensor_sharding

CORPUS = Path(__file__).parent / "stablehlo_corpus"


def module(*body: str, args: str = "%arg0: tensor<4xf32>", results: str = "tensor<4xf32>") -> str:
    lines = "\n".join(f"    {line}" for line in body)
    return (f"module @jit_f attributes {{mhlo.num_partitions = 1 : i32}} {{\n"
            f"  func.func public @main({args}) -> ({results}) {{\n{lines}\n  }}\n}}\n")


def parse_error(text: str) -> ParseError:
    with pytest.raises(ParseError) as caught:
        parse_stablehlo(text)
    return caught.value


def test_an_unknown_op_names_itself_and_its_line():
    error = parse_error(module("%0 = stablehlo.exponential %arg0 : tensor<4xf32>",
                               "%1 = stablehlo.popcnt %0 : tensor<4xf32>", "return %1 : tensor<4xf32>"))
    assert error.line == 4
    assert "stablehlo.popcnt" in error.message
    assert "stablehlo.popcnt" in str(error)  # the source line is shown under the message


def test_malformed_text_gives_the_line_and_column():
    error = parse_error(module("%0 = stablehlo.slice %arg0 [0:2 : (tensor<4xf32>) -> tensor<2xf32>",
                               "return %0 : tensor<2xf32>", results="tensor<2xf32>"))
    assert (error.line, error.column) == (3, 71)
    assert error.message == "unexpected end of line: brackets do not match here"


def test_an_unterminated_module_is_an_error_at_the_end():
    error = parse_error(module("return %arg0 : tensor<4xf32>")[:-3])
    assert "not closed" in error.message


@pytest.mark.parametrize("body, fragment", [
    (("%0 = stablehlo.convert %arg0 : (tensor<4xf32>) -> tensor<4xi4>",
      "%1 = stablehlo.convert %0 : (tensor<4xi4>) -> tensor<4xf32>", "return %1 : tensor<4xf32>"), "i4"),
    (("%0 = stablehlo.custom_call @my_kernel(%arg0) : (tensor<4xf32>) -> tensor<4xf32>",
      "return %0 : tensor<4xf32>"), "@my_kernel"),
    (("%0 = stablehlo.add %arg0, %arg9 : tensor<4xf32>", "return %0 : tensor<4xf32>"), "undefined value %arg9"),
    (("%0 = stablehlo.add %arg0, %arg0 : tensor<8xf32>", "return %0 : tensor<8xf32>"), "declared f32[8]"),
])
def test_what_cannot_be_mapped_is_named(body, fragment):
    results = body[-1].split(": ")[-1]
    error = parse_error(module(*body, results=results))
    assert fragment in error.message
    assert error.line == 3


def test_a_reduction_region_that_is_not_one_binary_op_is_refused():
    error = parse_error(module(
        "%cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>",
        "%0 = stablehlo.reduce(%arg0 init: %cst) across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>",
        " reducer(%a: tensor<f32>, %b: tensor<f32>)  {",
        "  %1 = stablehlo.subtract %a, %b : tensor<f32>",
        "  stablehlo.return %1 : tensor<f32>",
        "}",
        "return %0 : tensor<f32>", results="tensor<f32>"))
    assert error.line == 4 and "stablehlo.reduce" in error.message and "subtract" in error.message


def test_a_descending_sort_is_refused():
    error = parse_error(module(
        '%0 = "stablehlo.sort"(%arg0) <{dimension = 0 : i64, is_stable = true}> ({',
        "^bb0(%a: tensor<f32>, %b: tensor<f32>):",
        "  %1 = stablehlo.compare GT, %a, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>",
        "  stablehlo.return %1 : tensor<i1>",
        "}) : (tensor<4xf32>) -> tensor<4xf32>",
        "return %0 : tensor<4xf32>"))
    assert error.line == 3 and "ascending" in error.message


def test_a_module_without_main_is_refused():
    text = module("return %arg0 : tensor<4xf32>").replace("@main", "@other")
    assert "@main" in parse_error(text).message


def test_a_hand_written_module_interprets():
    # broadcast_in_dim with dims out of order (a transpose first), a private function called
    # twice, a region reduce with a non-identity init, and iota/compare/select
    text = module(
        "%0 = stablehlo.broadcast_in_dim %arg1, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>",
        "%1 = call @twice(%0) : (tensor<3x2xf32>) -> tensor<3x2xf32>",
        "%2 = func.call @twice(%1) : (tensor<3x2xf32>) -> tensor<3x2xf32>",
        "%cst = stablehlo.constant dense<1.000000e+01> : tensor<f32>",
        "%3 = stablehlo.reduce(%2 init: %cst) applies stablehlo.add across dimensions = [1] : "
        "(tensor<3x2xf32>, tensor<f32>) -> tensor<3xf32>",
        "%4 = stablehlo.iota dim = 0 : tensor<3xi32>",
        "%c = stablehlo.constant dense<1> : tensor<3xi32>",
        "%5 = stablehlo.compare GT, %4, %c, SIGNED : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>",
        "%6 = stablehlo.select %5, %3, %arg0 : tensor<3xi1>, tensor<3xf32>",
        "return %6 : tensor<3xf32>",
        args="%arg0: tensor<3xf32>, %arg1: tensor<2x3xf32>", results="tensor<3xf32>")
    text = text.replace("\n}\n", """
  func.func private @twice(%arg0: tensor<3x2xf32>) -> tensor<3x2xf32> {
    %0 = stablehlo.add %arg0, %arg0 : tensor<3x2xf32>
    return %0 : tensor<3x2xf32>
  }
}
""")
    imported = parse_stablehlo(text.encode())
    x = np.array([7.0, 8.0, 9.0], np.float32)
    y = np.arange(6, dtype=np.float32).reshape(2, 3)
    (result,) = interpret(imported, x, y)
    expected = np.where(np.arange(3) > 1, (4 * y.T).sum(1) + 10, x)
    np.testing.assert_array_equal(result, expected)


MESH = '  sdy.mesh @mesh = <["x"=2, "y"=4]>\n'


def test_result_shardings_on_ops_and_called_functions_become_constraints():
    text = module(
        "%0 = stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{\"x\"}]>]>} : tensor<8xf32>",
        "%1 = call @scale(%0) : (tensor<8xf32>) -> tensor<8xf32>",
        "return %1 : tensor<8xf32>", args="%arg0: tensor<8xf32>", results="tensor<8xf32>")
    text = text.replace("attributes {mhlo.num_partitions = 1 : i32} {\n", "attributes {mhlo.num_partitions = 8 : i32} {\n" + MESH)
    text = text.replace("\n}\n", """
  func.func private @scale(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}]>}) -> tensor<8xf32> {
    %0 = stablehlo.add %arg0, %arg0 : tensor<8xf32>
    return %0 : tensor<8xf32>
  }
}
""")
    imported = parse_stablehlo(text)
    ops = [(op.name, [[axis.name for axis in dim.axes] for dim in op.attrs["sharding"].dims])
           for op in imported.main.body.ops if op.name == "sharding_constraint"]
    assert ops == [("sharding_constraint", [["x"]]), ("sharding_constraint", [["y"]])]
    (result,) = interpret(imported, np.arange(8, dtype=np.float32))
    np.testing.assert_array_equal(result, -2 * np.arange(8, dtype=np.float32))


def test_the_op_table_names_the_ops_it_maps():
    ops = known_ops()
    for name in ("stablehlo.dot_general", "stablehlo.while", "stablehlo.case", "chlo.top_k", "chlo.erf_inv",
                 "sdy.manual_computation", "stablehlo.custom_call", "stablehlo.scatter", "func.call"):
        assert name in ops


# --- GSPMD strings ---------------------------------------------------------------------------


def test_gspmd_strings_infer_the_mesh_and_name_its_axes():
    strings = ["{devices=[2,4]<=[8]}", "{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}",
               "{devices=[2,1,4]<=[8] last_tile_dim_replicate}"]
    tiled = [parse_sharding(text) for text in strings]
    mesh = infer_mesh(tiled, 8)
    assert mesh.axes == (("x", 2), ("y", 4))
    spelled = [[[axis.name for axis in dim.axes] for dim in to_tensor_sharding(item, mesh, 2).dims]
               for item in tiled]
    assert spelled == [[["x"], ["y"]], [["y"], []], [["x"], []]]
    assert parse_sharding("{replicated}") == "replicated"
    with pytest.raises(GspmdError, match="maximal"):
        parse_sharding("{maximal device=0}")


# --- the command line ------------------------------------------------------------------------


def test_every_cli_command_reads_a_mlir_file(capsys, tmp_path):
    path = str(CORPUS / "mlp.mlir")
    assert cli.main(["collectives", "--json", path]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["total_bytes_per_device"] == 1536
    assert cli.main(["opt", path]) == 0
    assert "spmd_mesh = @mesh" in capsys.readouterr().out
    assert cli.main(["explain", "--strategy", "gspmd", path]) == 0
    assert "sharding propagation (gspmd)" in capsys.readouterr().out
    assert cli.main(["check", path]) == 0
    assert capsys.readouterr().out.startswith("ok:")
    assert cli.main(["draw", path, "-o", str(tmp_path / "mlp.dot")]) == 0
    assert (tmp_path / "mlp.dot").read_text().startswith("digraph")


def test_a_malformed_mlir_file_is_a_cli_error_with_its_place(capsys, tmp_path):
    path = tmp_path / "bad.mlir"
    path.write_text(module("%0 = stablehlo.frobnicate %arg0 : tensor<4xf32>", "return %0 : tensor<4xf32>"))
    assert cli.main(["collectives", str(path)]) == 2
    error = capsys.readouterr().err
    assert f"{path}:3:10: stablehlo.frobnicate" in error
