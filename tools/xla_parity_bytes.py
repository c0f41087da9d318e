"""Write XLA's collective bytes for the programs of tests/compiler/xla_parity_programs.py into
tests/compiler/data/xla_parity_bytes.json, once, under a Python that has JAX (0.10.2 here):

    XLA_FLAGS=--xla_force_host_platform_device_count=8 /work/jaxenv/bin/python tools/xla_parity_bytes.py

Each program is compiled with ``jax.jit(f, in_shardings=..., out_shardings=...).lower(...)
.compile().as_text()``; every collective in the text is counted with meshjit's ring model
(compiler/analysis/cost.py: an all-reduce sends 2 (n-1)/n of its buffer, an all-gather or
all-to-all (n-1)/n of its result, a reduce-scatter (n-1)/n of its operand, a collective-permute
its operand), n read from the replica groups. The test suite reads the file and never needs JAX.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import types
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks.xla_hlo import collectives  # noqa: E402  (the repository root first)
PROGRAMS = ROOT / "tests" / "compiler" / "xla_parity_programs.py"
OUTPUT = ROOT / "tests" / "compiler" / "data" / "xla_parity_bytes.json"

def _jax_library():
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    library = types.SimpleNamespace(jnp=jnp, nn=jax.nn, lax=jax.lax, mesh=None)

    def constrain(x, spec):
        return jax.lax.with_sharding_constraint(x, NamedSharding(library.mesh, PartitionSpec(*spec)))

    def make_mesh(shape, names):
        return Mesh(np.array(jax.devices()[: int(np.prod(shape))]).reshape(shape), names)

    library.constrain = constrain
    library.make_mesh = make_mesh
    library.sharding = lambda mesh, spec: NamedSharding(mesh, PartitionSpec(*spec))
    return jax, library


def _load_programs():
    spec = importlib.util.spec_from_file_location("xla_parity_programs", PROGRAMS)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
    jax, library = _jax_library()
    definitions = _load_programs()
    table = {"jax_version": jax.__version__, "programs": {}}
    for group, found in definitions.programs(library).items():
        for name, program in found.items():
            library.mesh = mesh = library.make_mesh(*program.mesh)
            ins = tuple(library.sharding(mesh, spec) for spec in program.in_specs)
            out = None if program.out_specs is None else library.sharding(mesh, program.out_specs)
            text = jax.jit(program.function, in_shardings=ins, out_shardings=out).lower(
                *program.arguments).compile().as_text()
            listed = collectives(text, int(np.prod(program.mesh[0])))
            total = sum(found["bytes"] for found in listed)
            table["programs"][name] = {"group": group, "bytes": round(total, 2), "collectives": [
                [found["kind"], round(found["bytes"], 2), found["type"]] for found in listed]}
            print(f"{group:7s} {name:45s} {total:12.0f}")
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
