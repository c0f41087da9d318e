"""The digest a fused kernel's object code is cached under: its entry point and only the prelude
definitions the entry reaches (the prelude's imports always count), so adding or changing one
helper in the prelude (codegen_math.py) recompiles the kernels that call it and no others.

The kernel's source file keeps the whole prelude (its helpers are compiled once per process from
that text, kernel_objects.shared_helpers); only the object files' names use this digest.
"""

from __future__ import annotations

import ast
import functools
import hashlib


@functools.lru_cache(maxsize=8)
def _definitions(helpers: str) -> tuple[tuple[str, ...], tuple[tuple[frozenset, ast.stmt, str], ...]]:
    """``helpers``' statements that always count (imports, and anything that defines no name),
    and per other statement: the names it defines, its node (``_reads`` walks the few a kernel
    reaches, not all: walking every helper's tree was most of a first call's 50 ms here), and its
    text."""
    lines = helpers.splitlines()
    always, named = [], []
    for node in ast.parse(helpers).body:
        start = min([node.lineno] + [decorator.lineno for decorator in getattr(node, "decorator_list", ())])
        text = "\n".join(lines[start - 1:node.end_lineno])
        defined = _defined_names(node)
        if isinstance(node, (ast.Import, ast.ImportFrom)) or not defined:
            always.append(text)
        else:
            named.append((frozenset(defined), node, text))
    return tuple(always), tuple(named)


def _defined_names(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return {node.name}
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
    return {name.id for target in targets for name in ast.walk(target) if isinstance(name, ast.Name)}


def _read_names(node: ast.AST) -> set[str]:
    return {name.id for name in ast.walk(node) if isinstance(name, ast.Name)}


@functools.lru_cache(maxsize=None)
def _reads(node: ast.stmt) -> frozenset:
    """The names a prelude statement reads (its node is kept by ``_definitions``' cache)."""
    return frozenset(_read_names(node))


def object_digest(helpers: str, entry: str) -> str:
    """20 hex digits of sha256 over the prelude's imports, the definitions ``entry`` reaches
    (in the prelude's order) and ``entry`` itself."""
    always, named = _definitions(helpers)
    wanted, reached = set(_read_names(ast.parse(entry))), set()
    while True:
        grown = {index for index, (defined, _, _) in enumerate(named) if index not in reached and defined & wanted}
        if not grown:
            break
        reached |= grown
        for index in grown:
            wanted |= _reads(named[index][1])
    text = "\n".join([*always, *(named[index][2] for index in sorted(reached)), entry])
    return hashlib.sha256(text.encode()).hexdigest()[:20]
