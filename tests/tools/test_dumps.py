"""``MESHJIT_DUMP_DIR`` dumps of jitted functions, and ``meshjit opt --dump-dir``: every dump
parses back, the traced dump through ``meshjit opt`` gives the same partitioned text as jit,
and the collectives summary matches ``Compiled.collectives()``."""

from __future__ import annotations

import json

import numpy as np
import pytest
from meshjit.compiler.pipeline import GLOBAL, PER_DEVICE, default_pipeline
from meshjit.ir import parse_module, print_module

import meshjit as jax
from meshjit import cli
from meshjit.sharding import NamedSharding
from meshjit.sharding import PartitionSpec as P

pytestmark = pytest.mark.usefixtures("restore_runtime_state")


def megatron_mlp(x, w1, w2):
    return jax.nn.relu(x @ w1) @ w2


@pytest.fixture
def compiled_with_dumps(mesh_2x4, tmp_path, monkeypatch):
    """A Megatron MLP compiled with MESHJIT_DUMP_DIR set; yields (compiled, dump directory)."""
    monkeypatch.setenv("MESHJIT_DUMP_DIR", str(tmp_path / "dumps"))
    shardings = (NamedSharding(mesh_2x4, P("x", None)), NamedSharding(mesh_2x4, P(None, "y")),
                 NamedSharding(mesh_2x4, P("y", None)))
    jitted = jax.jit(megatron_mlp, in_shardings=shardings, out_shardings=NamedSharding(mesh_2x4, P("x", None)))
    arguments = [np.ones((8, 16), np.float32), np.ones((16, 32), np.float32), np.ones((32, 16), np.float32)]
    compiled = jitted.lower(*arguments).compile()
    monkeypatch.delenv("MESHJIT_DUMP_DIR")
    return compiled, tmp_path / "dumps"


def test_one_numbered_dump_per_pass_in_pipeline_order(compiled_with_dumps):
    _, directory = compiled_with_dumps
    dumps = sorted(directory.glob("*.mjir"))
    passes = [path.stem.split(".")[-1].split("-", 1)[1] for path in dumps]
    assert passes == ["traced", *default_pipeline().of_stage(GLOBAL, PER_DEVICE).names()]
    for path in dumps:
        text = path.read_text()
        assert print_module(parse_module(text)) == text, f"{path.name} does not round-trip"


def test_traced_dump_through_meshjit_opt_gives_the_partitioned_text(compiled_with_dumps, capsys):
    compiled, directory = compiled_with_dumps
    (traced,) = directory.glob("*.00-traced.mjir")
    assert cli.main(["opt", str(traced)]) == 0
    output = capsys.readouterr().out
    assert output == compiled.as_text()
    assert output == max(directory.glob("*.mjir")).read_text()


def test_partitioned_dump_through_meshjit_opt_is_a_fixpoint(compiled_with_dumps, capsys):
    compiled, directory = compiled_with_dumps
    assert cli.main(["opt", str(max(directory.glob("*.mjir")))]) == 0
    assert capsys.readouterr().out == compiled.as_text()


def test_collectives_summary_matches_compiled_collectives(compiled_with_dumps):
    compiled, directory = compiled_with_dumps
    (path,) = directory.glob("*.collectives.json")
    summary = json.loads(path.read_text())
    records = compiled.collectives()
    assert summary["mesh"] == {"x": 2, "y": 4}
    assert summary["count"] == len(records) == 1
    assert summary["total_bytes_per_device"] == sum(record.bytes for record in records) == 384
    (entry,) = summary["collectives"]
    assert entry == {"kind": "all_reduce", "axes": ["y"], "bytes_per_device": 384, "operand": "f32[4,16]",
                     "reason": records[0].reason}


def test_opt_dump_dir_writes_every_pass_and_the_last_is_the_output(tmp_path, capsys):
    source = tmp_path / "mlp.mjir"
    source.write_text(_MLP_TEXT)
    directory = tmp_path / "opt-dumps"
    assert cli.main(["opt", str(source), "--passes", "propagate_shardings,partition", "--dump-dir", str(directory)]) == 0
    output = capsys.readouterr().out
    names = [path.name for path in sorted(directory.glob("*.mjir"))]
    assert names == ["mlp.00-input.mjir", "mlp.01-propagate_shardings.mjir", "mlp.02-partition.mjir"]
    assert (directory / names[-1]).read_text() == output


_MLP_TEXT = """mesh @mesh = <["x"=2, "y"=4]>
func @main(%x: f32[8,16] {sharding = <@mesh, [{"x"}, {}]>}, %w: f32[16,32] {sharding = <@mesh, [{}, {"y"}]>}) -> f32[8,32] {
  %0 = dot_general(%x, %w) {batch_dims = [[], []], contracting_dims = [[1], [0]]} : f32[8,32]
  return %0
}
"""


def test_opt_without_dump_dir_follows_meshjit_dump_dir(tmp_path, monkeypatch, capsys):
    source = tmp_path / "mlp.mjir"
    source.write_text(_MLP_TEXT)
    monkeypatch.setenv("MESHJIT_DUMP_DIR", str(tmp_path / "env-dumps"))
    assert cli.main(["opt", str(source), "--passes", "propagate_shardings"]) == 0
    capsys.readouterr()
    assert [path.name for path in sorted((tmp_path / "env-dumps").glob("*"))] == [
        "mlp.00-input.mjir", "mlp.01-propagate_shardings.mjir"]
