"""The collectives of meshjit.lax inside shard_map, each compared with a numpy model of the
per-device values, and the check_vma analysis (which outputs may be replicated)."""

from __future__ import annotations

import numpy as np
import pytest

import meshjit as jax
from meshjit import lax
from meshjit.ir import interpret
from meshjit.shard_map_api import shard_map
from meshjit.sharding import AxisType
from meshjit.sharding import PartitionSpec as P

MESH = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
X = np.arange(8 * 8 * 3, dtype=np.float32).reshape(8, 8, 3)


def _blocks(array, parts: int, axis: int = 0):
    return np.split(array, parts, axis=axis)


def _run(body, in_specs, out_specs, *args, **options):
    return np.asarray(shard_map(body, mesh=MESH, in_specs=in_specs, out_specs=out_specs, **options)(*args))


# --- reductions ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("collective", "combine"), [
    (lax.psum, np.sum), (lax.pmax, np.max), (lax.pmin, np.min), (lax.pmean, np.mean)])
def test_reductions_over_one_axis_and_a_tuple(collective, combine):
    blocks = _blocks(X, 2)
    expected = combine(np.stack(blocks), axis=0)
    np.testing.assert_allclose(_run(lambda v: collective(v, "x"), P("x"), P(), X), expected, rtol=1e-6)
    grid = [np.split(block, 4, axis=1) for block in blocks]
    expected = combine(np.stack([part for row in grid for part in row]), axis=0)
    result = _run(lambda v: collective(v, ("y", "x")), P("x", "y"), P(), X)
    np.testing.assert_allclose(result, expected, rtol=1e-6)


def test_reductions_of_bools_and_integers_follow_jax_dtypes():
    numbers = np.arange(8, dtype=np.int32)
    counted = _run(lambda v: lax.psum(v > 2, "x"), P("x"), P(), numbers)
    assert counted.dtype == np.int32 and counted.tolist() == [1, 1, 1, 2]
    anything = _run(lambda v: lax.pmax(v > 6, "x"), P("x"), P(), numbers)
    assert anything.dtype == np.bool_ and anything.tolist() == [False, False, False, True]
    mean = _run(lambda v: lax.pmean(v, "x"), P("x"), P(), numbers)
    assert mean.dtype == np.float32 and mean.tolist() == [2.0, 3.0, 4.0, 5.0]


def test_psum_of_a_replicated_value_counts_every_device():
    assert _run(lambda v: lax.psum(1, ("x", "y")), P("x"), P(), X).item() == 8
    np.testing.assert_allclose(_run(lambda v: lax.psum(v, "y"), P("x"), P("x"), X), 4 * X)


# --- gathers, scatters, exchanges ------------------------------------------------------------------


def test_all_gather_tiled_and_stacked():
    tiled = _run(lambda v: lax.all_gather(v, "y", axis=1, tiled=True), P(None, "y"), P(None, "y"), X)
    np.testing.assert_array_equal(tiled, np.tile(X, (1, 4, 1)))
    stacked = _run(lambda v: lax.all_gather(v, "y", axis=1), P("y"), P("y"), X)
    expected = np.concatenate([np.stack(_blocks(X, 4), axis=1)] * 4, axis=0)
    np.testing.assert_array_equal(stacked, expected)


def test_all_gather_over_two_axes_orders_by_the_listed_axes():
    result = _run(lambda v: lax.all_gather(v, ("y", "x"), tiled=True), P(("x", "y")), P(("x", "y")), X)
    blocks = _blocks(X, 8)
    order = [blocks[x_index * 4 + y_index] for y_index in range(4) for x_index in range(2)]
    np.testing.assert_array_equal(result[:8], np.concatenate(order))


def test_psum_scatter_stacked_removes_the_scattered_dim():
    result = _run(lambda v: lax.psum_scatter(v[:, :4], "y", scatter_dimension=1), P("y"), P("y"), X)
    total = np.sum(np.stack(_blocks(X, 4))[:, :, :4], axis=0)
    expected = np.concatenate([total[:, device] for device in range(4)])
    np.testing.assert_allclose(result, expected)


