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
    return subprocess.run(arguments, capture_output=True, text=True, env=env, timeout=120,
                          check=False)


def test_python_dash_m_meshjit_demo():
    result = run([sys.executable, "-m", "meshjit", "demo"])
    assert result.returncode == 0, result.stderr
    assert "8 simulated CPU devices" in result.stdout
    assert "CpuDevice(id=7)" in result.stdout
    assert "CPU 0,1,2,3" in result.stdout  # the P('x', None) table
    assert "shard shape (4, 2)" in result.stdout


def test_console_script():
    script = Path(sys.executable).with_name("meshjit")
    if not script.exists():
        pytest.skip("the meshjit console script is not installed next to this interpreter")
    result = run([str(script), "demo"])
    assert result.returncode == 0, result.stderr
    assert "8 simulated CPU devices" in result.stdout


def test_demo_with_another_device_count():
    result = run([sys.executable, "-m", "meshjit", "demo"], MESHJIT_NUM_DEVICES="4")
    assert result.returncode == 0, result.stderr
    assert "4 simulated CPU devices" in result.stdout and "shard shape (4, 4)" in result.stdout


def test_demo_needs_an_even_device_count():
    result = run([sys.executable, "-m", "meshjit", "demo"], MESHJIT_NUM_DEVICES="3")
    assert result.returncode == 1
    assert "even device count" in result.stdout


def test_demo_in_process(capsys):
    assert cli.main(["demo"]) == 0
    assert "P('x', 'y')" in capsys.readouterr().out


def test_unknown_or_missing_command_exits_with_usage(capsys):
    for arguments in ([], ["no-such-command"]):
        with pytest.raises(SystemExit) as stopped:
            cli.main(arguments)
        assert stopped.value.code == 2
    assert "usage: meshjit" in capsys.readouterr().err
