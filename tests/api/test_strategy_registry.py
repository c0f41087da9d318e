"""Propagation strategies by name: a strategy registered with its own conflict rule is used by
jit, by ``meshjit collectives`` / ``explain`` / ``opt``, and unknown names are rejected naming
the registered ones."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from meshjit.compiler.propagation.propagate_shardings import (
    SHARDY,
    Conflict,
    Strategy,
    register_strategy,
    strategy_names,
    unregister_strategy,
)

import meshjit as jax
from meshjit import cli
from meshjit.sharding import NamedSharding
from meshjit.sharding import PartitionSpec as P

# NOTE: whichever operand loses the conflict on the add's rows is gathered whole (a warning).
pytestmark = [pytest.mark.usefixtures("restore_runtime_state"),
              pytest.mark.filterwarnings("ignore::meshjit.compiler.partitioning.partition.FullRematerializationWarning")]

SEEN: list[Conflict] = []


def prefer_later_operand(conflict: Conflict):
    """The candidate of the highest operand position wins (Shardy takes the lowest on a tie)."""
    SEEN.append(conflict)
    return max(conflict.candidates, key=lambda candidate: candidate.position)


LATER_OPERAND = Strategy("later-operand", SHARDY.stages, resolve_conflict=prefer_later_operand)


@pytest.fixture
def later_operand():
    SEEN.clear()
    register_strategy(LATER_OPERAND)
    yield LATER_OPERAND
    unregister_strategy("later-operand")


def step(a, b, w):
    return jax.numpy.tanh((a + b) @ w)


def arguments():
    generator = np.random.default_rng(0)
    return [generator.standard_normal(shape).astype(np.float32) for shape in ((8, 16), (8, 16), (16, 64))]


def jitted_step(mesh, propagation):
    shardings = (NamedSharding(mesh, P("x", None)), NamedSharding(mesh, P("y", None)), None)
    return jax.jit(step, in_shardings=shardings, propagation=propagation)


def test_a_registered_strategy_runs_from_jit_with_its_conflict_rule(mesh_2x4, later_operand):
    assert "later-operand" in strategy_names()
    compiled = jitted_step(mesh_2x4, "later-operand").lower(*arguments()).compile()
    # a and b disagree on the add's rows (x against y); the rule saw that conflict and chose b's axis
    conflict = next(conflict for conflict in SEEN if conflict.op == "add")
    assert [(candidate.position, [axis.name for axis in candidate.axes], candidate.shards)
            for candidate in conflict.candidates] == [(0, ["x"], 2), (1, ["y"], 4)]
    assert "sharding propagation (later-operand)" in compiled.explain()
    # a's "x" shards hold b's "y" tiles: one permute of them
    (record,) = compiled.collectives()
    assert (record.kind, record.axes, record.bytes) == ("collective_permute", ("x", "y"), 128)
    shardy = jitted_step(mesh_2x4, "shardy").lower(*arguments()).compile()
    assert [(record.kind, record.axes, record.bytes) for record in shardy.collectives()] == [
        ("all_gather", ("y",), 384)]
    a, b, w = arguments()
    np.testing.assert_allclose(np.asarray(compiled(a, b, w)), np.tanh((a + b) @ w), rtol=1e-5, atol=1e-5)


def test_a_registered_strategy_runs_from_the_command_line(mesh_2x4, later_operand, tmp_path, capsys):
    path = tmp_path / "step.mjir"
    path.write_text(jitted_step(mesh_2x4, "shardy").lower(*arguments()).as_text())
    assert cli.main(["collectives", str(path), "--strategy", "later-operand", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["total_bytes_per_device"] == 128
    assert [entry["axes"] for entry in summary["collectives"]] == [["x", "y"]]
    assert cli.main(["explain", str(path), "--strategy", "later-operand"]) == 0
    assert "sharding propagation (later-operand)" in capsys.readouterr().out
    assert cli.main(["opt", str(path), "--strategy", "later-operand", "--passes", "propagate_shardings"]) == 0
    (add_line,) = [line for line in capsys.readouterr().out.splitlines() if "= add(%a, %b)" in line]
    assert '<@mesh, [{"y"}, {}]>' in add_line


def test_unknown_strategy_names_the_registered_ones(mesh_2x4, later_operand, capsys):
    with pytest.raises(ValueError, match="unknown propagation strategy 'latest'; the registered strategies are "
                                         "'gspmd', 'later-operand', 'shardy'"):
        jax.jit(step, propagation="latest")
    with pytest.raises(SystemExit):
        cli.main(["explain", "-", "--strategy", "latest"])
    assert "invalid choice: 'latest'" in capsys.readouterr().err


def test_registration_rules():
    with pytest.raises(ValueError, match="already registered as 'shardy'"):
        register_strategy(Strategy("shardy", SHARDY.stages, allow_sub_axes=False))
    assert register_strategy(SHARDY) is SHARDY  # the same strategy again is a no-op
    with pytest.raises(ValueError, match="built-in propagation strategy 'gspmd' cannot be unregistered"):
        unregister_strategy("gspmd")
    with pytest.raises(TypeError, match="expects a Strategy"):
        register_strategy("mine")


def test_a_conflict_rule_must_return_a_candidate(mesh_2x4):
    broken = Strategy("broken", SHARDY.stages, resolve_conflict=lambda conflict: None)
    with pytest.raises(ValueError, match="strategy 'broken': resolve_conflict returned None for a conflict on add"):
        jitted_step(mesh_2x4, broken).lower(*arguments()).compile()


STRATEGY_MODULE = '''\
from meshjit.compiler.propagation.propagate_shardings import SHARDY, Strategy, register_strategy


def prefer_later_operand(conflict):
    return max(conflict.candidates, key=lambda candidate: candidate.position)


register_strategy(Strategy("later-operand", SHARDY.stages, resolve_conflict=prefer_later_operand))
'''


def test_the_command_line_imports_a_module_that_registers_strategies(mesh_2x4, tmp_path):
    (tmp_path / "my_strategies.py").write_text(STRATEGY_MODULE)
    path = tmp_path / "step.mjir"
    path.write_text(jitted_step(mesh_2x4, "shardy").lower(*arguments()).as_text())
    command = [sys.executable, "-m", "meshjit", "--import", "my_strategies", "collectives", str(path),
               "--strategy", "later-operand", "--json"]
    run = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["total_bytes_per_device"] == 128
    missing = subprocess.run(command[:4] + ["no_such_module"] + command[5:], cwd=tmp_path, capture_output=True,
                             text=True, check=False)
    assert missing.returncode == 2 and "--import: No module named 'no_such_module'" in missing.stderr
