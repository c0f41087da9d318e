"""Run one tutorial page's cells as a notebook would and print each cell's output as JSON:
``python run_cells.py PAGE jax|meshjit``. Under ``meshjit`` the names ``jax``, ``jax.numpy``,
... are meshjit's modules, so the cells run unchanged.

A cell's output is what it prints, then the repr of its last expression (as IPython shows it,
unless the line ends with ``;``), or ``EXCEPTION: TypeName`` when it raises. IPython magics are
not Python: ``%timeit stmt`` runs ``stmt`` once silently, ``%%timeit`` the cell's body; other
magic and shell lines are dropped.
"""

import ast
import contextlib
import importlib
import io
import json
import pathlib
import sys
import time

ALIASES = ("", ".numpy", ".lax", ".random", ".nn", ".scipy", ".scipy.special", ".scipy.stats", ".tree_util",
           ".tree", ".sharding", ".debug", ".test_util", ".experimental", ".dtypes", ".typing")


def use_meshjit() -> None:
    """Make ``import jax...`` give meshjit's modules (those meshjit has)."""
    for suffix in ALIASES:
        try:
            sys.modules["jax" + suffix] = importlib.import_module("meshjit" + suffix)
        except ImportError:
            continue


def without_magics(code: str) -> str:
    lines = code.splitlines()
    if lines and lines[0].startswith("%%"):
        return "\n".join(lines[1:]) if lines[0].startswith("%%timeit") else ""
    kept = []
    for line in lines:
        stripped = line.lstrip()
        if stripped.startswith("%timeit"):
            statement = stripped.split(None, 1)[1] if len(stripped.split(None, 1)) > 1 else "pass"
            while statement.startswith("-"):
                statement = statement.split(None, 2)[-1] if statement.split()[0] in ("-n", "-r") else \
                    statement.split(None, 1)[1]
            kept.append(line[: len(line) - len(stripped)] + statement)
        elif stripped.startswith(("%", "!")):
            continue
        else:
            kept.append(line)
    return "\n".join(kept)


def run_cell(code: str, namespace: dict, *, messages: bool = False) -> str:
    """The cell's output; with ``messages`` an exception's message follows its type name (as
    doctest compares it)."""
    stdout = io.StringIO()
    try:
        with contextlib.redirect_stdout(stdout):
            tree = ast.parse(code)
            last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
            body = tree.body[:-1] if last is not None else tree.body
            exec(compile(ast.Module(body, []), "<cell>", "exec"), namespace)
            if last is not None:
                value = eval(compile(ast.Expression(last.value), "<cell>", "eval"), namespace)
                if value is not None and not code.rstrip().endswith(";"):
                    print(repr(value))
    except Exception as error:  # noqa: BLE001 - a cell's exception is its output
        detail = f": {error}" if messages else ""
        return stdout.getvalue() + f"EXCEPTION: {type(error).__name__}{detail}\n"
    return stdout.getvalue()


def main(page: str, backend: str) -> None:
    if backend == "meshjit":
        use_meshjit()
    cells = json.loads((pathlib.Path(__file__).parent / f"{page}.cells.json").read_text())["cells"]
    namespace: dict = {"__name__": "__main__"}
    outputs = []
    for cell in cells:
        start = time.perf_counter()
        outputs.append({"output": run_cell(without_magics(cell["code"]), namespace),
                        "seconds": round(time.perf_counter() - start, 3)})
    json.dump(outputs, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
