"""Extract the ``>>>`` examples of JAX's public functions from the installed JAX 0.10.2 and
record what each prints under JAX: ``python generate.py`` with a Python that has JAX 0.10.2
(``/work/jaxenv/bin/python``). Writes ``data/MODULE.json`` per module: each docstring's name and
examples, each example's code, whether its docstring shows it raising, and JAX's output.

The examples run twice under JAX (``run_examples.py``, 8 CPU devices); an example whose output
differs between the two runs (an unseeded draw, a time) is marked ``"stable": false``. Examples
outside meshjit's scope carry ``"excluded"`` with the reason (``SCOPE``)."""

import doctest
import importlib
import inspect
import json
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).parent
MODULES = ("jax", "jax.numpy", "jax.numpy.linalg", "jax.numpy.fft", "jax.lax", "jax.nn", "jax.nn.initializers",
           "jax.scipy.linalg", "jax.scipy.signal", "jax.scipy.special", "jax.scipy.stats", "jax.random", "jax.tree",
           "jax.tree_util")
# words in an example's code (or its docstring's name) that put it outside meshjit's scope, and why
SCOPE = {
    "pallas": "Pallas kernels (GPU/TPU kernel language) are outside meshjit's scope",
    "jax.extend": "jax.extend exposes JAX's internals (primitives, jaxpr interpreter hooks)",
    "'gpu'": "needs a GPU backend", "\"gpu\"": "needs a GPU backend",
    "'tpu'": "needs a TPU backend", "\"tpu\"": "needs a TPU backend",
    ".as_text()": "prints XLA's StableHLO/HLO text, which meshjit does not produce",
    "compiler_ir": "prints XLA's StableHLO/HLO text, which meshjit does not produce",
    ".cost_analysis()": "XLA's cost model",
}


def public_objects(module):
    """(name, object) for each public non-module attribute with ``>>>`` examples, by name; the
    stats distributions' functions (``jax.scipy.stats.norm.pdf``) under their dotted names."""
    found = []
    for name in sorted(dir(module)):
        value = getattr(module, name)
        if name.startswith("_"):
            continue
        if inspect.ismodule(value):
            if module.__name__ == "jax.scipy.stats":
                found += [(f"{name}.{sub}", obj) for sub, obj in public_objects(value)]
            continue
        if ">>>" in (getattr(value, "__doc__", None) or "") and isinstance(value.__doc__, str):
            found.append((name, value))
    return found


SKIPPED = "JAX's own doctests skip it (+SKIP)"


def excluded(code: str) -> str | None:
    if "doctest: +SKIP" in code:
        return SKIPPED
    return next((reason for word, reason in SCOPE.items() if word in code), None)


def docstrings_of(module_name: str) -> list[dict]:
    parser = doctest.DocTestParser()
    docstrings = []
    for name, value in public_objects(importlib.import_module(module_name)):
        examples = [{"code": example.source.rstrip("\n"), "shows_exception": example.exc_msg is not None}
                    for example in parser.get_examples(inspect.cleandoc(value.__doc__))]
        for example in examples:
            if reason := excluded(example["code"]):
                example["excluded"] = reason
        if examples:
            docstrings.append({"name": f"{module_name}.{name}", "examples": examples})
    return docstrings


def jax_outputs(module_name: str) -> list[dict]:
    with tempfile.TemporaryDirectory() as scratch:  # examples write files (jnp.save) where they run
        completed = subprocess.run([sys.executable, str(HERE / "run_examples.py"), module_name, "jax"],
                                   capture_output=True, text=True, check=True, cwd=scratch)
    return json.loads(completed.stdout)


def main() -> None:
    import jax
    for module_name in MODULES:
        path = HERE / "data" / f"{module_name}.json"
        docstrings = docstrings_of(module_name)
        if not docstrings:
            print(f"{module_name}: no examples")
            continue
        path.write_text(json.dumps({"jax": jax.__version__, "docstrings": docstrings}, indent=1) + "\n")
        first, second = jax_outputs(module_name), jax_outputs(module_name)
        examples = [example for docstring in docstrings for example in docstring["examples"]]
        for example, one, two in zip(examples, first, second, strict=True):
            example["output"] = one["output"]
            if one["output"] != two["output"]:
                example["stable"] = False
        path.write_text(json.dumps({"jax": jax.__version__, "docstrings": docstrings}, indent=1) + "\n")
        print(f"{module_name}: {len(docstrings)} docstrings, {len(examples)} examples")


if __name__ == "__main__":
    main()
