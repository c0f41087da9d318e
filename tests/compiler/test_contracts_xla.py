"""Collective contracts for programs where meshjit once moved 4-5x XLA's bytes.

Each program is pinned to its exact collectives; XLA's bytes for the same program, shardings
and 8 CPU devices (JAX 0.10.2, ``jax.jit(f).lower(...).compile().as_text()``, counted with the
same ring model) are in docs/partitioning.md and in ``XLA_BYTES`` below, and meshjit must not
exceed them.
"""

from __future__ import annotations

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit.compiler.propagation.propagate_shardings import analyze_shardings
from meshjit.compiler.rules import partition_rules
from meshjit.jit_api import jit
from meshjit.constraint_api import with_sharding_constraint
from meshjit.sharding import Mesh, NamedSharding
from meshjit.sharding import PartitionSpec as P

# bytes each device sends in XLA's compiled program (ring model, as Compiled.collectives())
XLA_BYTES = {"heads": 3584, "moe": 5376, "embedding": 3584}


def _mesh():
    return Mesh(np.array(jax.devices()[:8]), ("x",))


def _sharding(mesh, *spec):
    return NamedSharding(mesh, P(*spec))


def _random(*shape, seed=0):
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape).astype(np.float32)


def _records(compiled):
    return [(record.kind, record.axes, record.bytes, record.shape) for record in compiled.collectives()]


# --- a reshape into fewer heads than devices, then a contraction over (heads, head_dim) --------

T, HEADS, HEAD_DIM, E = 16, 4, 8, 32


def _heads(x, w):
    h = x.reshape(T, HEADS, HEAD_DIM)
    return jnp.einsum("thd,hde->te", h, w.reshape(HEADS, HEAD_DIM, E))


