"""Print the StableHLO corpus of tests/ir/stablehlo_corpus/ with JAX (run once, by hand):

    XLA_FLAGS=--xla_force_host_platform_device_count=8 /work/jaxenv/bin/python tools/make_stablehlo_corpus.py

For each program it writes ``<name>.mlir`` (``jax.jit(f).lower(*args).as_text()``), ``<name>.npz``
(the inputs ``arg0, arg1, ...`` and JAX's outputs ``out0, out1, ...``) and one entry of
``xla_collectives.json``: the collectives of XLA's compiled module with the bytes each device
sends under meshjit's ring model (compiler/cost.py's collective_bytes). It needs JAX, so it is
never part of the test suite.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "ir" / "stablehlo_corpus"
sys.path.insert(0, str(ROOT))
from benchmarks.xla_hlo import collectives  # noqa: E402  (the repository root first)
def xla_collectives(hlo_text: str, devices: int = 8) -> list[dict]:
    """Each collective of XLA's compiled HLO text with its kind, group size and ring bytes."""
    return [{"kind": found["kind"], "group": found["group"], "result_bytes": found["result_bytes"],
             "bytes": int(round(found["bytes"]))} for found in collectives(hlo_text, devices)]


def programs(jax, jnp, mesh, P, NamedSharding):
    """name -> (function, arguments, in_shardings, out_shardings)."""
    rng = np.random.default_rng(0)

    def normal(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    def sharding(*spec):
        return NamedSharding(mesh, P(*spec))

    def constrain(x, *spec):
        return jax.lax.with_sharding_constraint(x, sharding(*spec))

    def mlp(x, w1, w2):
        h = jax.nn.relu(x @ w1)
        return h @ w2

    def layer_norm(x):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + 1e-5)

    def transformer(x, wq, wk, wv, wo, w1, w2):
        b, t, d = x.shape
        h = layer_norm(x)
        q = (h @ wq).reshape(b, t, 4, d // 4)
        k = (h @ wk).reshape(b, t, 4, d // 4)
        v = (h @ wv).reshape(b, t, 4, d // 4)
        scores = jnp.einsum("bthd,bshd->bhts", q, k) / np.float32(np.sqrt(d // 4))
        attention = jax.nn.softmax(scores, axis=-1)
        mixed = jnp.einsum("bhts,bshd->bthd", attention, v).reshape(b, t, d)
        x = x + mixed @ wo
        hidden = constrain(jax.nn.relu(layer_norm(x) @ w1), "x", None, "y")
        return x + hidden @ w2

    def convnet(image, k1, k2, w):
        spec = ("NHWC", "HWIO", "NHWC")
        h = jax.nn.relu(jax.lax.conv_general_dilated(image, k1, (1, 1), "SAME", dimension_numbers=spec))
        h = jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        h = jax.nn.relu(jax.lax.conv_general_dilated(h, k2, (1, 1), "SAME", dimension_numbers=spec))
        return h.mean(axis=(1, 2)) @ w

    def moe(x, router, experts, table, ids):
        tokens = x + jnp.take(table, ids, axis=0)
        choice = jnp.argmax(tokens @ router, axis=-1)
        dispatch = jax.nn.one_hot(choice, experts.shape[0], dtype=jnp.float32)
        routed = constrain(jnp.einsum("td,te->etd", tokens, dispatch), "x", None, None)
        out = constrain(jnp.einsum("etd,edf->etf", routed, experts), "x", None, None)
        return jnp.einsum("etf,te->tf", out, dispatch)

    def scan(h0, xs, w, u):
        def step(h, x):
            h = jnp.tanh(h @ w + x @ u)
            return h, h.sum(-1)
        return jax.lax.scan(step, h0, xs)

    def train_step(params, x, y):
        def loss(params):
            w1, w2 = params
            return ((jax.nn.relu(x @ w1) @ w2 - y) ** 2).mean()
        value, grads = jax.value_and_grad(loss)(params)
        return value, tuple(p - 0.1 * g for p, g in zip(params, grads))

    def row_parallel(x, w):
        def body(x_block, w_block):
            partial = x_block @ w_block
            total = jax.lax.psum(partial, "y")
            return total, jax.lax.all_gather(x_block, "y", axis=1, tiled=True)
        return jax.shard_map(body, mesh=mesh, in_specs=(P("x", "y"), P("y", None)),
                             out_specs=(P("x", None), P("x", None)), check_vma=False)(x, w)

    def ops_tour(x, ids, keys):
        """One of each op the models above leave out: sort, top_k, cond, fori_loop, scatter-add,
        cumsum, argmax, pad, concatenate, rev, clamp, erf_inv, integer ops."""
        values, positions = jax.lax.top_k(x, 3)
        ordered = jnp.sort(keys, axis=1)
        branch = jax.lax.cond(x.sum() > 0, lambda a: a * 2.0, lambda a: a - 1.0, x)
        looped = jax.lax.fori_loop(0, 3, lambda i, a: a + i.astype(jnp.float32), x)
        counts = jnp.zeros((8,), jnp.float32).at[ids].add(1.0)
        padded = jnp.concatenate([jnp.pad(x, ((1, 0), (0, 0)))[:-1], x[::-1]], axis=1)
        clipped = jax.scipy.special.erfinv(jnp.clip(x, -0.5, 0.5))
        bits = (ids * 3 + 1) % 5 - jnp.argmax(x, axis=1).astype(jnp.int32)
        return (values, positions, ordered, branch, looped, counts, jnp.cumsum(x, axis=0), padded,
                clipped, bits, jnp.min(x, axis=0), jnp.all(x > -3.0, axis=1))

    def collectives(x):
        def body(block):
            shifted = jax.lax.ppermute(block, "x", [(0, 1), (1, 0)])
            swapped = jax.lax.all_to_all(block, "y", 1, 0, tiled=True)
            scattered = jax.lax.psum_scatter(block, "y", scatter_dimension=1, tiled=True)
            biggest = jax.lax.pmax(block, "x")
            index = jax.lax.axis_index("y").astype(jnp.float32)
            return shifted + biggest * index, swapped, scattered
        return jax.shard_map(body, mesh=mesh, in_specs=P("x", "y"),
                             out_specs=(P("x", "y"), P(("x", "y"), None), P("x", "y")), check_vma=False)(x)

    def partial_manual(x, w):
        """shard_map manual over "x" only: "y" stays automatic inside the body."""
        def body(x_block, w_full):
            total = jax.lax.psum(x_block.sum(0, keepdims=True), "x")
            return jnp.tanh(x_block @ w_full) + total, jax.lax.ppermute(x_block, "x", [(0, 1), (1, 0)])
        return jax.shard_map(body, mesh=mesh, in_specs=(P("x", None), P()), out_specs=(P("x", None), P("x", None)),
                             axis_names={"x"}, check_vma=False)(x, w)

    def complex_fft(z, r):
        """Complex arithmetic, parts and transforms: the batch dim sharded, a transform dim too."""
        spectrum = jnp.fft.fft(z) * (1 + 2j) + jnp.conj(z)
        parts = jnp.real(z) * jnp.imag(z) + jnp.abs(z)
        return spectrum, parts, jnp.fft.rfft(r), jnp.fft.irfft(spectrum), jnp.sum(z * z, axis=0), jax.lax.complex(r, r)

    def seeded(build):
        """A program's arrays from its own generator, so each is the same whichever others exist."""
        nonlocal rng
        rng = np.random.default_rng(0)
        return build()

    return {name: seeded(build) for name, build in {
        "ops_tour": lambda: (ops_tour, (normal(8, 16), rng.integers(0, 8, (8,)).astype(np.int32), normal(8, 16)),
                     (sharding("x", None), sharding("x"), sharding(None, "y")), None),
        "shard_map_partial": lambda: (partial_manual, (normal(16, 32), normal(32, 32, scale=0.2)),
                                      (sharding("x", None), sharding(None, "y")), None),
        "collectives": lambda: (collectives, (normal(8, 32),), (sharding("x", "y"),), None),
        "complex_fft": lambda: (complex_fft, ((normal(8, 16) + 1j * normal(8, 16)).astype(np.complex64), normal(8, 16)),
                                (sharding("x", None), sharding("x", "y")), None),
        "mlp": lambda: (mlp, (normal(16, 32), normal(32, 64, scale=0.2), normal(64, 32, scale=0.2)),
                (sharding("x", None), sharding(None, "y"), sharding("y", None)), sharding("x", None)),
        "transformer": lambda: (transformer, (normal(4, 8, 32),) + tuple(normal(32, 32, scale=0.2) for _ in range(4))
                        + (normal(32, 64, scale=0.2), normal(64, 32, scale=0.2)),
                        (sharding("x"),) + (sharding(None, "y"),) * 3 + (sharding("y", None),
                                                                          sharding(None, "y"), sharding("y", None)),
                        sharding("x")),
        "convnet": lambda: (convnet, (normal(8, 8, 8, 3), normal(3, 3, 3, 8, scale=0.3), normal(3, 3, 8, 8, scale=0.3),
                              normal(8, 4)),
                    (sharding("x"), sharding(), sharding(), sharding()), sharding("x")),
        "moe": lambda: (moe, (normal(16, 16), normal(16, 8), normal(8, 16, 16, scale=0.2), normal(32, 16),
                      rng.integers(0, 32, (16,)).astype(np.int32)),
                (sharding("x", None), sharding(), sharding("x", None, None), sharding("y", None), sharding("x")),
                sharding("x", None)),
        "scan": lambda: (scan, (normal(8, 16), normal(6, 8, 16), normal(16, 16, scale=0.3), normal(16, 16, scale=0.3)),
                 (sharding("x", None), sharding(None, "x", None), sharding(), sharding(None, "y")),
                 (sharding("x", None), sharding(None, "x"))),
        "train_step": lambda: (train_step, ((normal(32, 64, scale=0.2), normal(64, 8, scale=0.2)), normal(16, 32), normal(16, 8)),
                       ((sharding(None, "y"), sharding("y", None)), sharding("x", None), sharding("x", None)),
                       None),
        "shard_map": lambda: (row_parallel, (normal(8, 16), normal(16, 16)),
                      (sharding("x", "y"), sharding("y", None)), (sharding("x", None), sharding("x", None))),
    }.items()}


GSPMD_PROGRAMS = ("mlp", "transformer", "shard_map")


def write_program(jax, name, program, suffix, index) -> None:
    function, arguments, ins, outs = program
    jitted = jax.jit(function, in_shardings=ins, out_shardings=outs) if outs is not None else jax.jit(
        function, in_shardings=ins)
    lowered = jitted.lower(*arguments)
    (OUT / f"{name}{suffix}.mlir").write_text(lowered.as_text())
    flat_args = jax.tree_util.tree_leaves(arguments)
    flat_outs = jax.tree_util.tree_leaves(jitted(*arguments))
    np.savez(OUT / f"{name}{suffix}.npz", **{f"arg{i}": np.asarray(a) for i, a in enumerate(flat_args)},
             **{f"out{i}": np.asarray(o) for i, o in enumerate(flat_outs)})
    found = xla_collectives(lowered.compile().as_text())
    index[name + suffix] = {"total_bytes_per_device": sum(entry["bytes"] for entry in found), "collectives": found}


def main() -> None:
    os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    OUT.mkdir(parents=True, exist_ok=True)
    mesh = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("x", "y"))
    index: dict = {}
    selected = set(sys.argv[1:])
    for name, program in programs(jax, jnp, mesh, P, NamedSharding).items():
        if not selected or name in selected:
            write_program(jax, name, program, "", index)
    jax.config.update("jax_use_shardy_partitioner", False)
    for name, program in programs(jax, jnp, mesh, P, NamedSharding).items():
        if name in GSPMD_PROGRAMS and (not selected or name in selected):
            write_program(jax, name, program, "_gspmd", index)
    path = OUT / "xla_collectives.json"
    existing = json.loads(path.read_text()) if path.exists() else {}
    existing.update(index)
    path.write_text(json.dumps(dict(sorted(existing.items())), indent=1) + "\n")
    for name, entry in index.items():
        print(f"{name}: {entry['total_bytes_per_device']} bytes/device over {len(entry['collectives'])} collectives")


if __name__ == "__main__":
    main()
