"""meshjit's side of the comparison with XLA: each program of xla_parity_programs.py jitted with
its shardings, its collectives' bytes (``Compiled.collectives()``, the ring model) and its
result against the reference interpreter on the unsharded program; XLA's bytes come from
tests/compiler/data/xla_parity_bytes.json (tools/xla_parity_bytes.py wrote it once)."""

from __future__ import annotations

import json
import types
from pathlib import Path

import numpy as np

import meshjit as jax
import meshjit.numpy as jnp
from meshjit import lax, nn
from meshjit.ir import interpret
from meshjit.jit_api import jit, with_sharding_constraint
from meshjit.sharding import Mesh, NamedSharding
from meshjit.sharding import PartitionSpec as P

import xla_parity_programs

XLA_TABLE = Path(__file__).parent / "data" / "xla_parity_bytes.json"


def library() -> types.SimpleNamespace:
    namespace = types.SimpleNamespace(jnp=jnp, nn=nn, lax=lax, mesh=None)
    namespace.constrain = lambda x, spec: with_sharding_constraint(x, NamedSharding(namespace.mesh, P(*spec)))
    return namespace


def all_programs(namespace) -> dict[str, xla_parity_programs.Program]:
    found = {}
    for group in xla_parity_programs.programs(namespace).values():
        found.update(group)
    return found


def xla_bytes() -> dict[str, float]:
    table = json.loads(XLA_TABLE.read_text())["programs"]
    return {name: entry["bytes"] for name, entry in table.items()}


def compile_program(namespace, program):
    """The jitted function and its compiled form, with the program's mesh in ``namespace``."""
    sizes, names = program.mesh
    namespace.mesh = mesh = Mesh(np.array(jax.devices()[: int(np.prod(sizes))]).reshape(sizes), names)
    ins = tuple(NamedSharding(mesh, P(*spec)) for spec in program.in_specs)
    out = None if program.out_specs is None else NamedSharding(mesh, P(*program.out_specs))
    function = jit(program.function, in_shardings=ins, out_shardings=out)
    return function, function.lower(*program.arguments).compile()


def sent_bytes(compiled) -> float:
    return sum(record.bytes for record in compiled.collectives())


def expected_outputs(function, program):
    module = function.lower(*program.arguments).module
    return interpret(module, *[np.asarray(argument) for argument in program.arguments])
