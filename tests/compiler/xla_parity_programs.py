"""The programs meshjit's communication is compared on against XLA's, written once for either
library: ``programs(lib)`` takes a namespace with ``jnp``, ``nn``, ``lax``, ``constrain(x, spec)``
and ``mesh_shape`` and returns name -> Program. numpy only at import, so the JAX side
(tools/xla_parity_bytes.py, run once under JAX 0.10.2) and meshjit's tests share the definitions.

Two sets: BUILT (the programs the partitioner was built against: the collective contracts,
docs/partitioning.md) and UNSEEN (issue 33's programs it had not seen, and the cases of the
propagation notes), plus RANDOM: programs drawn from blocks users write (matmul chains, norms,
attention, lookups, pads, scans) with random shardings, seeded so both sides draw the same, and
RANDOM2 (16 more, seed 34, with row gathers, reversed scans, padded windows, causal attention).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class Program:
    """``function(*arguments)`` on a mesh of ``mesh`` ((sizes), (names)) with the arguments laid
    out as ``in_specs`` (PartitionSpec tuples) and the results as ``out_specs`` (None: left to
    the partitioner)."""

    function: Callable
    arguments: tuple
    in_specs: tuple
    out_specs: object = None
    mesh: tuple = ((8,), ("x",))


def _normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def _labels(rng, size, *shape):
    return rng.integers(0, size, shape).astype(np.int32)


MESH_2D = ((2, 4), ("x", "y"))


def built_programs(lib) -> dict[str, Program]:
    jnp, nn = lib.jnp, lib.nn
    rng = np.random.default_rng(0)
    T, D, F = 16, 32, 256

    def mlp(x, w1, w2):
        return nn.gelu(x @ w1) @ w2

    def attention(x, wq, wk, wv, wo):
        q, k, v = (jnp.einsum("td,dhe->the", x, w) for w in (wq, wk, wv))
        scores = nn.softmax(jnp.einsum("the,she->hts", q, k) / 2.0, axis=-1)
        return jnp.einsum("hts,she,hef->tf", scores, v, wo)

    def heads(x, w):
        return jnp.einsum("thd,hde->te", x.reshape(16, 4, 8), w.reshape(4, 8, 32))

    def moe(x, dispatch, combine, w):
        routed = lib.constrain(jnp.einsum("gsd,gsec->egcd", x, dispatch), ("x", None, None, None))
        hidden = lib.constrain(jnp.einsum("egcd,edf->egcf", routed, w), (None, "x", None, None))
        return jnp.einsum("egcf,gsec->gsf", hidden, combine)

    def conv(x, w):
        return lib.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def pool(x):
        return lib.lax.reduce_window(x, -np.inf, lib.lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")

    def ffn_2d(x, w1, w2):
        return jnp.maximum(x @ w1, 0.0) @ w2

    ffn_in = ((None, "y"), ("y", "x"), ("x", "y"))
    return {
        "megatron_mlp": Program(mlp, (_normal(rng, T, D), _normal(rng, D, F), _normal(rng, F, D)),
                                ((), (None, "x"), ("x", None)), ()),
        "sequence_parallel_mlp": Program(mlp, (_normal(rng, T, D), _normal(rng, D, F), _normal(rng, F, D)),
                                         (("x", None), (None, "x"), ("x", None)), ("x", None)),
        "data_model_mlp": Program(mlp, (_normal(rng, 8, D), _normal(rng, D, 64), _normal(rng, 64, D)),
                                  (("x", None), (None, "y"), ("y", None)), ("x", None), MESH_2D),
        "attention_heads": Program(attention, (_normal(rng, T, D),) + tuple(_normal(rng, D, 8, 4) for _ in range(3))
                                   + (_normal(rng, 8, 4, D),),
                                   ((), (None, "x", None), (None, "x", None), (None, "x", None), ("x", None, None)), ()),
        "reshard_dim0_to_dim1": Program(lambda a: a.T, (_normal(rng, 128, 1024),), (("x", None),), (None, "x")),
        "sum_over_sharded_dim": Program(lambda a: jnp.sum(a, axis=0), (_normal(rng, 128, 256),), (("x", None),), ()),
        "matmul_gathers_smaller": Program(lambda x, w: x @ w, (_normal(rng, T, D), _normal(rng, D, 64)),
                                          (("x", None), (None, "x")), ("x", None)),
        "heads_reshape": Program(heads, (_normal(rng, 16, 32), _normal(rng, 32, 32)), ((None, "x"), ("x", None)),
                                 ("x", None)),
        "moe": Program(moe, (_normal(rng, 8, 8, 16), _normal(rng, 8, 8, 8, 4), _normal(rng, 8, 8, 8, 4),
                             _normal(rng, 8, 16, 32)), (("x",),) * 4, ("x",)),
        "embedding": Program(lambda table, ids: jnp.take(table, ids, axis=0),
                             (_normal(rng, 1024, 16), _labels(rng, 1024, 8, 4)), (("x", None), ()), ()),
        "conv_3x3_h_split": Program(conv, (_normal(rng, 2, 64, 32, 8), _normal(rng, 3, 3, 8, 16)),
                                    ((None, "x"), ()), (None, "x")),
        "roll_rows": Program(lambda a: jnp.roll(a, 1, axis=0), (_normal(rng, 64, 256),), (("x", None),),
                             ("x", None)),
        "max_pool_h_split": Program(pool, (_normal(rng, 2, 64, 32, 8),), ((None, "x"),), (None, "x")),
        "ffn_2d_weight_stationary": Program(ffn_2d, (_normal(rng, 16, 256), _normal(rng, 256, 1024),
                                                     _normal(rng, 1024, 256)), ffn_in, (None, "y"), MESH_2D),
    }


def unseen_programs(lib) -> dict[str, Program]:
    jnp, lax = lib.jnp, lib.lax
    rng = np.random.default_rng(1)

    def cross_entropy(logits, labels):
        top = jnp.max(logits, axis=1, keepdims=True)
        lse = jnp.log(jnp.sum(jnp.exp(logits - top), axis=1)) + top[:, 0]
        return lse - jnp.take_along_axis(logits, labels[:, None], axis=1)[:, 0]

    def stencil(a):
        padded = jnp.pad(a, ((1, 1), (0, 0)))
        return padded[:-2] + 2.0 * padded[1:-1] + padded[2:]

    def stencil_pool(a):
        smooth = stencil(a)
        return lax.reduce_window(smooth, -np.inf, lax.max, (2, 1), (2, 1), "VALID")

    def scatter_rows(table, ids, updates):
        return table.at[ids].add(updates)

    def constraint_swap(a, b):
        return lib.constrain(a, (None, "x")) + lib.constrain(b, ("x", None))

    def dynamic_rows(a, start):
        return lax.dynamic_slice_in_dim(a, start, 16, axis=0)

    logits, labels = _normal(rng, 256, 1024), _labels(rng, 1024, 256)
    return {
        "cross_entropy_vocab_parallel": Program(cross_entropy, (logits, labels), ((None, "x"), ())),
        "take_axis_sharded": Program(lambda a, ids: jnp.take(a, ids, axis=1),
                                     (_normal(rng, 64, 1024), _labels(rng, 1024, 32)), ((None, "x"), ()), ()),
        "take_along_axis_batched": Program(lambda a, ids: jnp.take_along_axis(a, ids, axis=2),
                                           (_normal(rng, 4, 64, 512), _labels(rng, 512, 4, 64, 2)),
                                           (("x", None, "y"), ("x", None, None)), None, MESH_2D),
        "scatter_add_rows": Program(scatter_rows, (_normal(rng, 1024, 16), _labels(rng, 1024, 32),
                                                   _normal(rng, 32, 16)), (("x", None), (), ()), ("x", None)),
        "pad_then_slice": Program(lambda a: jnp.pad(a, ((2, 2), (0, 0)))[1:-3], (_normal(rng, 64, 128),),
                                  (("x", None),), ("x", None)),
        "stencil_pad_three_slices": Program(stencil, (_normal(rng, 256, 128),), (("x", None),), ("x", None)),
        "stencil_then_max_pool": Program(stencil_pool, (_normal(rng, 256, 128),), (("x", None),), ("x", None)),
        "cumsum_sharded_axis": Program(lambda a: jnp.cumsum(a, axis=0), (_normal(rng, 256, 1024),),
                                       (("x", None),)),
        "batched_matmul_batch_and_contracting": Program(
            lambda a, b: jnp.einsum("bij,bjk->bik", a, b), (_normal(rng, 8, 64, 128), _normal(rng, 8, 128, 64)),
            (("x", None, "y"), ("x", "y", None)), None, MESH_2D),
        "reshard_yx_to_merged": Program(lambda a: a + 1.0, (_normal(rng, 64, 64),), (("y", "x"),),
                                        (("x", "y"), None), MESH_2D),
        "uneven_constraint_swap_add": Program(constraint_swap, (_normal(rng, 7, 5), _normal(rng, 7, 5)),
                                              ((), ()), None, ((2,), ("x",))),
        "dynamic_slice_traced_start": Program(dynamic_rows, (_normal(rng, 128, 64), np.int32(40)),
                                              (("x", None), ()), ()),
    }


# --- random programs ------------------------------------------------------------------------------

ROWS, COLUMNS = 64, 128
_SPECS_1D = ((), ("x", None), (None, "x"))
_SPECS_2D = ((), ("x", None), (None, "y"), ("x", "y"), ("y", "x"), (("x", "y"), None), (None, ("x", "y")))


def _block_names():
    return ("matmul", "layer_norm", "softmax", "cumsum", "shift", "take_along", "attention", "transpose_back",
            "row_sum")


def _more_block_names():
    """The second random set's blocks: the first set's and row gathers, reversed scans, padded
    windows and a causal attention."""
    return _block_names() + ("take_rows", "reverse_cummax", "pad_pool", "causal_attention")


def _apply_block(lib, name: str, x, weight, labels):
    jnp, nn = lib.jnp, lib.nn
    if name == "take_rows":
        return jnp.take(x, labels % ROWS, axis=0) * 0.5 + x
    if name == "reverse_cummax":
        return lib.lax.cummax(x, axis=0, reverse=True) - x
    if name == "pad_pool":
        padded = jnp.pad(x, ((1, 1), (0, 0)))
        return lib.lax.reduce_window(padded, -np.inf, lib.lax.max, (3, 1), (1, 1), "VALID")
    if name == "causal_attention":
        scores = (x @ weight) @ x.T * 0.05
        causal = jnp.arange(ROWS)[:, None] >= jnp.arange(ROWS)[None, :]
        return nn.softmax(jnp.where(causal, scores, -1e9), axis=-1) @ x
    if name == "matmul":
        return jnp.tanh(x @ weight)
    if name == "layer_norm":
        mean = jnp.mean(x, axis=-1, keepdims=True)
        centred = x - mean
        return centred / jnp.sqrt(jnp.mean(centred * centred, axis=-1, keepdims=True) + 1e-5)
    if name == "softmax":
        return nn.softmax(x, axis=-1)
    if name == "cumsum":
        return jnp.cumsum(x, axis=0) * 0.01
    if name == "shift":
        return jnp.pad(x, ((1, 1), (0, 0)))[2:] - x
    if name == "take_along":
        picked = jnp.take_along_axis(x, labels[:, None], axis=1)
        return x - picked
    if name == "attention":
        scores = nn.softmax((x @ weight) @ x.T * 0.05, axis=-1)
        return scores @ x
    if name == "transpose_back":
        return (x.T * 2.0).T
    return x + jnp.sum(x, axis=0, keepdims=True) * 0.01


def random_programs(lib, count: int = 24, seed: int = 33, names=None, prefix: str = "random") -> dict[str, Program]:
    """``count`` programs of 2-4 blocks (of ``names``, the first set's by default) on a [64, 128]
    activation, a [128, 128] weight and [64] labels, on an 8-device mesh of one or two axes, with
    random argument and output specs."""
    rng = np.random.default_rng(seed)
    names = names or _block_names()
    found = {}
    for number in range(count):
        two_axes = bool(rng.integers(2))
        mesh = MESH_2D if two_axes else ((8,), ("x",))
        specs = _SPECS_2D if two_axes else _SPECS_1D
        blocks = tuple(names[index] for index in rng.choice(len(names), int(rng.integers(2, 5)), replace=False))
        in_specs = (specs[rng.integers(len(specs))], specs[rng.integers(len(specs))], ())
        out_choice = int(rng.integers(len(specs) + 1))
        out_specs = None if out_choice == len(specs) else specs[out_choice]

        def function(x, weight, labels, blocks=blocks):
            for block in blocks:
                x = _apply_block(lib, block, x, weight, labels)
            return x

        arguments = (_normal(rng, ROWS, COLUMNS), _normal(rng, COLUMNS, COLUMNS) * 0.1, _labels(rng, COLUMNS, ROWS))
        found[f"{prefix}_{number:02d}_{'+'.join(blocks)}"] = Program(function, arguments, in_specs, out_specs, mesh)
    return found


def programs(lib) -> dict[str, dict[str, Program]]:
    return {"built": built_programs(lib), "unseen": unseen_programs(lib), "random": random_programs(lib),
            "random2": random_programs(lib, 16, 34, _more_block_names(), "more")}
