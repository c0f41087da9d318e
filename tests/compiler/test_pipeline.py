"""The one pass pipeline: its order, what a run keeps, its dumps, and that jit and the command
line run the very same passes."""

from __future__ import annotations

import numpy as np
import pytest
from meshjit.compiler.partitioning.partition import PartitionResult
from meshjit.compiler.propagation.propagate_shardings import GSPMD, PropagationResult
from meshjit.compiler.pipeline import (
    GLOBAL,
    LOWER,
    PER_DEVICE,
    Dumper,
    PassSpec,
    Pipeline,
    default_pipeline,
    normalize_boundaries,
)
from meshjit.ir import parse_module, print_module
from meshjit.runtime.plan import Plan

import meshjit as jax
from meshjit import cli
from meshjit.sharding import NamedSharding
from meshjit.sharding import PartitionSpec as P

MLP = """mesh @mesh = <["x"=2, "y"=4]>
func @main(%x: f32[8,16] {sharding = <@mesh, [{"x"}, {}]>}, %w: f32[16,32] {sharding = <@mesh, [{}, {"y"}]>}, %v: f32[32,16] {sharding = <@mesh, [{"y"}, {}]>}) -> f32[8,16] {
  %0 = dot_general(%x, %w) {batch_dims = [[], []], contracting_dims = [[1], [0]]} : f32[8,32]
  %1 = dot_general(%0, %v) {batch_dims = [[], []], contracting_dims = [[1], [0]]} : f32[8,16]
  return %1
}
"""

PASS_NAMES = ("propagate_shardings", "normalize_boundaries", "partition", "rewrite_divisions",
              "eliminate_common_subexpressions", "contract_multiply_adds", "merge_chained_collectives",
              "eliminate_dead_code", "lower")


def test_the_default_pipeline_ends_in_lower():
    pipeline = default_pipeline()
    assert pipeline.names() == PASS_NAMES
    assert [spec.stage for spec in pipeline.passes] == [GLOBAL] * 3 + [PER_DEVICE] * 5 + [LOWER]
    assert pipeline["propagate_shardings"].options["strategy"].name == "shardy"
    assert pipeline["lower"].options == {"donated": frozenset(), "whole_mesh": True}


def test_a_run_keeps_every_module_the_reports_and_the_plan():
    run = default_pipeline().run(parse_module(MLP))
    assert tuple(run.modules) == PASS_NAMES[:-1]
    assert isinstance(run.reports["propagate_shardings"], PropagationResult)
    assert isinstance(run.reports["partition"], PartitionResult)
    assert isinstance(run.plan, Plan) and run.plan.mesh_shape == (2, 4)
    assert run.module is run.modules["eliminate_dead_code"] and run.module.main.spmd_mesh == "mesh"


def test_dumps_are_numbered_in_pass_order(tmp_path):
    default_pipeline().run(parse_module(MLP), dump=Dumper("mlp", str(tmp_path)))
    names = sorted(path.name for path in tmp_path.iterdir())
    assert names == ["mlp.00-traced.mjir"] + [f"mlp.{index + 1:02d}-{name}.mjir"
                                              for index, name in enumerate(PASS_NAMES[:-1])] + ["mlp.collectives.json"]


def test_jit_and_the_command_line_run_the_same_passes(mesh_2x4, tmp_path, capsys):
    shardings = (NamedSharding(mesh_2x4, P("x", None)), NamedSharding(mesh_2x4, P(None, "y")),
                 NamedSharding(mesh_2x4, P("y", None)))
    jitted = jax.jit(lambda x, w, v: (x @ w) @ v, in_shardings=shardings)
    compiled = jitted.lower(np.ones((8, 16), np.float32), np.ones((16, 32), np.float32),
                            np.ones((32, 16), np.float32)).compile()
    program = compiled.program
    assert program.pipeline.names() == PASS_NAMES
    assert program.plan is compiled.runtime_executable().plan
    path = tmp_path / "traced.mjir"
    path.write_text(print_module(program.traced))
    assert cli.main(["opt", str(path)]) == 0
    assert capsys.readouterr().out == compiled.as_text()


def test_selections_and_options():
    pipeline = default_pipeline()
    chosen = pipeline.select(["normalize_boundaries", "propagate_shardings"])
    assert chosen.names() == ("normalize_boundaries", "propagate_shardings")
    assert pipeline.of_stage(PER_DEVICE).names() == PASS_NAMES[3:8]
    gspmd = pipeline.with_pass_options("propagate_shardings", strategy=GSPMD)
    assert gspmd["propagate_shardings"].options["strategy"] is GSPMD
    assert pipeline["propagate_shardings"].options["strategy"].name == "shardy"
    with pytest.raises(KeyError, match="unknown pass 'partitionn'; the passes are: propagate_shardings, "):
        pipeline.select(["partitionn"])


def test_a_pipeline_is_well_formed():
    with pytest.raises(ValueError, match="normalize_boundaries appear twice"):
        Pipeline((PassSpec("normalize_boundaries", normalize_boundaries, GLOBAL),) * 2)
    lower = default_pipeline()["lower"]
    with pytest.raises(ValueError, match="lower produces the Plan, so it can only be the last pass"):
        Pipeline((lower, PassSpec("normalize_boundaries", normalize_boundaries, GLOBAL)))
    with pytest.raises(ValueError, match="stage must be"):
        PassSpec("mine", normalize_boundaries, "sometimes")


def test_opt_cannot_print_the_plan(tmp_path, capsys):
    path = tmp_path / "mlp.mjir"
    path.write_text(MLP)
    assert cli.main(["opt", str(path), "--passes", "partition,lower"]) == 2
    assert "lower turns the per-device module into the executable Plan" in capsys.readouterr().err
