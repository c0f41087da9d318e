"""Regenerate the expected outputs of the JAX documentation programs in this folder by running
them with JAX: ``python tests/api/jax_docs/generate.py`` under a Python that has JAX 0.10 (and
``rich``, for ``visualize_array_sharding``), with 8 CPU devices
(``XLA_FLAGS=--xla_force_host_platform_device_count=8``). Each ``NAME.py`` writes ``NAME.out``."""

import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).parent

for program in sorted(HERE.glob("*.py")):
    if program.name == "generate.py":
        continue
    output = subprocess.run([sys.executable, str(program)], capture_output=True, text=True, check=True).stdout
    program.with_suffix(".out").write_text(output)
    print(f"wrote {program.with_suffix('.out').name}")
