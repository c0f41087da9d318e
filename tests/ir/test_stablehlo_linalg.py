"""JAX's linear algebra as it prints for CPU (tests/ir/stablehlo_linalg/, printed by JAX 0.10.2
with make_linalg_programs.py: LAPACK potrf, syevd, gesdd, getrf and trsm custom calls, the
batch sharded over x) imports onto meshjit's linalg ops, interprets to JAX's outputs, and
partitions with the batch sharded and no collective for them; the StableHLO cholesky and
triangular_solve ops map too, and QR's reflector calls are refused by name."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from meshjit.compiler.analysis.collectives import collective_records
from meshjit.compiler.check import check_program
from meshjit.compiler.pipeline import compile_module
from meshjit.ir import interpret, parse_module, parse_stablehlo, print_module, verify
from meshjit.ir.parser_syntax import ParseError

FOLDER = Path(__file__).parent / "stablehlo_linalg"


def load():
    module = parse_stablehlo((FOLDER / "linalg.mlir").read_text(), "linalg.mlir")
    data = np.load(FOLDER / "linalg.npz")
    arguments = [data[f"arg{index}"] for index in range(len(module.main.args))]
    outputs = [data[f"out{index}"] for index in range(len(module.main.returns))]
    return module, arguments, outputs


def test_lapack_calls_become_linalg_ops():
    module, _, _ = load()
    names = [op.name for op in module.main.body.walk()]
    assert {"cholesky", "eigh", "svd", "lu", "triangular_solve"} <= set(names)
    assert print_module(parse_module(print_module(module))) == print_module(module)


def test_interprets_to_jax_outputs():
    module, arguments, expected = load()
    verify(module)
    for index, (result, want) in enumerate(zip(interpret(module, *arguments), expected)):
        result = np.asarray(result)
        assert result.shape == want.shape and result.dtype == want.dtype, f"output {index}"
        np.testing.assert_allclose(result, want, rtol=1e-4, atol=1e-5, err_msg=f"output {index}")


def test_partitions_with_the_batch_sharded_and_no_collective():
    module, arguments, _ = load()
    program = compile_module(module, propagation="shardy", plan=False)
    check_program(module, program.propagated, arguments)
    records = collective_records(program.partitioned, program.collective_reasons)
    # NOTE: the linalg ops move nothing; JAX's own loop turning LU pivots into a permutation
    # (a while over scatters of i32 rows) gathers a few bytes of ints
    assert all(record.dtype == "i32" and "scatter" in record.reason for record in records), records


STABLEHLO_OPS = """
func.func public @main(%a: tensor<3x3xf32>, %b: tensor<3x2xf32>) -> (tensor<3x3xf32>, tensor<3x2xf32>) {
  %0 = stablehlo.cholesky %a, lower = true : tensor<3x3xf32>
  %1 = "stablehlo.triangular_solve"(%a, %b) <{left_side = true, lower = false, transpose_a = #stablehlo<transpose TRANSPOSE>, unit_diagonal = false}> : (tensor<3x3xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  return %0, %1 : tensor<3x3xf32>, tensor<3x2xf32>
}
"""


def test_stablehlo_cholesky_and_triangular_solve():
    module = parse_stablehlo(STABLEHLO_OPS, "ops.mlir")
    a = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]], np.float32)
    b = np.arange(6, dtype=np.float32).reshape(3, 2)
    factor, solution = interpret(module, a, b)
    np.testing.assert_allclose(factor, np.linalg.cholesky(a.astype(np.float64)), rtol=1e-6)
    np.testing.assert_allclose(solution, np.linalg.solve(np.triu(a).T.astype(np.float64), b), rtol=1e-5)


def test_qr_reflectors_have_no_counterpart():
    text = """
func.func public @main(%a: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %0:2 = stablehlo.custom_call @lapack_sgeqrf_ffi(%a) {mhlo.backend_config = {}} : (tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<3xf32>)
  return %0#0 : tensor<3x3xf32>
}
"""
    with pytest.raises(ParseError, match="custom call @lapack_sgeqrf_ffi has no meshjit counterpart"):
        parse_stablehlo(text, "qr.mlir")
