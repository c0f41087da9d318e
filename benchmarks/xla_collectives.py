"""``python -m benchmarks.xla_collectives [jax|meshjit]``: the bytes each device sends in the
collectives of the programs in tests/compiler/test_contracts_xla.py, under XLA (run with a
Python that has JAX: ``MESHJIT_BENCH_JAX_PYTHON`` or /work/jaxvenv) or under meshjit. XLA's
collectives are read from ``jax.jit(f).lower(...).compile().as_text()`` and counted with
meshjit's ring model (compiler/cost.py), so the two columns compare."""

from __future__ import annotations

import os
import sys

import numpy as np

from .xla_hlo import collectives

T, HEADS, HEAD_DIM, E = 16, 4, 8, 32
GROUPS, TOKENS, EXPERTS, CAPACITY, MODEL, HIDDEN = 8, 8, 8, 4, 16, 32
VOCAB, WIDTH, BATCH, LENGTH = 1024, 16, 8, 4


def programs(jnp, constrain, sharding):
    """name -> (function, arguments, in_shardings, out_sharding), for either library."""
    def heads(x, w):
        return jnp.einsum("thd,hde->te", x.reshape(T, HEADS, HEAD_DIM), w.reshape(HEADS, HEAD_DIM, E))

    def moe(x, dispatch, combine, w):
        routed = constrain(jnp.einsum("gsd,gsec->egcd", x, dispatch), sharding("x", None, None, None))
        hidden = constrain(jnp.einsum("egcd,edf->egcf", routed, w), sharding(None, "x", None, None))
        return jnp.einsum("egcf,gsec->gsf", hidden, combine)

    def embedding(table, ids):
        return jnp.take(table, ids, axis=0)

    rng = np.random.default_rng(0)

    def normal(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    groups = sharding("x")
    return {
        "heads": (heads, (normal(T, HEADS * HEAD_DIM), normal(HEADS * HEAD_DIM, E)),
                  (sharding(None, "x"), sharding("x", None)), sharding("x", None)),
        "moe": (moe, (normal(GROUPS, TOKENS, MODEL), normal(GROUPS, TOKENS, EXPERTS, CAPACITY),
                      normal(GROUPS, TOKENS, EXPERTS, CAPACITY), normal(EXPERTS, MODEL, HIDDEN)),
                (groups,) * 4, groups),
        "embedding": (embedding, (normal(VOCAB, WIDTH), rng.integers(0, VOCAB, (BATCH, LENGTH)).astype(np.int32)),
                      (sharding("x", None), sharding()), sharding()),
    }


def xla_bytes(hlo_text: str, devices: int = 8) -> list[tuple[str, float]]:
    """Each collective of XLA's compiled text with the bytes a device sends (ring model)."""
    return [(found["kind"], found["bytes"]) for found in collectives(hlo_text, devices)]


def run_jax() -> None:
    os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(np.array(jax.devices()[:8]), ("x",))
    for name, (function, arguments, ins, out) in programs(
            jnp, jax.lax.with_sharding_constraint, lambda *spec: NamedSharding(mesh, PartitionSpec(*spec))).items():
        text = jax.jit(function, in_shardings=ins, out_shardings=out).lower(*arguments).compile().as_text()
        found = xla_bytes(text)
        print(f"{name}: {sum(sent for _, sent in found):.0f} bytes/device  {found}")


def run_meshjit() -> None:
    import meshjit as jax
    import meshjit.numpy as jnp
    from meshjit.constraint_api import with_sharding_constraint
    from meshjit.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(np.array(jax.devices()[:8]), ("x",))
    for name, (function, arguments, ins, out) in programs(
            jnp, with_sharding_constraint, lambda *spec: NamedSharding(mesh, PartitionSpec(*spec))).items():
        records = jax.jit(function, in_shardings=ins, out_shardings=out).lower(*arguments).compile().collectives()
        print(f"{name}: {sum(record.bytes for record in records)} bytes/device  "
              f"{[(record.kind, record.bytes) for record in records]}")


if __name__ == "__main__":
    (run_jax if sys.argv[1:] == ["jax"] else run_meshjit)()
