"""Every source package is listed in pyproject.toml, so a built wheel contains all of meshjit; and a
plain (non-editable) install locates ops at the user's lines."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_every_package_is_listed():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as handle:
        setuptools = tomllib.load(handle)["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    folders = {name: folder for name, folder in setuptools["package-dir"].items()}
    found = set()
    for top_name, folder in folders.items():
        for directory, _, files in os.walk(os.path.join(ROOT, folder)):
            if "__init__.py" in files and "__pycache__" not in directory:
                relative = os.path.relpath(directory, os.path.join(ROOT, folder))
                suffix = "" if relative == "." else "." + relative.replace(os.sep, ".")
                found.add(top_name + suffix)
    assert found <= listed, f"missing from pyproject packages: {sorted(found - listed)}"


# A user program run against a plain (non-editable) install: source locations name the user's
# file and line, never meshjit's own modules wherever they are installed.
USER_PROGRAM = '''\
import warnings

import numpy as np

import meshjit as jax
from meshjit.sharding import Mesh, NamedSharding, PartitionSpec as P

mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))


def step(a, b):
    c = jax.lax.with_sharding_constraint(a * 2, NamedSharding(mesh, P("x", None)))
    return c + b


jitted = jax.jit(step, in_shardings=(None, NamedSharding(mesh, P("y", None))))
arguments = (np.ones((8, 16), np.float32), np.ones((8, 16), np.float32))
print("module", jax.__file__)
print(jitted.lower(*arguments).as_text())
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    jitted.lower(*arguments).compile()
for record in caught:
    print(f"warning at {record.filename}:{record.lineno}: {record.message}")
'''


def test_locations_name_the_user_line_from_a_plain_install(tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(os.path.join(ROOT, name), source / name)
    for folder in ("meshjit", "compiler", "ir", "runtime"):
        shutil.copytree(os.path.join(ROOT, folder), source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--target", str(target), str(source)], check=True, capture_output=True)
    script = tmp_path / "user_program.py"
    script.write_text(USER_PROGRAM)
    environment = {**os.environ, "PYTHONPATH": str(target)}
    environment.pop("MESHJIT_DUMP_DIR", None)
    run = subprocess.run([sys.executable, str(script)], env=environment, capture_output=True, text=True,
                         check=True, cwd=tmp_path)
    lines = run.stdout.splitlines()
    assert lines[0] == f"module {target / 'meshjit' / '__init__.py'}"
    (constraint,) = [line for line in lines if "= sharding_constraint(" in line]
    assert constraint.endswith(f'loc("{script}":12)')
    warnings = [line for line in lines if line.startswith("warning at")]
    assert warnings and all(line.startswith(f"warning at {script}:22: ") for line in warnings)
    assert all(f"operand 1 of add at {script}:13" in line for line in warnings)
