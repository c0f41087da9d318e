"""Score JAX's docstring examples under meshjit against JAX 0.10.2's outputs (``data/*.json``,
written by ``generate.py``): an example matches when its output equals JAX's by the tutorials'
rule (tests/api/jax_tutorials/compare.py: the same text up to whitespace, numbers equal to 1e-5,
object addresses as one token); an example marked ``+IGNORE_EXCEPTION_DETAIL`` compares only
its exception's type, as doctest does. ``python compare.py [MODULE ...]`` prints the table.

Counted: every example but those excluded (outside meshjit's scope, or skipped by JAX's own
doctests: ``generate.SCOPE``), those whose output differed between two JAX runs, and those
that raise under JAX without their docstring showing an exception (they need names of their
defining module, or an earlier such example). The table shows how many of each."""

from __future__ import annotations

import json
import pathlib
import os
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE))
from run_examples import _module_at  # noqa: E402

tutorials_compare = _module_at(HERE.parent / "jax_tutorials" / "compare.py", "jax_tutorials_compare")
MODULES = sorted(path.stem for path in (HERE / "data").glob("*.json"))


def examples_of(module: str) -> list[dict]:
    """The module's examples in order, each with its id ``docstring_name:index``."""
    docstrings = json.loads((HERE / "data" / f"{module}.json").read_text())["docstrings"]
    return [{**example, "id": f"{docstring['name']}:{index}"}
            for docstring in docstrings for index, example in enumerate(docstring["examples"])]


def why_not_counted(example: dict) -> str | None:
    if "excluded" in example:
        return "excluded"
    if example.get("stable") is False:
        return "unstable"
    if "EXCEPTION:" in example["output"] and not example["shows_exception"]:
        return "raises under JAX"
    return None


def run_module(module: str, python: str = sys.executable, timeout: float = 1800) -> list[dict]:
    # NOTE: thousands of small programs: they run at once on their first tier while their kernels
    # compile in the background (the same bits: tiers are bit-identical), so a cold kernel cache
    # costs minutes, not hours
    environment = dict(os.environ, MESHJIT_COMPILE="background")
    with tempfile.TemporaryDirectory() as scratch:  # examples write files (jnp.save) where they run
        completed = subprocess.run([python, str(HERE / "run_examples.py"), module, "meshjit"], capture_output=True,
                                   text=True, timeout=timeout, cwd=scratch, env=environment)
    if completed.returncode:
        raise RuntimeError(f"{module}: run_examples failed:\n{completed.stderr[-3000:]}")
    return json.loads(completed.stdout)


def _without_exception_detail(output: str) -> str:
    head, marker, rest = output.partition("EXCEPTION: ")
    return head + marker + rest.split(":", 1)[0].split("\n", 1)[0] if marker else output


def matches(example: dict, output: str) -> bool:
    expected = example["output"]
    if "IGNORE_EXCEPTION_DETAIL" in example["code"]:
        expected, output = _without_exception_detail(expected), _without_exception_detail(output)
    return tutorials_compare.same_output(expected, output)


def score(module: str, outputs: list[dict]) -> tuple[list[str], list[str]]:
    """(the counted examples' ids, the ids of those whose output matches JAX's)."""
    examples = examples_of(module)
    counted = [example for example in examples if why_not_counted(example) is None]
    by_id = {example["id"]: output for example, output in zip(examples, outputs, strict=True)}
    matching = [example["id"] for example in counted
                if matches(example, by_id[example["id"]]["output"])]
    return [example["id"] for example in counted], matching


def main(*modules: str) -> None:
    total_counted = total_matching = 0
    print(f"{'module':22s} {'match':>5s} / {'count':5s}     %   excluded unstable raises-under-JAX")
    for module in modules or MODULES:
        counted, matching = score(module, run_module(module))
        reasons = [why_not_counted(example) for example in examples_of(module)]
        total_counted, total_matching = total_counted + len(counted), total_matching + len(matching)
        print(f"{module:22s} {len(matching):5d} / {len(counted):5d} {100 * len(matching) / max(len(counted), 1):5.1f}"
              f" {reasons.count('excluded'):8d} {reasons.count('unstable'):8d} {reasons.count('raises under JAX'):8d}")
    print(f"{'total':22s} {total_matching:5d} / {total_counted:5d} {100 * total_matching / max(total_counted, 1):5.1f}")


if __name__ == "__main__":
    main(*sys.argv[1:])
