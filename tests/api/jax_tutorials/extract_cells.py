"""Extract the code cells of JAX's tutorial pages (MyST markdown, jax-ml/jax at tag
jax-v0.10.2) into ``PAGE.cells.json``: ``python extract_cells.py JAX_CHECKOUT``, where the
checkout has that tag (``git -C JAX_CHECKOUT show jax-v0.10.2:docs/...`` is read)."""

import json
import pathlib
import re
import subprocess
import sys

TAG = "jax-v0.10.2"
PAGES = {
    "jit_compilation": "docs/jit-compilation.md",
    "automatic_vectorization": "docs/automatic-vectorization.md",
    "automatic_differentiation": "docs/automatic-differentiation.md",
    "pytrees": "docs/pytrees.md",
    "random_numbers": "docs/random-numbers.md",
    "control_flow": "docs/control-flow.md",
    "stateful_computations": "docs/stateful-computations.md",
    "thinking_in_jax": "docs/notebooks/thinking_in_jax.md",
    "common_gotchas": "docs/notebooks/Common_Gotchas_in_JAX.md",
    "autodiff_cookbook": "docs/notebooks/autodiff_cookbook.md",
    "custom_derivatives": "docs/notebooks/Custom_derivative_rules_for_Python_code.md",
    "vmapped_log_probs": "docs/notebooks/vmapped_log_probs.md",
    "neural_network": "docs/notebooks/Neural_Network_and_Data_Loading.md",
    "external_callbacks": "docs/external-callbacks.md",
}
CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```\s*$", re.M | re.S)


def cells_of(text: str) -> list[dict]:
    """Each code cell's source without its ``:key: value`` options, and whether it is tagged
    to raise."""
    cells = []
    for match in CELL.finditer(text):
        lines = match.group(1).splitlines()
        options = []
        while lines and (lines[0].startswith(":") or (options and not lines[0].strip())):
            options.append(lines.pop(0))
        cells.append({"code": "\n".join(lines).strip("\n"),
                      "raises": any("raises-exception" in option for option in options)})
    return cells


def main(checkout: str) -> None:
    here = pathlib.Path(__file__).parent
    for name, path in PAGES.items():
        text = subprocess.run(["git", "-C", checkout, "show", f"{TAG}:{path}"], capture_output=True, text=True,
                              check=True).stdout
        page = {"source": f"jax-ml/jax {TAG}:{path}", "cells": cells_of(text)}
        (here / f"{name}.cells.json").write_text(json.dumps(page, indent=1) + "\n")
        print(f"{name}: {len(page['cells'])} cells")


if __name__ == "__main__":
    main(sys.argv[1])
