"""Run one sharding page's cells (or one file's docstring examples) as a notebook would and print
each cell's output as JSON: ``python run_page_cells.py PAGE jax|meshjit``, with 8 CPU devices under
either. Under ``meshjit`` the names ``jax``, ``jax.numpy``, ``jax.sharding``, ... are meshjit's
modules, so the cells run unchanged. A cell's output is the tutorials runner's
(tests/api/jax_tutorials/run_cells.py): what it prints, the repr of its last expression, or
``EXCEPTION: TypeName``; a docstring's first cell starts a fresh namespace."""

import importlib
import importlib.util
import json
import os
import pathlib
import sys
import time

HERE = pathlib.Path(__file__).parent


def _tutorials_module(name: str):
    """A module of tests/api/jax_tutorials, loaded by path under its own name."""
    spec = importlib.util.spec_from_file_location(f"jax_tutorials_{name}", HERE.parent / "jax_tutorials" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tutorial_runner = _tutorials_module("run_cells")

EXTRA_ALIASES = (".ref", ".experimental.shard_map", ".lax.parallel", ".stages", ".errors")


def use_meshjit() -> None:
    tutorial_runner.use_meshjit()
    for suffix in EXTRA_ALIASES:
        try:
            sys.modules["jax" + suffix] = importlib.import_module("meshjit" + suffix)
        except ImportError:
            continue


def fresh_namespace() -> dict:
    """What a doctest's globals hold in JAX's doctest setup: the module's own imports are not
    visible, so the examples import what they use; ``jax``, ``jnp`` and ``np`` are given."""
    import numpy as np

    import jax
    import jax.numpy as jnp
    return {"__name__": "__main__", "jax": jax, "jnp": jnp, "np": np}


def main(page: str, backend: str) -> None:
    if backend == "meshjit":
        use_meshjit()
    else:
        os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
    cells = json.loads((HERE / f"{page}.cells.json").read_text())["cells"]
    namespace: dict = {"__name__": "__main__"}
    outputs = []
    for cell in cells:
        if cell.get("fresh"):
            namespace = fresh_namespace()
        start = time.perf_counter()
        output = tutorial_runner.run_cell(tutorial_runner.without_magics(cell["code"]), namespace)
        outputs.append({"output": output, "seconds": round(time.perf_counter() - start, 3)})
    json.dump(outputs, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
