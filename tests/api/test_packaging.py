"""Every source package is listed in pyproject.toml, so a built wheel contains all of meshjit."""

from __future__ import annotations

import os
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
