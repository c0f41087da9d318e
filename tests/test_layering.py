"""Imports point one way (DESIGN.md §1, §12), read from every source file with ast: the runtime
never imports the compiler or the facade; the compiler never imports the facade and meets the
runtime only in the Plan (runtime/plan.py) and, in lowering/launch.py alone, the thread pool its
kernel steps run on (runtime/threads.py) and the pool their large outputs come from
(runtime/buffers.py); inside the compiler, each layer imports only the layers below it."""

from __future__ import annotations

import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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


def test_the_compiler_meets_the_runtime_only_in_the_plan_and_the_launcher():
    launcher = os.path.join(ROOT, "compiler", "lowering", "launch.py")
    bad = sorted({(os.path.relpath(path, ROOT), module)
                  for path, module in imported_modules("compiler", "meshjit.compiler")
                  if is_within(module, "meshjit.runtime") and not is_within(module, "meshjit.runtime.plan")
                  and not (path == launcher and (is_within(module, "meshjit.runtime.threads")
                                                 or is_within(module, "meshjit.runtime.buffers")))})
    assert bad == []


# NOTE: compiler's layers, bottom first. A layer imports only the layers before it: the shared
# vocabulary (sharding factors and types, the analyses), the op tables, then the stages in
# pipeline order. The automatic search runs before propagation but is built on propagation,
# partitioning and optimisation (it scores candidates by running them), so it ranks after
# them. The op families (rules/) fill the tables from on top, and the assembler (pipeline.py,
# with the check mode on top of it) is the only module that imports them.
COMPILER_LAYERS = (
    "sharding", "analysis", "tables",
    "frontend", "propagation", "partitioning", "optimize", "search", "lowering",
    "rules", "pipeline", "check",
)


def compiler_layer(path_or_module: str) -> str:
    """The layer of a compiler file (path) or module name."""
    if path_or_module.startswith("meshjit.compiler"):
        parts = path_or_module.split(".")[2:]
    else:
        parts = os.path.relpath(path_or_module, os.path.join(ROOT, "compiler"))[:-len(".py")].split(os.sep)
    return parts[0] if parts else "__init__"


def test_compiler_folders_are_the_layers():
    found = {name[:-3] if name.endswith(".py") else name for name in os.listdir(os.path.join(ROOT, "compiler"))
             if not name.startswith((".", "_")) and (name.endswith(".py") or os.path.isdir(os.path.join(ROOT, "compiler", name)))}
    assert found == set(COMPILER_LAYERS)
    top_modules = [name for name in os.listdir(os.path.join(ROOT, "compiler")) if name.endswith(".py")]
    assert len(top_modules) <= 6, top_modules


def compiler_back_imports(imports) -> list[str]:
    """Each import of a compiler file that reaches a layer at or above its own (another one)."""
    bad = []
    for path, module in imports:
        if not is_within(module, "meshjit.compiler") or module == "meshjit.compiler":
            continue
        source, target = compiler_layer(path), compiler_layer(module)
        if source == "__init__" or source == target or target not in COMPILER_LAYERS:
            continue
        if COMPILER_LAYERS.index(target) > COMPILER_LAYERS.index(source):
            bad.append(f"{os.path.relpath(path, ROOT)} ({source}) imports {module} ({target})")
    return sorted(set(bad))


def test_compiler_layers_import_one_way():
    """A stage imports no later stage, no two compiler subpackages import each other, and only
    the assembler imports the op families."""
    imports = list(imported_modules("compiler", "meshjit.compiler"))
    assert len(imports) > 1000  # NOTE: every source file was read
    assert compiler_back_imports(imports) == []


def test_compiler_imports_nothing_of_the_facade():
    bad = sorted({(os.path.relpath(path, ROOT), module)
                  for path, module in imported_modules("compiler", "meshjit.compiler")
                  if is_within(module, "meshjit")
                  and not any(is_within(module, f"meshjit.{package}") for package in ("ir", "compiler", "runtime"))})
    assert bad == []


def test_a_back_import_is_found():
    """The check above fails on an import from a stage to a later one or to the families."""
    partition = os.path.join(ROOT, "compiler", "partitioning", "partition.py")
    assert compiler_back_imports([(partition, "meshjit.compiler.lowering.lower")]) != []
    assert compiler_back_imports([(partition, "meshjit.compiler.rules.dot")]) != []
    assert compiler_back_imports([(partition, "meshjit.compiler.propagation.propagate_shardings")]) == []
