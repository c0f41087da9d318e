"""The automatic sharding search: AUTO(mesh) layouts chosen by cost under a memory budget."""

from __future__ import annotations

import numpy as np
import pytest

import meshjit as jax
from meshjit import nn
from meshjit.compiler.search.auto_sharding import SearchRequest, layout_options, search_shardings
from meshjit.compiler.analysis.cost import CostModel, calibration_path, load_cost_model, save_cost_model
from meshjit.compiler.analysis.memory import peak_memory_bytes
from meshjit.ir import MeshAttr
from meshjit.ir.parser import parse_module as parse
from meshjit.jit_api import jit
from meshjit.sharding import AUTO, Mesh, NamedSharding
from meshjit.sharding import PartitionSpec as P

@pytest.fixture(autouse=True)
def _default_cost_model(monkeypatch, tmp_path):
    """The expected plans are those of the default cost model, whatever calibration the
    machine's cache directory holds."""
    monkeypatch.setattr("meshjit.compiler.analysis.cost.calibration_path", lambda: str(tmp_path / "none.json"))


BATCH = 16


def _mesh():
    return Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("data", "model"))


def _two_blocks(x, w1, w2, w3, w4):
    x = nn.gelu(x @ w1) @ w2
    return nn.gelu(x @ w3) @ w4


def _weights(width, hidden, seed=0):
    rng = np.random.default_rng(seed)
    shapes = [(width, hidden), (hidden, width)] * 2
    return [(rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32) for shape in shapes]


def _numpy_blocks(x, w1, w2, w3, w4):
    def gelu(h):
        return 0.5 * h * (1 + np.tanh(np.sqrt(2 / np.pi) * (h + 0.044715 * h**3)))
    return gelu(gelu(x @ w1) @ w2 @ w3) @ w4


def _auto_mlp(width, hidden, budget):
    mesh = _mesh()
    batch = NamedSharding(mesh, P("data"))
    f = jit(_two_blocks, in_shardings=(batch,) + (AUTO(mesh),) * 4, out_shardings=batch,
            memory_budget_bytes=budget)
    x = np.random.default_rng(9).standard_normal((BATCH, width)).astype(np.float32)
    weights = _weights(width, hidden)
    return f, x, weights, f.lower(x, *weights).compile()


def test_large_weights_under_a_budget_get_the_megatron_plan():
    # Replicated, the four f32 weights take 4 MiB per device; the budget allows a quarter of
    # that, so they must be split, and one all_reduce per block is the cheapest split.
    f, x, weights, compiled = _auto_mlp(256, 1024, budget=1_500_000)
    specs = [sharding.spec for sharding in compiled.input_shardings[0][1:]]
    assert specs == [P(None, "model"), P("model"), P(None, "model"), P("model")]
    records = compiled.collectives()
    assert [(record.kind, record.axes) for record in records] == [("all_reduce", ("model",))] * 2
    assert compiled.program.search.chosen.score.memory_bytes <= 1_500_000
    np.testing.assert_allclose(np.asarray(f(x, *weights)), _numpy_blocks(x, *weights), rtol=1e-4, atol=1e-4)


def test_small_weights_get_data_parallelism():
    f, x, weights, compiled = _auto_mlp(32, 64, budget=None)
    assert [sharding.spec for sharding in compiled.input_shardings[0][1:]] == [P()] * 4
    assert compiled.collectives() == []
    np.testing.assert_allclose(np.asarray(f(x, *weights)), _numpy_blocks(x, *weights), rtol=1e-4, atol=1e-4)


def test_explain_lists_the_alternatives_with_time_bytes_and_memory():
    _, _, _, compiled = _auto_mlp(256, 1024, budget=1_500_000)
    text = compiled.explain()
    assert text.startswith("automatic sharding search: ")
    assert "memory budget: 1500000 bytes/device" in text
    assert "propagation alone (the seed)" in text
    chosen = next(line for line in text.splitlines() if line.startswith(" *1."))
    assert "bytes/device in 2 collectives" in chosen and "us compute" in chosen and "peak" in chosen
    # the replicated layouts are compared too, and do not fit
    assert "over budget" in compiled.program.search.format(top=len(compiled.program.search.alternatives))
    assert "automatic sharding search" not in compiled.explain(search=False)


def test_a_budget_nothing_fits_is_a_value_error():
    with pytest.raises(ValueError, match="memory_budget_bytes=1000: no layout .* fits"):
        _auto_mlp(256, 1024, budget=1000)