def test_all_to_all_stacked_moves_the_mapped_axis():
    result = _run(lambda v: lax.all_to_all(v[:, :4], "y", 1, 0), P("y"), P("y"), X)
    blocks = [block[:, :4] for block in _blocks(X, 4)]
    received = [np.stack([blocks[sender][:, device] for sender in range(4)]) for device in range(4)]
    np.testing.assert_array_equal(result, np.concatenate(received))


def test_ppermute_devices_that_receive_nothing_get_zeros():
    result = _run(lambda v: lax.ppermute(v, "y", [(0, 2), (1, 0)]), P("y"), P("y"), X)
    blocks = _blocks(X, 4)
    zeros = np.zeros_like(blocks[0])
    np.testing.assert_array_equal(result, np.concatenate([blocks[1], zeros, blocks[0], zeros]))


def test_ppermute_accepts_negative_indices():
    result = _run(lambda v: lax.ppermute(v, "y", [(0, -1)]), P("y"), P("y"), X)
    np.testing.assert_array_equal(result[6:], _blocks(X, 4)[0])


def test_axis_index_and_axis_size():
    grid = _run(lambda: lax.axis_index(("y", "x"))[None, None], (), P("y", "x"))
    np.testing.assert_array_equal(grid, np.arange(8).reshape(4, 2))
    assert grid.dtype == np.int32
    sizes = _run(lambda: np.int32(lax.axis_size("y") * 10 + lax.axis_size(("x", "y"))), (), P())
    assert sizes.item() == 48


def test_collectives_map_over_pytrees():
    def body(pair):
        return lax.psum(pair, "x")

    result = shard_map(body, mesh=MESH, in_specs=P("x"), out_specs=P())({"a": X, "b": (X[:, :1],)})
    np.testing.assert_allclose(np.asarray(result["a"]), X[:4] + X[4:])
    np.testing.assert_allclose(np.asarray(result["b"][0]), (X[:4] + X[4:])[:, :1])


# --- check_vma -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("body", "in_spec", "out_spec", "axis"), [
    (lambda v: v * 2, P("x"), P(), "x"),
    (lambda v: lax.axis_index("y") + v, P(), P(), "y"),
    (lambda v: lax.all_gather(v, "x", tiled=True), P("x"), P(), "x"),
    (lambda v: lax.ppermute(lax.psum(v, "x"), "x", [(0, 1), (1, 0)]), P("x"), P(), "x"),
    (lambda v: lax.psum_scatter(v, "x", tiled=True), P(), P(), "x"),
    (lambda v: lax.all_to_all(v, "x", 0, 1, tiled=True), P(), P(), "x"),
    (lambda v: lax.psum(v, "x"), P("x", "y"), P(None, None), "y"),
])
def test_check_vma_rejects_replicating_a_varying_output(body, in_spec, out_spec, axis):
    mapped = shard_map(body, mesh=MESH, in_specs=in_spec, out_specs=out_spec)
    with pytest.raises(ValueError, match=rf"(?s)function '<lambda>'.*and not {{{axis}}}, but it was inferred"):
        mapped(X)


def test_check_vma_names_the_output_in_a_pytree():
    mapped = shard_map(lambda v: {"ok": lax.psum(v, "x"), "bad": v}, mesh=MESH, in_specs=P("x"),
                       out_specs={"ok": P(), "bad": P()})
    with pytest.raises(ValueError, match=r"out_specs\['bad'\] is P\(\) which implies"):
        mapped(X)


