"""The ``meshjit demo`` command: as a module, as the console script, and in-process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from meshjit import cli


def run(arguments: list[str], **environment) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if key != "MESHJIT_NUM_DEVICES"}
    env.update(environment)
    return subprocess.run(arguments, capture_output=True, text=True, env=env, timeout=300,
                          check=False)


def test_python_dash_m_meshjit_demo():
    result = run([sys.executable, "-m", "meshjit", "demo"])
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "8 simulated CPU devices" in out and "CpuDevice(id=7)" in out
    assert "all_reduce over model" in out          # the one collective of the Megatron MLP
    assert "spmd_mesh = @mesh" in out              # the per-device module
    assert "time per call" in out and "numpy on one" in out


def test_console_script():
    script = Path(sys.executable).with_name("meshjit")
    if not script.exists():
        pytest.skip("the meshjit console script is not installed next to this interpreter")
    result = run([str(script), "demo"])
    assert result.returncode == 0, result.stderr
    assert "8 simulated CPU devices" in result.stdout
    # the dump locates the ops at the demo's lines, not at the console script
    assert 'demo.py":' in result.stdout and str(script) not in result.stdout


@pytest.mark.parametrize("count, mesh", [("4", "axis_sizes=(2, 2)"), ("3", "axis_sizes=(1, 3)")])
def test_demo_with_another_device_count(count, mesh):
    result = run([sys.executable, "-m", "meshjit", "demo"], MESHJIT_NUM_DEVICES=count)
    assert result.returncode == 0, result.stderr
    assert f"{count} simulated CPU devices" in result.stdout and mesh in result.stdout


def test_demo_in_process(capsys):
    assert cli.main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "P('data', None)" in out and "P(None, 'model')" in out
    locations = {line.split('loc("')[1].split('":')[0] for line in out.splitlines() if 'loc("' in line}
    assert locations and all(location.endswith("meshjit/demo.py") for location in locations), locations


def test_unknown_or_missing_command_exits_with_usage(capsys):
    for arguments in ([], ["no-such-command"]):
        with pytest.raises(SystemExit) as stopped:
            cli.main(arguments)
        assert stopped.value.code == 2
    assert "usage: meshjit" in capsys.readouterr().err
