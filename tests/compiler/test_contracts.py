"""Collective contracts: canonical sharded programs must communicate exactly this much.

Each contract pins the kinds, counts, mesh axes and bytes of the collectives in the compiled
per-device program, and checks the numbers against numpy (issue 6's table; 8 devices, f32).
"""

from __future__ import annotations

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit import nn
from meshjit.jit_api import jit
from meshjit.constraint_api import with_sharding_constraint
from meshjit.sharding import Mesh, NamedSharding
from meshjit.sharding import PartitionSpec as P
from meshjit.testing import assert_collectives

T, D, F = 16, 32, 256
H, DH = 8, 4


def _mesh(shape, names):
    return Mesh(np.array(jax.devices()[: int(np.prod(shape))]).reshape(shape), names)


def _kinds(compiled):
    return [(record.kind, record.axes, record.bytes, record.shape) for record in compiled.collectives()]


def _random(*shape, seed=0):
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape).astype(np.float32)


def _gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def _mlp(x, w1, w2):
    return nn.gelu(x @ w1) @ w2


def test_megatron_mlp_one_all_reduce():
    mesh = _mesh((8,), ("model",))
    x, w1, w2 = _random(T, D), _random(D, F), _random(F, D)
    shardings = (NamedSharding(mesh, P()), NamedSharding(mesh, P(None, "model")), NamedSharding(mesh, P("model", None)))
    f = jit(_mlp, in_shardings=shardings)
    compiled = f.lower(x, w1, w2).compile()
    assert _kinds(compiled) == [("all_reduce", ("model",), 2 * 7 * T * D * 4 // 8, (T, D))]
    np.testing.assert_allclose(np.asarray(f(x, w1, w2)), _gelu(x @ w1) @ w2, rtol=1e-4, atol=1e-4)


def test_megatron_mlp_sequence_parallel():
    mesh = _mesh((8,), ("model",))
    x, w1, w2 = _random(T, D), _random(D, F), _random(F, D)
    row = NamedSharding(mesh, P("model", None))
    f = jit(_mlp, in_shardings=(row, NamedSharding(mesh, P(None, "model")), row), out_shardings=row)
    compiled = f.lower(x, w1, w2).compile()
    kinds = _kinds(compiled)
    assert kinds == [("all_gather", ("model",), 7 * T * D * 4 // 8, (T // 8, D)),
                     ("reduce_scatter", ("model",), 7 * T * D * 4 // 8, (T, D))]
    np.testing.assert_allclose(np.asarray(f(x, w1, w2)), _gelu(x @ w1) @ w2, rtol=1e-4, atol=1e-4)


def test_data_and_model_parallel_mlp():
    mesh = _mesh((2, 4), ("data", "model"))
    x, w1, w2 = _random(T, D), _random(D, F), _random(F, D)
    shardings = (NamedSharding(mesh, P("data", None)), NamedSharding(mesh, P(None, "model")),
                 NamedSharding(mesh, P("model", None)))
    f = jit(_mlp, in_shardings=shardings)
    compiled = f.lower(x, w1, w2).compile()
    assert _kinds(compiled) == [("all_reduce", ("model",), 2 * 3 * (T // 2) * D * 4 // 4, (T // 2, D))]
    np.testing.assert_allclose(np.asarray(f(x, w1, w2)), _gelu(x @ w1) @ w2, rtol=1e-4, atol=1e-4)


def _attention(x, wq, wk, wv, wo):
    q = jnp.einsum("td,dhk->thk", x, wq)
    k = jnp.einsum("td,dhk->thk", x, wk)
    v = jnp.einsum("td,dhk->thk", x, wv)
    scores = jnp.einsum("thk,shk->hts", q, k) / np.sqrt(DH)
    weights = nn.softmax(scores, axis=-1)
    out = jnp.einsum("hts,shk->thk", weights, v)
    return jnp.einsum("thk,hkd->td", out, wo)


def _attention_numpy(x, wq, wk, wv, wo):
    q, k, v = (np.einsum("td,dhk->thk", x, w) for w in (wq, wk, wv))
    scores = np.einsum("thk,shk->hts", q, k) / np.sqrt(DH)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    return np.einsum("thk,hkd->td", np.einsum("hts,shk->thk", weights, v), wo)


def test_attention_heads_sharded():
    mesh = _mesh((8,), ("model",))
    x = _random(T, D)
    wq, wk, wv = (_random(D, H, DH, seed=i) for i in range(3))
    wo = _random(H, DH, D, seed=3)
    heads = NamedSharding(mesh, P(None, "model", None))
    f = jit(_attention, in_shardings=(NamedSharding(mesh, P()), heads, heads, heads, NamedSharding(mesh, P("model"))))
    compiled = f.lower(x, wq, wk, wv, wo).compile()
    assert _kinds(compiled) == [("all_reduce", ("model",), 2 * 7 * T * D * 4 // 8, (T, D))]
    np.testing.assert_allclose(np.asarray(f(x, wq, wk, wv, wo)), _attention_numpy(x, wq, wk, wv, wo), rtol=1e-4, atol=1e-3)


def test_reshard_dim0_to_dim1_is_one_all_to_all():
    mesh = _mesh((8,), ("x",))
    f = jit(lambda a: a, in_shardings=NamedSharding(mesh, P("x", None)), out_shardings=NamedSharding(mesh, P(None, "x")))
    a = np.arange(1024 * 1024, dtype=np.float32).reshape(1024, 1024)
    compiled = f.lower(a).compile()
    assert _kinds(compiled) == [("all_to_all", ("x",), 7 * 128 * 1024 * 4 // 8, (128, 1024))]
    np.testing.assert_array_equal(np.asarray(f(a)), a)


def test_sum_over_sharded_dim_is_one_all_reduce():
    mesh = _mesh((8,), ("x",))
    f = jit(lambda a: jnp.sum(a, axis=0), in_shardings=NamedSharding(mesh, P("x", None)))
    a = _random(1024, 256)
    compiled = f.lower(a).compile()
    assert _kinds(compiled) == [("all_reduce", ("x",), 2 * 7 * 256 * 4 // 8, (256,))]
    np.testing.assert_allclose(np.asarray(f(a)), a.sum(0), rtol=1e-4, atol=1e-3)


def test_partial_sums_of_a_matmul_flow_through_a_sum():
    # x @ w contracts over the sharded k: each device holds a partial f32[64,4] product. The sum
    # over rows is linear, so it runs on the partial products and only the f32[4] sums are
    # all-reduced (28 bytes per device instead of the product's 1,792).
    mesh = _mesh((8,), ("x",))
    x, w = _random(64, 64), _random(64, 4)
    f = jit(lambda x, w: jnp.sum(x @ w, axis=0),
            in_shardings=(NamedSharding(mesh, P(None, "x")), NamedSharding(mesh, P("x", None))))
    records = assert_collectives(f, x, w, expect=[("all_reduce", "x")], max_bytes=28)
    assert [(record.kind, record.bytes, record.shape) for record in records] == [("all_reduce", 2 * 7 * 4 * 4 // 8, (4,))]
    np.testing.assert_allclose(np.asarray(f(x, w)), (x @ w).sum(0), rtol=1e-4, atol=1e-3)


def test_partial_sums_reduce_scatter_into_a_sharded_consumer():
    # The same sum wanted split over x: the partial f32[32] sums are reduce-scattered (112 bytes
    # per device), not the f32[64,32] product (7,168).
    mesh = _mesh((8,), ("x",))
    x, w = _random(64, 64), _random(64, 32)
    f = jit(lambda x, w: jnp.sum(x @ w, axis=0),
            in_shardings=(NamedSharding(mesh, P(None, "x")), NamedSharding(mesh, P("x", None))),
            out_shardings=NamedSharding(mesh, P("x")))
    compiled = f.lower(x, w).compile()
    assert _kinds(compiled) == [("reduce_scatter", ("x",), 7 * 32 * 4 // 8, (32,))]
    np.testing.assert_allclose(np.asarray(f(x, w)), (x @ w).sum(0), rtol=1e-4, atol=1e-3)


def test_equal_bytes_go_to_the_plan_with_fewer_messages():
    # Gathering x (f32[4,8], half of it remote) and reducing the partial f32[4,4] products both
    # send 64 bytes per device on 2 devices; an all-gather is one message on the ring, an
    # all-reduce two, so the alpha-beta time picks the gather.
    mesh = _mesh((2,), ("x",))
    x, w = _random(4, 8), _random(8, 4)
    f = jit(lambda x, w: x @ w, in_shardings=(NamedSharding(mesh, P(None, "x")), NamedSharding(mesh, P())))
    assert _kinds(f.lower(x, w).compile()) == [("all_gather", ("x",), 64, (4, 4))]
    np.testing.assert_allclose(np.asarray(f(x, w)), x @ w, rtol=1e-5, atol=1e-5)


def test_matmul_gathers_the_smaller_operand():
    mesh = _mesh((8,), ("x",))
    x, w = _random(T * 8, D), _random(D, 64)
    f = jit(lambda x, w: x @ w, in_shardings=(NamedSharding(mesh, P("x", None)), NamedSharding(mesh, P(None, "x"))),
            out_shardings=NamedSharding(mesh, P("x", None)))
    compiled = f.lower(x, w).compile()
    assert _kinds(compiled) == [("all_gather", ("x",), 7 * D * 64 * 4 // 8, (D, 64 // 8))]
    np.testing.assert_allclose(np.asarray(f(x, w)), x @ w, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("strategy", ["shardy", "gspmd"])
def test_strategies_agree_on_megatron(strategy):
    mesh = _mesh((8,), ("model",))
    x, w1, w2 = _random(T, D), _random(D, F), _random(F, D)
    shardings = (NamedSharding(mesh, P()), NamedSharding(mesh, P(None, "model")), NamedSharding(mesh, P("model", None)))
    f = jit(_mlp, in_shardings=shardings, propagation=strategy)
    assert [record.kind for record in f.lower(x, w1, w2).compile().collectives()] == ["all_reduce"]


def test_constraint_reshards_inside():
    mesh = _mesh((2, 4), ("x", "y"))

    def f(a):
        b = with_sharding_constraint(jnp.exp(a), NamedSharding(mesh, P("y", "x")))
        return jnp.sum(b, axis=0)

    a = _random(8, 8)
    np.testing.assert_allclose(np.asarray(jit(f)(a)), np.exp(a).sum(0), rtol=1e-5)


def test_full_rematerialization_warns_or_errors():
    from meshjit.compiler.partitioning.partition import FullRematerializationError, FullRematerializationWarning

    # a dim moving from an axis to a smaller one is gathered whole, then sliced (from "x" to the
    # larger "y" each device's tile lies in its shard: one permute of tiles, no rematerialisation)
    mesh = _mesh((2, 4), ("x", "y"))
    f = jit(lambda a: a + 1, in_shardings=NamedSharding(mesh, P("y")), out_shardings=NamedSharding(mesh, P("x")))
    a = np.arange(8, dtype=np.float32)
    with pytest.warns(FullRematerializationWarning, match="test_contracts.py"):
        np.testing.assert_array_equal(np.asarray(f(a)), a + 1)
    jax.config.update("full_remat", "error")
    try:
        g = jit(lambda a: a * 2, in_shardings=NamedSharding(mesh, P("y")), out_shardings=NamedSharding(mesh, P("x")))
        with pytest.raises(FullRematerializationError, match="full_remat"):
            g(a)
    finally:
        jax.config.update("full_remat", "warn")


@pytest.mark.parametrize("shape", [(8, 8), (16, 4), (4, 24)])
def test_dims_trading_axes_gather_one_and_all_to_all_the_other(shape):
    # [x, y] -> [y, x] on a 2 x 4 mesh: gathering both dims would hold the whole array on every
    # device; gathering x (the cheaper) makes room on dim 0 for y's all_to_all, and dim 1 is then
    # sliced over x. Each device holds at most a [rows, cols / 4] block on the way.
    import warnings

    mesh = _mesh((2, 4), ("x", "y"))
    a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)

    def f(a):
        b = with_sharding_constraint(a * 2, NamedSharding(mesh, P("x", "y")))
        return with_sharding_constraint(b + 1, NamedSharding(mesh, P("y", "x"))) * 3

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no full rematerialisation
        compiled = jit(f).lower(a).compile()
        np.testing.assert_array_equal(np.asarray(compiled(a)), (a * 2 + 1) * 3)
    kinds = [(kind, axes) for kind, axes, _, _ in _kinds(compiled)]
    assert kinds[:2] == [("all_gather", ("x",)), ("all_to_all", ("y",))], kinds
    assert "all_gather" not in [kind for kind, _ in kinds[2:]], kinds


# --- halo exchange and the vocab-parallel lookup (issue 20) ---------------------------------------
# XLA's bytes on the same programs (JAX 0.10.2, 8 CPU devices, the ring model of compiler/cost.py):
# the conv 4096 (two collective-permutes of one row), the roll 1024 (one collective-permute), the
# lookup 7168 (one all-reduce of the output); docs/partitioning.md lists them.


def test_conv_3x3_same_with_h_sharded_moves_only_halo_rows():
    mesh = _mesh((8,), ("x",))
    x, w = _random(2, 64, 32, 8), _random(3, 3, 8, 16)
    rows = NamedSharding(mesh, P(None, "x", None, None))
    f = jit(lambda x, w: jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")),
            in_shardings=(rows, NamedSharding(mesh, P())), out_shardings=rows)
    compiled = f.lower(x, w).compile()
    halo = 2 * 1 * 32 * 8 * 4
    assert _kinds(compiled) == [("collective_permute", ("x",), halo, (2, 1, 32, 8))] * 2
    assert sum(record.bytes for record in compiled.collectives()) <= 4096
    expected = np.asarray(jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")))
    np.testing.assert_allclose(np.asarray(f(x, w)), expected, rtol=1e-5, atol=1e-5)


def test_roll_by_one_moves_one_row_per_device():
    mesh = _mesh((8,), ("x",))
    a = _random(64, 256)
    rows = NamedSharding(mesh, P("x", None))
    f = jit(lambda a: jnp.roll(a, 1, axis=0), in_shardings=rows, out_shardings=rows)
    compiled = f.lower(a).compile()
    assert _kinds(compiled) == [("collective_permute", ("x",), 256 * 4, (1, 256))]
    np.testing.assert_array_equal(np.asarray(f(a)), np.roll(a, 1, axis=0))


def test_vocab_parallel_lookup_is_one_all_reduce_of_the_output():
    mesh = _mesh((8,), ("x",))
    table = _random(1024, 64)
    ids = np.random.default_rng(4).integers(0, 1024, 16).astype(np.int32)
    f = jit(lambda table, ids: table[ids], in_shardings=(NamedSharding(mesh, P("x", None)), NamedSharding(mesh, P())),
            out_shardings=NamedSharding(mesh, P()))
    compiled = f.lower(table, ids).compile()
    assert _kinds(compiled) == [("all_reduce", ("x",), 2 * 7 * 16 * 64 * 4 // 8, (16, 64))]
    assert "each device takes the indices in its rows" in compiled.explain()
    np.testing.assert_array_equal(np.asarray(f(table, ids)), table[ids])


def test_lookup_with_ids_sharded_and_table_replicated_moves_nothing():
    mesh = _mesh((8,), ("x",))
    table = _random(1024, 64)
    ids = np.random.default_rng(5).integers(0, 1024, 64).astype(np.int32)
    by_batch = NamedSharding(mesh, P("x"))
    f = jit(lambda table, ids: table[ids], in_shardings=(NamedSharding(mesh, P()), by_batch),
            out_shardings=NamedSharding(mesh, P("x", None)))
    assert _kinds(f.lower(table, ids).compile()) == []
    np.testing.assert_array_equal(np.asarray(f(table, ids)), table[ids])


def test_scatter_add_into_row_sharded_table_applies_owned_updates():
    # the embedding gradient: each device adds the updates that land in its rows; the ids and
    # updates are replicated, so nothing moves
    mesh = _mesh((8,), ("x",))
    table, updates = _random(1024, 64), _random(16, 64, seed=1)
    ids = np.random.default_rng(6).integers(0, 1024, 16).astype(np.int32)
    rows = NamedSharding(mesh, P("x", None))
    f = jit(lambda table, ids, updates: table.at[ids].add(updates),
            in_shardings=(rows, NamedSharding(mesh, P()), NamedSharding(mesh, P())), out_shardings=rows)
    assert _kinds(f.lower(table, ids, updates).compile()) == []
    expected = table.copy()
    np.add.at(expected, ids, updates)
    np.testing.assert_allclose(np.asarray(f(table, ids, updates)), expected, rtol=1e-6)


def test_conv_gradients_with_h_sharded_move_halos_and_one_all_reduce_of_the_kernel_gradient():
    # the input gradient is a convolution (halo rows of the cotangent); the kernel gradient
    # convolves each device's cotangent rows with the input under them and sums the partial
    # kernel gradients: XLA sends 2036 bytes per device here
    mesh = _mesh((8,), ("x",))
    x, w = _random(2, 32, 8, 3), _random(3, 3, 3, 4)
    rows = NamedSharding(mesh, P(None, "x", None, None))
    replicated = NamedSharding(mesh, P())

    def loss(x, w):
        return (jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")) ** 2).sum()

    f = jit(jax.grad(loss, argnums=(0, 1)), in_shardings=(rows, replicated), out_shardings=(rows, replicated))
    compiled = f.lower(x, w).compile()
    assert sorted(_kinds(compiled)) == sorted([("collective_permute", ("x",), 192, (2, 1, 8, 3))] * 2
                                              + [("collective_permute", ("x",), 256, (2, 1, 8, 4))] * 2
                                              + [("all_reduce", ("x",), 2 * 7 * 108 * 4 // 8, (3, 3, 3, 4))])
    assert sum(record.bytes for record in compiled.collectives()) <= 2036
    got_x, got_w = f(x, w)
    want_x, want_w = jax.grad(loss, argnums=(0, 1))(x, w)
    np.testing.assert_allclose(np.asarray(got_x), np.asarray(want_x), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(got_w), np.asarray(want_w), rtol=1e-4, atol=1e-3)


def test_a_contraction_split_on_both_operands_is_not_repeated_on_every_device():
    # The heads-parallel output projection of attention: the heads are split on both operands.
    # Gathering both (7/8 of (128*64 + 64*64) floats) sends fewer bytes than all-reducing the
    # f32[128,64] partial sums (2 * 7/8 of 128*64), but repeats the whole contraction on every
    # device: 8 times the arithmetic, charged at FLOPS_PER_BYTE_SENT, outweighs the bytes saved.
    mesh = _mesh((8,), ("x",))
    out, wo = _random(128, 8, 8), _random(8, 8, 64)
    f = jit(lambda out, wo: jnp.einsum("thk,hkd->td", out, wo),
            in_shardings=(NamedSharding(mesh, P(None, "x", None)), NamedSharding(mesh, P("x", None, None))))
    assert _kinds(f.lower(out, wo).compile()) == [("all_reduce", ("x",), 2 * 7 * 128 * 64 * 4 // 8, (128, 64))]
    np.testing.assert_allclose(np.asarray(f(out, wo)), np.einsum("thk,hkd->td", out, wo), rtol=1e-4, atol=1e-4)