def test_a_budget_without_auto_bounds_the_given_layouts():
    mesh = _mesh()
    batch = NamedSharding(mesh, P("data"))
    x, weights = np.ones((BATCH, 256), np.float32), _weights(256, 1024)
    replicated = jit(_two_blocks, in_shardings=(batch,) + (NamedSharding(mesh, P()),) * 4, memory_budget_bytes=1_500_000)
    with pytest.raises(ValueError, match="memory_budget_bytes=1500000: the program needs .* bytes per device"):
        replicated.lower(x, *weights).compile()
    split = [NamedSharding(mesh, P(None, "model")), NamedSharding(mesh, P("model"))] * 2
    megatron = jit(_two_blocks, in_shardings=(batch, *split), memory_budget_bytes=1_500_000)
    assert len(megatron.lower(x, *weights).compile().collectives()) == 2


def test_auto_result_layout_is_chosen_and_reported():
    mesh = _mesh()
    f = jit(lambda x: x * 2, in_shardings=NamedSharding(mesh, P("data", "model")), out_shardings=AUTO(mesh))
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    compiled = f.lower(x).compile()
    # keeping the input's layout moves nothing
    assert compiled.output_shardings.spec == P("data", "model")
    assert compiled.collectives() == []
    np.testing.assert_array_equal(np.asarray(f(x)), x * 2)


def test_jit_checks_its_search_arguments():
    mesh = _mesh()
    with pytest.raises(ValueError, match="memory_budget_bytes must be a positive int"):
        jit(lambda x: x, memory_budget_bytes=-1)
    with pytest.raises(TypeError, match="AUTO mesh must be a Mesh"):
        AUTO("mesh")
    other = Mesh(np.array(jax.devices()[:8]).reshape(4, 2), ("a", "b"))
    f = jit(lambda x, y: x + y, in_shardings=(AUTO(mesh), AUTO(other)))
    with pytest.raises(ValueError, match="same mesh"):
        f.lower(np.ones((8, 8), np.float32), np.ones((8, 8), np.float32))


def test_layout_options_use_whole_axes_that_divide():
    mesh = MeshAttr((("x", 2), ("y", 4)))
    texts = [str(option) for option in layout_options((8, 6), mesh, "mesh")]
    assert texts[0] == "<@mesh, [{}, {}]>"
    assert '<@mesh, [{"x", "y"}, {}]>' in texts and '<@mesh, [{"y"}, {"x"}]>' in texts
    assert '<@mesh, [{}, {"y"}]>' not in texts  # 4 does not divide 6
    assert len(texts) == len(set(texts)) == 6  # 6 is split by x only; 8 by x, y, x*y


def test_peak_memory_counts_arguments_and_live_values():
    module = parse("""
mesh @mesh = <["x"=2]>
func @main(%a: f32[4]) -> (f32[4]) attributes {spmd_mesh = @mesh} {
  %0 = exp(%a) : f32[4]
  %1 = exp(%0) : f32[4]
  %2 = exp(%1) : f32[4]
  return %2
}
""")
    # the argument lives throughout; at most two temporaries at once (an op's operand and result)
    assert peak_memory_bytes(module) == 16 + 32


def test_search_is_seeded_by_propagation_and_reports_what_it_compiled():
    mesh = _mesh()
    f = jit(lambda x, w: x @ w, in_shardings=(NamedSharding(mesh, P("data", "model")), AUTO(mesh)))
    module = f.lower(np.ones((8, 16), np.float32), np.ones((16, 8), np.float32)).module
    searched, report = search_shardings(module, SearchRequest(auto_args=(1,)))
    assert report.evaluations >= len(layout_options((16, 8), module.mesh("mesh"), "mesh"))
    assert report.alternatives[0] == report.chosen
    assert report.chosen.score.key() <= report.seed.score.key()
    assert all(a.score.key() <= b.score.key() for a, b in zip(report.alternatives, report.alternatives[1:]))
    assert searched.main.arg_shardings[1] == report.chosen.arg_shardings[0][1]


def test_cost_model_round_trips_through_the_cache_directory(tmp_path, monkeypatch):
    monkeypatch.setattr("meshjit.compiler.analysis.cost.calibration_path", calibration_path)
    monkeypatch.setenv("MESHJIT_CACHE_DIR", str(tmp_path))
    assert load_cost_model() == CostModel()
    measured = CostModel(2e-6, 3e9, 4e10, "calibrated: in-process")
    save_cost_model(measured)
    assert load_cost_model() == measured
    (tmp_path / "cost_model.json").write_text('{"latency_seconds": -1}')
    with pytest.warns(UserWarning, match="meshjit calibrate"):
        assert load_cost_model() == CostModel()
