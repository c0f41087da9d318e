"""``meshjit calibrate``: the alpha-beta fit, and the file jit's search reads."""

from __future__ import annotations

import json

import pytest

from meshjit._calibration import fit, slower
from meshjit.cli import main
from meshjit.compiler.analysis.cost import CostModel, load_cost_model


def test_fit_recovers_alpha_and_beta():
    alpha, bandwidth = 3e-6, 2e9
    rows = [{"group": group, "bytes": size * (group - 1) / group * 2, "steps": 2 * (group - 1),
             "seconds": 2 * (group - 1) * alpha + size * (group - 1) / group * 2 / bandwidth}
            for group in (2, 4, 8) for size in (1e3, 1e5, 1e7)]
    model = fit(rows, 1e11, "test")
    assert model.latency == pytest.approx(alpha, rel=1e-6)
    assert model.bandwidth == pytest.approx(bandwidth, rel=1e-6)
    assert model.flops_per_second == 1e11


def test_the_slower_link_wins():
    fast, slow = CostModel(1e-6, 1e10, 1e11), CostModel(1e-5, 1e9, 2e11)
    assert slower(fast, slow, "both") == CostModel(1e-5, 1e9, 1e11, "both")


def test_calibrate_writes_the_cache_directory(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MESHJIT_CACHE_DIR", str(tmp_path))
    assert main(["calibrate", "--repeats", "1", "--sizes", "256,65536"]) == 0
    written = json.loads((tmp_path / "cost_model.json").read_text())
    assert written["source"] == "calibrated: in-process"
    model = load_cost_model()
    assert model.latency > 0 and model.bandwidth > 0 and model.flops_per_second > 0
    assert "wrote" in capsys.readouterr().out


def test_calibrate_checks_its_options(capsys):
    assert main(["calibrate", "--repeats", "0"]) == 2
    assert "--repeats must be at least 1" in capsys.readouterr().err
    assert main(["calibrate", "--sizes", "256"]) == 2
    assert "at least two positive sizes" in capsys.readouterr().err
    assert main(["calibrate", "--sizes", "a,b"]) == 2
    assert "comma-separated positive integers" in capsys.readouterr().err
