"""Run one JAX module's docstring examples (``data/MODULE.json``) as JAX's doctests run them and
print each example's output as JSON: ``python run_examples.py MODULE jax|meshjit``, with 8 CPU
devices under either. Under ``meshjit`` every ``jax...`` import gives meshjit's module of that
name, so the examples run unchanged.

Each docstring starts from doctest's globals in JAX's setup (``jax``, ``lax``, ``jnp``, ``np``,
the sharding pages' ``fresh_namespace``); its ``>>>`` statements run in order in that namespace.
An example's output is what it prints, then the repr of its last expression, or, when it
raises, ``EXCEPTION: TypeName: message`` (doctest compares an exception's message too). Global
state an example may change (x64, numpy's print options) is restored after each docstring."""

import importlib
import importlib.abc
import importlib.util
import json
import os
import pathlib
import sys
import time

HERE = pathlib.Path(__file__).parent


def _module_at(path: pathlib.Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


page_runner = _module_at(HERE.parent / "jax_sharding_pages" / "run_page_cells.py", "jax_sharding_pages_runner")
tutorial_runner = page_runner.tutorial_runner


class _MeshjitModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves ``import jax.X.Y`` to meshjit's ``meshjit.X.Y`` (a module, or a module-valued
    attribute such as ``meshjit.numpy.linalg``), so no module of meshjit is loaded twice."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("jax.") or self._target(fullname) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    @staticmethod
    def _target(fullname):
        name = "meshjit" + fullname[3:]
        try:
            return importlib.import_module(name)
        except ImportError:
            parent, _, attribute = name.rpartition(".")
            try:
                value = getattr(importlib.import_module(parent), attribute, None)
            except ImportError:
                return None
            return value if type(value).__name__ == "module" else None

    def create_module(self, spec):
        return self._target(spec.name)

    def exec_module(self, module):
        sys.modules[module.__name__] = module


def use_meshjit() -> None:
    page_runner.use_meshjit()
    sys.meta_path.insert(0, _MeshjitModules())


def main(module: str, backend: str) -> None:
    if backend == "meshjit":
        use_meshjit()
    else:
        os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
    import numpy as np

    import jax
    print_options = np.get_printoptions()
    docstrings = json.loads((HERE / "data" / f"{module}.json").read_text())["docstrings"]
    outputs = []
    for docstring in docstrings:
        namespace = {**page_runner.fresh_namespace(), "lax": jax.lax}
        for example in docstring["examples"]:
            start = time.perf_counter()
            output = tutorial_runner.run_cell(example["code"], namespace, messages=True)
            outputs.append({"output": output, "seconds": round(time.perf_counter() - start, 3)})
        np.set_printoptions(**print_options)
        jax.config.update("jax_enable_x64", False)
    json.dump(outputs, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
