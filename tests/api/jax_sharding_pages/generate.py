"""Regenerate ``PAGE.expected.json`` (each cell's output under JAX 0.10.2, 8 CPU devices) for every
``PAGE.cells.json`` here: ``python generate.py`` with a Python that has JAX 0.10.2."""

import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).parent

for cells in sorted(HERE.glob("*.cells.json")):
    page = cells.name.removesuffix(".cells.json")
    output = subprocess.run([sys.executable, str(HERE / "run_page_cells.py"), page, "jax"], capture_output=True,
                            text=True, check=True).stdout
    (HERE / f"{page}.expected.json").write_text(output + "\n")
    print(f"wrote {page}.expected.json")
