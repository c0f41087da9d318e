"""Extract the code cells of JAX's sharding pages and the examples of its sharding docstrings
(jax-ml/jax at tag jax-v0.10.2) into ``PAGE.cells.json``: ``python extract_cells.py JAX_CHECKOUT``,
where the checkout has that tag (``git -C JAX_CHECKOUT show jax-v0.10.2:...`` is read).

A page's cells run in one namespace, as a notebook runs them. A docstring's examples (its ``>>>``
statements, each with its ``...`` lines) are cells too; the first cell of each docstring starts
a fresh namespace (``"fresh": true``), as doctest gives each docstring its own globals."""

import ast
import importlib.util
import json
import pathlib
import subprocess
import sys

TAG = "jax-v0.10.2"
PAGES = {
    "parallel": "docs/parallel.md",
    "shard_map": "docs/notebooks/shard_map.md",
    "array_refs": "docs/array_refs.md",
}
DOCSTRING_FILES = {
    "docstrings_mesh": "jax/_src/mesh.py",
    "docstrings_named_sharding": "jax/_src/named_sharding.py",
    "docstrings_sharding_impls": "jax/_src/sharding_impls.py",
    "docstrings_parallel": "jax/_src/lax/parallel.py",
    "docstrings_debugging": "jax/_src/debugging.py",
    "docstrings_array": "jax/_src/array.py",
}
def _tutorial_cells_of():
    """The tutorials' notebook-cell parser (tests/api/jax_tutorials/extract_cells.py), loaded by
    path: the pages are MyST notebooks of the same form."""
    path = pathlib.Path(__file__).parent.parent / "jax_tutorials" / "extract_cells.py"
    spec = importlib.util.spec_from_file_location("jax_tutorials_extract_cells", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.cells_of


page_cells = _tutorial_cells_of()


def docstring_examples(docstring: str) -> list[str]:
    """The ``>>>`` statements of one docstring, each joined with its ``...`` continuation lines."""
    statements: list[list[str]] = []
    for line in docstring.splitlines():
        stripped = line.strip()
        if stripped.startswith(">>>"):
            statements.append([stripped[4:]])
        elif stripped.startswith("...") and statements and (stripped == "..." or stripped[3] == " "):
            statements[-1].append(stripped[4:])
    return ["\n".join(lines) for lines in statements]


def docstring_cells(source: str) -> list[dict]:
    cells = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            continue
        examples = docstring_examples(ast.get_docstring(node, clean=False) or "")
        for index, code in enumerate(examples):
            cells.append({"code": code, "raises": False, "fresh": index == 0, "docstring": node.name})
    return cells


def main(checkout: str) -> None:
    here = pathlib.Path(__file__).parent

    def show(path: str) -> str:
        return subprocess.run(["git", "-C", checkout, "show", f"{TAG}:{path}"], capture_output=True, text=True,
                              check=True).stdout

    for name, path in {**PAGES, **DOCSTRING_FILES}.items():
        cells = page_cells(show(path)) if path.endswith(".md") else docstring_cells(show(path))
        page = {"source": f"jax-ml/jax {TAG}:{path}", "cells": cells}
        (here / f"{name}.cells.json").write_text(json.dumps(page, indent=1) + "\n")
        print(f"{name}: {len(cells)} cells")


if __name__ == "__main__":
    main(sys.argv[1])
