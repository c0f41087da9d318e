"""Propagation strategies: stages as grants, the two built-in schedules, custom strategies."""

from __future__ import annotations

import pytest
from meshjit.compiler.propagation.propagate_shardings import (
    BROADCAST,
    GSPMD,
    PASS_THROUGH_OPS,
    SHARDY,
    Grant,
    Stage,
    Strategy,
    analyze_shardings,
    prefer_larger_tensor,
    prefer_more_shards,
    propagate_shardings,
)
from meshjit.ir import AxisRef, parse_module, print_module

BROADCAST_MODULE = """
mesh @mesh = <["x"=2, "y"=4]>
func @main(%v: f32[16] {sharding = <@mesh, [{"x"}]>},
           %w: f32[8,16] {sharding = <@mesh, [{}, {"y"}]>}) -> (f32[8,16]) {
  %0 = broadcast_in_dim(%v) {broadcast_dimensions = [1], shape = [8, 16]} : f32[8,16]
  %1 = add(%0, %w) : f32[8,16]
  return %1
}
"""


def test_a_stage_is_the_union_of_its_grants():
    backward_broadcast = Grant(BROADCAST, frozenset({"pass"}), forward=False)
    stage = Stage("s", (Grant(frozenset({"add"})), backward_broadcast))
    assert stage.directions("add", "reduction") == (True, True)
    assert stage.directions("broadcast_in_dim", "pass") == (False, True)
    assert stage.directions("broadcast_in_dim", "replication") == (False, False)
    assert stage.directions("dot_general", "pass") == (False, False)
    assert stage.visits("broadcast_in_dim") and not stage.visits("dot_general")
    assert Grant(except_ops=BROADCAST).covers("dot_general", "pass")
    assert not Grant(except_ops=BROADCAST).covers("broadcast_in_dim")


def test_shardy_schedule_follows_op_priorities():
    first, second, last = SHARDY.stages
    assert first.directions("reshape", "pass") == (True, True)
    assert first.directions("dynamic_slice", "pass") == (True, False)
    assert first.directions("dot_general", "pass") == (False, False)
    assert second.directions("dot_general", "pass") == (True, True)
    assert second.directions("dot_general", "reduction") == (False, False)
    assert second.directions("broadcast_in_dim", "pass") == (False, True)
    assert last.directions("broadcast_in_dim", "pass") == (True, True)
    assert last.directions("slice", "permutation") == (True, True)


def test_gspmd_levels_put_broadcast_last():
    visits = [stage.visits("broadcast_in_dim") for stage in GSPMD.stages]
    assert visits == [False, False, True, True]
    assert GSPMD.stages[2].directions("broadcast_in_dim", "pass") == (False, True)
    assert GSPMD.stages[1].directions("dot_general", "reduction") == (True, True)
    assert (GSPMD.allow_sub_axes, GSPMD.resolve_conflict) == (False, prefer_more_shards)
    assert SHARDY.resolve_conflict is prefer_larger_tensor


def test_users_shard_a_broadcast_before_its_operand_does():
    for strategy in ("shardy", "gspmd"):
        propagated = propagate_shardings(parse_module(BROADCAST_MODULE), strategy)
        broadcast = propagated.main.body.ops[0].shardings[0]
        assert [dim.axes for dim in broadcast.dims] == [(), (AxisRef("y"),)], strategy


def test_a_custom_strategy_that_forwards_broadcasts_first():
    eager = Strategy("eager", (Stage("everything", (Grant(),)),))
    module = parse_module(BROADCAST_MODULE)
    propagated = propagate_shardings(module, eager)
    broadcast = propagated.main.body.ops[0].shardings[0]
    assert [dim.axes for dim in broadcast.dims] == [(), (AxisRef("x"),)]
    # a Strategy is a pass too, and analyze_shardings takes it
    assert print_module(eager(module)) == print_module(propagated)
    assert analyze_shardings(module, eager).mesh_name == "mesh"


def test_a_callable_strategy_does_the_whole_job():
    module = parse_module(BROADCAST_MODULE)
    seen = []
    assert propagate_shardings(module, lambda given: seen.append(given) or given) is module
    assert seen == [module]


def test_strategy_errors_name_the_choices():
    with pytest.raises(ValueError, match="unknown propagation strategy 'basic'.*'gspmd', 'shardy'"):
        propagate_shardings(parse_module(BROADCAST_MODULE), "basic")
    with pytest.raises(TypeError, match="resolve_conflict must be a function"):
        Strategy("bad", (Stage("all", (Grant(),)),), resolve_conflict="smaller_tensor")


def test_pass_through_ops_include_the_virtual_edges():
    assert {"return", "manual_input", "sharding_constraint", "reshape", "add"} <= PASS_THROUGH_OPS
