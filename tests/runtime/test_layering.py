"""Imports point one way (DESIGN.md §1): the runtime never imports the compiler or the facade,
and the compiler meets the runtime only in the Plan (runtime/plan.py), the thread pool its
kernel steps run on (runtime/threads.py) and the pool their large outputs come from
(runtime/buffers.py)."""

from __future__ import annotations

import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def imported_modules(folder: str, package: str):
    """(file, module) for every import in ``folder``'s Python files, relative ones resolved."""
    for directory, _, files in os.walk(os.path.join(ROOT, folder)):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(directory, name)
            relative = os.path.relpath(directory, os.path.join(ROOT, folder))
            here = [package] + ([] if relative == "." else relative.split(os.sep))
            with open(path, encoding="utf-8") as handle:
                tree = ast.parse(handle.read(), path)
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    for alias in node.names:
                        yield path, alias.name
                elif isinstance(node, ast.ImportFrom):
                    base = here[:len(here) - node.level + 1] if node.level else []
                    module = ".".join(base + ([node.module] if node.module else []))
                    yield path, module
                    for alias in node.names:
                        yield path, f"{module}.{alias.name}"


def is_within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


@pytest.mark.parametrize("folder, package", [("runtime", "meshjit.runtime"), ("ir", "meshjit.ir")])
def test_the_runtime_and_the_ir_import_no_compiler_and_no_facade(folder, package):
    allowed = ("meshjit.ir", "meshjit.runtime") if folder == "runtime" else ("meshjit.ir",)
    bad = sorted({(os.path.relpath(path, ROOT), module) for path, module in imported_modules(folder, package)
                  if is_within(module, "meshjit") and not any(is_within(module, ok) for ok in allowed)})
    assert bad == []


def test_the_compiler_meets_the_runtime_only_in_the_plan():
    bad = sorted({(os.path.relpath(path, ROOT), module)
                  for path, module in imported_modules("compiler", "meshjit.compiler")
                  if is_within(module, "meshjit") and not is_within(module, "meshjit.ir")
                  and not is_within(module, "meshjit.compiler") and not is_within(module, "meshjit.runtime.plan")
                  and not is_within(module, "meshjit.runtime.threads")
                  and not is_within(module, "meshjit.runtime.buffers")})
    assert bad == []