def test_reshape_to_fewer_heads_than_devices_splits_the_axis_and_reduce_scatters_once():
    # "x"=8 over 4 heads: heads take "x":(1)4 and head_dim "x":(4)2, so the reshapes move
    # nothing; the contraction over both leaves sums pending over all of "x", reduce-scattered
    # into the row-split output.
    mesh = _mesh()
    x, w = _random(T, HEADS * HEAD_DIM), _random(HEADS * HEAD_DIM, E)
    f = jit(_heads, in_shardings=(_sharding(mesh, None, "x"), _sharding(mesh, "x", None)),
            out_shardings=_sharding(mesh, "x", None))
    compiled = f.lower(x, w).compile()
    assert _records(compiled) == [("reduce_scatter", ("x",), 7 * T * E * 4 // 8, (T, E))]
    assert sum(record.bytes for record in compiled.collectives()) <= XLA_BYTES["heads"]
    propagated = compiled.program.propagated.main
    reshaped = propagated.body.ops[0]
    assert str(reshaped.sharding_of(0)) == '<@mesh, [{}, {"x":(1)4}, {"x":(4)2}]>'
    np.testing.assert_allclose(np.asarray(f(x, w)), x @ w, rtol=1e-4, atol=1e-4)


# --- mixture-of-experts dispatch and combine -----------------------------------------------------

GROUPS, TOKENS, EXPERTS, CAPACITY, MODEL, HIDDEN = 8, 8, 8, 4, 16, 32


def _moe(x, dispatch, combine, w):
    mesh = _mesh()
    routed = jnp.einsum("gsd,gsec->egcd", x, dispatch)
    routed = with_sharding_constraint(routed, _sharding(mesh, "x", None, None, None))
    hidden = jnp.einsum("egcd,edf->egcf", routed, w)
    hidden = with_sharding_constraint(hidden, _sharding(mesh, None, "x", None, None))
    return jnp.einsum("egcf,gsec->gsf", hidden, combine)


def test_moe_dispatch_and_combine_are_one_all_to_all_each_way():
    # The dispatch einsum runs where the groups are and its result moves to the experts (one
    # all_to_all, cheaper than gathering the tokens); the expert matmul runs where the experts
    # are and its result moves back to the groups (one all_to_all, cheaper than gathering the
    # expert weights).
    mesh = _mesh()
    x = _random(GROUPS, TOKENS, MODEL)
    dispatch, combine = _random(GROUPS, TOKENS, EXPERTS, CAPACITY, seed=1), _random(GROUPS, TOKENS, EXPERTS, CAPACITY, seed=2)
    w = _random(EXPERTS, MODEL, HIDDEN, seed=3)
    groups = _sharding(mesh, "x")
    f = jit(_moe, in_shardings=(groups, groups, groups, groups), out_shardings=groups)
    compiled = f.lower(x, dispatch, combine, w).compile()
    assert _records(compiled) == [
        ("all_to_all", ("x",), 7 * MODEL * EXPERTS * CAPACITY * 4 // 8, (1, MODEL, EXPERTS, CAPACITY)),
        ("all_to_all", ("x",), 7 * GROUPS * CAPACITY * HIDDEN * 4 // 8, (1, GROUPS, CAPACITY, HIDDEN)),
    ]
    assert sum(record.bytes for record in compiled.collectives()) <= XLA_BYTES["moe"]
    routed = np.einsum("gsd,gsec->egcd", x, dispatch)
    expected = np.einsum("egcf,gsec->gsf", np.einsum("egcd,edf->egcf", routed, w), combine)
    np.testing.assert_allclose(np.asarray(f(x, dispatch, combine, w)), expected, rtol=1e-4, atol=1e-3)


# --- an embedding lookup into a table split by rows ----------------------------------------------

VOCAB, WIDTH, BATCH, LENGTH = 1024, 16, 8, 4


def _embedding_inputs():
    table = _random(VOCAB, WIDTH)
    ids = np.random.default_rng(5).integers(0, VOCAB, (BATCH, LENGTH)).astype(np.int32)
    return table, ids


def _lookup(table, ids):
    return jnp.take(table, ids, axis=0)


@pytest.mark.parametrize("out_spec", [(), ("x",)])
def test_propagation_keeps_the_tables_row_split_through_the_lookup(out_spec):
    # The rows stay split on the table (the masked lookup partition rule reads them there); the
    # lookup's own result takes nothing from the table's rows, and only the result's wanted
    # layout reaches the ids.
    mesh = _mesh()
    table, ids = _embedding_inputs()
    f = jit(_lookup, in_shardings=(_sharding(mesh, "x", None), None), out_shardings=_sharding(mesh, *out_spec))
    module = f.lower(table, ids).module
    result = analyze_shardings(module)
    func = module.main
    assert str(result.shardings[func.args[0].id]) == '<@mesh, [{"x"}, {}]>'
    gather = next(op for op in func.body.ops if op.name == "gather")
    expected = '<@mesh, [{"x"}, {}, {}]>' if out_spec else '<@mesh, [{}, {}, {}]>'
    assert str(result.shardings[gather.result.id]) == expected
    assert str(result.shardings[func.args[1].id]) == ('<@mesh, [{"x"}, {}]>' if out_spec else '<@mesh, [{}, {}]>')


@pytest.mark.skipif("gather" not in partition_rules,
                    reason="needs the masked (vocab-parallel) gather partition rule of the indexing family")
def test_row_split_embedding_lookup_moves_at_most_xlas_bytes():
    # XLA: a masked local lookup of the ids' rows each device holds, then one all-reduce of the
    # f32[8,4,16] result (3,584 bytes per device); gathering the table would send 57,344.
    mesh = _mesh()
    table, ids = _embedding_inputs()
    f = jit(_lookup, in_shardings=(_sharding(mesh, "x", None), _sharding(mesh)), out_shardings=_sharding(mesh))
    compiled = f.lower(table, ids).compile()
    assert sum(record.bytes for record in compiled.collectives()) <= XLA_BYTES["embedding"]
    np.testing.assert_array_equal(np.asarray(f(table, ids)), table[ids])