def test_check_vma_accepts_invariant_outputs():
    np.testing.assert_allclose(_run(lambda v: lax.pmax(v, ("x", "y")) + 1, P("x", "y"), P(), X),
                               np.max(np.stack([b for r in _blocks(X, 2) for b in _blocks(r, 4, 1)]), 0) + 1)
    gathered = _run(lambda v: lax.all_gather(v, "x", tiled=True, to="invarying"), P("x"), P(), X)
    np.testing.assert_array_equal(gathered, X)


def test_check_vma_false_takes_the_first_shard_everywhere():
    def body(v):
        return v + lax.axis_index("x")

    mapped = shard_map(body, mesh=MESH, in_specs=P(None, "y"), out_specs=P(None, "y"), check_vma=False)
    expected = X  # the x-coordinate-0 devices add 0
    np.testing.assert_array_equal(np.asarray(mapped(X)), expected)
    lowered = jax.jit(mapped).lower(X)
    np.testing.assert_array_equal(interpret(lowered.module, X)[0], expected)
    np.testing.assert_array_equal(np.asarray(lowered.compile().run_reference(X)), expected)


def test_typeof_manual_axis_type_names_the_varying_axes(restore_runtime_state):
    # JAX 0.10: jax.typeof(x).manual_axis_type (also .mat) holds the varying manual axes
    mesh = jax.make_mesh((4, 2), ("i", "j"))
    jax.set_mesh(mesh)
    seen = {}

    @jax.shard_map(in_specs=P("i", "j"), out_specs=P("i"))
    def f(x):
        seen["x"] = jax.typeof(x).manual_axis_type
        y = lax.psum(x, "j")
        seen["y"] = jax.typeof(y).mat
        return y

    f(jax.device_put(np.arange(32.0, dtype=np.float32).reshape(8, 4), P("i", "j")))
    assert seen["x"].varying == {"i", "j"} and seen["y"].varying == {"i"}
    assert repr(seen["y"]) == "ManualAxisType(varying=frozenset({'i'}), unreduced=frozenset(), reduced=frozenset())"
    assert jax.typeof(np.ones(3)).manual_axis_type.varying == frozenset()


def test_an_eager_shard_map_body_prints_its_values_per_device(capsys, restore_runtime_state):
    # as JAX's eager shard_map: every device's block, with the device and its mesh coordinates
    mesh = jax.make_mesh((2,), ("i",))
    jax.set_mesh(mesh)
    offset = np.array([10.0, 20.0, 30.0], np.float32)  # a closed-over constant

    @jax.shard_map(in_specs=P("i"), out_specs=P())
    def f(x):
        print(x)
        y = lax.psum(x + offset, "i")
        print(y)
        return y

    f(jax.device_put(np.arange(6.0, dtype=np.float32), P("i")))
    assert capsys.readouterr().out == (
        "On cpu:0 at mesh coordinates (i,) = (0,):\n[0. 1. 2.]\n\nOn cpu:1 at mesh coordinates (i,) = (1,):\n"
        "[3. 4. 5.]\n\nOn cpu:0 at mesh coordinates (i,) = (0,):\n[23. 45. 67.]\n\n"
        "On cpu:1 at mesh coordinates (i,) = (1,):\n[23. 45. 67.]\n\n")


def test_eager_printing_on_two_axes_and_under_jit(capsys, restore_runtime_state):
    mesh = jax.make_mesh((2, 2), ("i", "j"))
    jax.set_mesh(mesh)

    @jax.shard_map(in_specs=P("i", "j"), out_specs=P("i", "j"))
    def f(x):
        print(x.sum())
        return x

    x = jax.device_put(np.arange(8.0, dtype=np.float32).reshape(2, 4), P("i", "j"))
    f(x)
    out = capsys.readouterr().out
    assert "On cpu:1 at mesh coordinates (i, j,) = (0, 1):\n5.0\n" in out
    assert "On cpu:3 at mesh coordinates (i, j,) = (1, 1):\n13.0\n" in out
    jax.jit(f)(x)
    assert capsys.readouterr().out == "JitTracer(float32[]{V:(i,j)})\n"
