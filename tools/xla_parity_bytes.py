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
import re
import sys
import types
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = ROOT / "tests" / "compiler" / "xla_parity_programs.py"
OUTPUT = ROOT / "tests" / "compiler" / "data" / "xla_parity_bytes.json"

_ITEM_BYTES = {"f32": 4, "s32": 4, "u32": 4, "f64": 8, "s64": 8, "u64": 8, "pred": 1, "bf16": 2, "f16": 2,
               "s8": 1, "u8": 1}
_KINDS = "all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute"
_COLLECTIVE = re.compile(rf"= (.*?) ({_KINDS})(?:-start)?\(")


def shape_bytes(text: str) -> int:
    """The bytes of every array type in ``text`` (a result type, maybe a tuple)."""
    total = 0
    for dtype, dims in re.findall(r"\b(f32|s32|u32|f64|s64|u64|pred|bf16|f16|s8|u8)\[([\d,]*)\]", text):
        total += int(np.prod([int(size) for size in dims.split(",") if size])) * _ITEM_BYTES[dtype]
    return total


def group_size(line: str, devices: int) -> int:
    """How many devices one replica group of the collective on ``line`` holds."""
    iota = re.search(r"replica_groups=\[(\d+),(\d+)\]<=", line)
    if iota:
        return int(iota.group(2))
    listed = re.search(r"replica_groups=\{\{([\d,]*)\}", line)
    if listed:
        return len([member for member in listed.group(1).split(",") if member]) or devices
    return devices


def ring_bytes(kind: str, result_bytes: float, group: int) -> float:
    share = (group - 1) / group
    if kind == "all_reduce":
        return 2 * share * result_bytes
    if kind == "reduce_scatter":
        return share * result_bytes * group
    return result_bytes if kind == "collective_permute" else share * result_bytes


def collectives(hlo_text: str, devices: int) -> list[tuple[str, float, str]]:
    """(kind, bytes a device sends, result type) for every collective of XLA's compiled text."""
    found = []
    for line in hlo_text.splitlines():
        match = _COLLECTIVE.search(line)
        if not match:
            continue
        kind = match.group(2).replace("-", "_")
        group = 2 if kind == "collective_permute" else group_size(line, devices)
        found.append((kind, ring_bytes(kind, shape_bytes(match.group(1)), group), match.group(1).strip()))
    return found


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
            total = sum(sent for _, sent, _ in listed)
            table["programs"][name] = {"group": group, "bytes": round(total, 2),
                                       "collectives": [[kind, round(sent, 2), shape] for kind, sent, shape in listed]}
            print(f"{group:7s} {name:45s} {total:12.0f}")
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
