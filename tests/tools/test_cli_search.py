"""``meshjit explain --search``: open argument layouts chosen by the automatic sharding search."""

from __future__ import annotations

import pytest

from meshjit import cli


@pytest.fixture(autouse=True)
def _default_cost_model(monkeypatch, tmp_path):
    """The expected plans are those of the default cost model, whatever calibration the
    machine's cache directory holds."""
    monkeypatch.setattr("meshjit.compiler.analysis.cost.calibration_path", lambda: str(tmp_path / "none.json"))


MLP = """mesh @mesh = <["data"=2, "model"=4]>

func @main(%x: f32[16,256] {sharding = <@mesh, [{"data"}, {}]>}, %w1: f32[256,1024] {sharding = <@mesh, [{?}, {?}]>}, %w2: f32[1024,256] {sharding = <@mesh, [{?}, {?}]>}) -> (f32[16,256] {sharding = <@mesh, [{"data"}, {}]>}) {
  %0 = dot_general(%x, %w1) {batch_dims = [[], []], contracting_dims = [[1], [0]]} : f32[16,1024]
  %1 = tanh(%0) : f32[16,1024]
  %2 = dot_general(%1, %w2) {batch_dims = [[], []], contracting_dims = [[1], [0]]} : f32[16,256]
  return %2
}
"""


def test_explain_search_shows_the_alternatives_and_explains_the_choice(tmp_path, capsys):
    path = tmp_path / "mlp.mjir"
    path.write_text(MLP)
    assert cli.main(["explain", str(path), "--search", "--memory-budget", "1500000", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("automatic sharding search: ")
    lines = out.splitlines()
    chosen = lines.index(next(line for line in lines if line.startswith(" *1.")))
    assert lines[chosen + 1].strip() == '%w1 <@mesh, [{}, {"model"}]>, %w2 <@mesh, [{"model"}, {}]>'
    assert " 3. " in out and " 4. " not in out
    assert "%w2\n    sharding <@mesh, [{\"model\"}, {}]>" in out  # the provenance part, of the chosen module


def test_explain_search_needs_open_layouts(tmp_path, capsys):
    path = tmp_path / "closed.mjir"
    path.write_text(MLP.replace("{?}", "{}"))
    assert cli.main(["explain", str(path), "--search"]) == 2
    assert "--search needs arguments or results whose dims are all open" in capsys.readouterr().err
