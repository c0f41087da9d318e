"""meshjit.shard_map: the canonical programs (ring all-reduce, sharded matmuls, all_to_all
reshard, collective matmul, partial-manual), eagerly and under jit, each checked against numpy,
plus the calling conventions (static arguments, pytree prefixes, decorators, mesh context,
in_specs inference, closures) and what the traced and per-device programs look like."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import meshjit as jax
from meshjit import lax
from meshjit.ir import interpret, parse_module, print_module, renumber, verify
from meshjit.shard_map_api import shard_map
from meshjit.sharding import AxisType, NamedSharding
from meshjit.sharding import PartitionSpec as P

MODES = ("eager", "jit")


def _mesh(shape, names, kind=AxisType.Auto):
    return jax.make_mesh(shape, names, axis_types=(kind,) * len(names))


MESH = _mesh((2, 4), ("x", "y"))
RING = _mesh((8,), ("i",))


def _random(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _call(mode, function, *args):
    return function(*args) if mode == "eager" else jax.jit(function)(*args)


# --- the canonical programs -------------------------------------------------------------------


def _ring_all_reduce(block):
    """Sum over the ring by passing each block n - 1 times to the right neighbour."""
    size = lax.axis_size("i")
    right = [(index, (index + 1) % size) for index in range(size)]
    total, message = block, block
    for _ in range(size - 1):
        message = lax.ppermute(message, "i", right)
        total = total + message
    return total


@pytest.mark.parametrize("mode", MODES)
def test_ring_all_reduce_with_ppermute_equals_psum(mode):
    x = _random(8, 6)
    ring = shard_map(_ring_all_reduce, mesh=RING, in_specs=P("i"), out_specs=P("i"))
    summed = shard_map(lambda block: lax.psum(block, "i"), mesh=RING, in_specs=P("i"), out_specs=P("i"))
    expected = np.tile(x.sum(axis=0, keepdims=True), (8, 1))
    np.testing.assert_allclose(np.asarray(_call(mode, ring, x)), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(_call(mode, ring, x)), np.asarray(_call(mode, summed, x)),
                               rtol=1e-5, atol=1e-5)


@partial(shard_map, mesh=MESH, in_specs=(P("x", "y"), P("y", None)), out_specs=P("x", None))
def _matmul_psum(a_block, b_block):
    """Rows over x, the contracting dim over y: partial products summed over y."""
    return lax.psum(a_block @ b_block, "y")


@pytest.mark.parametrize("mode", MODES)
def test_sharded_matmul_with_psum(mode):
    a, b = _random(8, 16), _random(16, 12, seed=1)
    result = _call(mode, _matmul_psum, a, b)
    np.testing.assert_allclose(np.asarray(result), a @ b, rtol=1e-5, atol=1e-5)
    assert result.sharding.is_equivalent_to(NamedSharding(MESH, P("x", None)), 2)


@partial(shard_map, mesh=MESH, in_specs=(P(None, "y"), P("y", None)), out_specs=P(None, "y"))
def _matmul_reduce_scatter(a_block, b_block):
    """The contracting dim over y; each device keeps its column block of the sum."""
    return lax.psum_scatter(a_block @ b_block, "y", scatter_dimension=1, tiled=True)


@pytest.mark.parametrize("mode", MODES)
def test_reduce_scatter_matmul_with_psum_scatter(mode):
    a, b = _random(6, 16), _random(16, 8, seed=1)
    np.testing.assert_allclose(np.asarray(_call(mode, _matmul_reduce_scatter, a, b)), a @ b,
                               rtol=1e-5, atol=1e-5)


@partial(shard_map, mesh=MESH, in_specs=P("y", None), out_specs=P(None, "y"))
def _reshard_rows_to_columns(block):
    """Rows split over y become columns split over y with one all_to_all."""
    return lax.all_to_all(block, "y", 1, 0, tiled=True)


@pytest.mark.parametrize("mode", MODES)
def test_all_to_all_reshard(mode):
    x = _random(8, 12)
    result = _call(mode, _reshard_rows_to_columns, x)
    np.testing.assert_array_equal(np.asarray(result), x)
    assert result.sharding.is_equivalent_to(NamedSharding(MESH, P(None, "y")), 2)


@partial(shard_map, mesh=RING, in_specs=(P("i", None), P("i", None)), out_specs=P("i", None))
def _collective_matmul(a_block, b_block):
    """``A @ B`` with A's rows and B's rows (the contracting dim) split over the ring: B's blocks
    travel around the ring while each device multiplies the block it holds, so every ppermute
    overlaps with a local dot."""
    size, index = lax.axis_size("i"), lax.axis_index("i")
    width = b_block.shape[0]
    left = [(source, (source + 1) % size) for source in range(size)]
    result = None
    for step in range(size):
        owner = (index + size - step) % size  # whose block of B this device holds now
        columns = lax.dynamic_slice(a_block, (0, owner * width), (a_block.shape[0], width))
        product = columns @ b_block
        result = product if result is None else result + product
        if step < size - 1:
            b_block = lax.ppermute(b_block, "i", left)
    return result


@pytest.mark.parametrize("mode", MODES)
def test_collective_matmul_overlaps_ppermute_with_local_dots(mode):
    a, b = _random(16, 32), _random(32, 8, seed=1)
    np.testing.assert_allclose(np.asarray(_call(mode, _collective_matmul, a, b)), a @ b, rtol=1e-4, atol=1e-4)


def test_collective_matmul_per_device_text_interleaves_permutes_and_dots():
    text = jax.jit(_collective_matmul).lower(_random(16, 32), _random(32, 8)).compile().as_text()
    kinds = [line.split("= ")[1].split("(")[0] for line in text.splitlines()
             if "= dot_general(" in line or "= collective_permute(" in line]
    assert kinds == ["dot_general", "collective_permute"] * 7 + ["dot_general"]


@partial(shard_map, mesh=MESH, in_specs=P("x"), out_specs=P("x"), axis_names={"x"})
def _manual_over_x(block):
    """Manual over x only: the body sees x-shards whose other dims keep their global size."""
    assert block.shape == (4, 16)
    return lax.psum(block, "x") + lax.axis_index("x")


@pytest.mark.parametrize("mode", MODES)
def test_partial_manual_axis_names(mode):
    x = _random(8, 16)
    total = x[:4] + x[4:]
    result = _call(mode, _manual_over_x, x)
    np.testing.assert_allclose(np.asarray(result), np.concatenate([total, total + 1]), rtol=1e-6)
    assert result.sharding.is_equivalent_to(NamedSharding(MESH, P("x")), 2)


def test_partial_manual_collectives_name_only_the_manual_axis():
    lowered = jax.jit(_manual_over_x).lower(_random(8, 16))
    assert 'manual_axes = ["x"]' in lowered.as_text()
    compiled = lowered.compile().as_text()
    assert 'all_reduce(%block) {axes = ["x"]' in compiled
    assert '"y"' not in compiled.split("attributes")[1]


# --- calling conventions -------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_static_arguments_via_in_specs_none(mode):
    calls = []

    def scale(block, factor, options):
        calls.append(type(factor))
        return block * factor + options["shift"]

    mapped = shard_map(scale, mesh=MESH, in_specs=(P("x"), None, None), out_specs=P("x"))
    x = _random(8, 4)
    result = _call(mode, lambda block: mapped(block, 3, {"shift": 2.0}), x)
    np.testing.assert_allclose(np.asarray(result), x * 3 + 2, rtol=1e-6, atol=1e-6)  # one fma (XLA contracts it)
    assert calls and all(kind is int for kind in calls)


def test_eager_static_arguments_reuse_one_program_per_value():
    traces = []

    def scale(block, factor):
        traces.append(factor)
        return block * factor

    mapped = shard_map(scale, mesh=MESH, in_specs=(P("x"), None), out_specs=P("x"))
    x = _random(8, 4)
    for factor in (2, 2, 5):
        np.testing.assert_allclose(np.asarray(mapped(x, factor)), x * factor, rtol=1e-6)
    assert traces == [2, 5]


@pytest.mark.parametrize("mode", MODES)
def test_pytree_prefix_specs(mode):
    def body(params, pair):
        scaled = params["w"] * pair[0]
        return {"sum": lax.psum(scaled, "x"), "parts": (scaled, pair[1])}

    mapped = shard_map(body, mesh=MESH, in_specs=({"w": P("x")}, P()), out_specs={"sum": P(), "parts": P("x")})
    w, left, right = _random(8, 4), _random(4, 4, seed=1), _random(4, 4, seed=2)
    result = _call(mode, lambda w, left, right: mapped({"w": w}, (left, right)), w, left, right)
    np.testing.assert_allclose(np.asarray(result["sum"]), w[:4] * left + w[4:] * left, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(result["parts"][0]), w * np.tile(left, (2, 1)), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(result["parts"][1]), np.tile(right, (2, 1)), rtol=1e-6)


def test_decorator_without_function_and_set_mesh():
    @shard_map(in_specs=P("x"), out_specs=P())
    def total(block):
        return lax.psum(block.sum(0), "x")

    x = _random(8, 3)
    with jax.sharding.set_mesh(MESH):
        np.testing.assert_allclose(np.asarray(total(x)), x.sum(0), rtol=1e-5)


def test_in_specs_inferred_from_explicit_arrays():
    mesh = _mesh((2, 4), ("x", "y"), AxisType.Explicit)
    x = jax.device_put(_random(8, 8), NamedSharding(mesh, P("x", "y")))
    local_shapes = []

    def body(block, replicated):
        local_shapes.append((block.shape, replicated.shape))
        return block + replicated[:4, :2]

    result = shard_map(body, mesh=mesh, out_specs=P("x", "y"))(x, _random(8, 8, seed=1))
    assert local_shapes == [((4, 2), (8, 8))]
    replicated = _random(8, 8, seed=1)[:4, :2]
    np.testing.assert_allclose(np.asarray(result), np.asarray(x) + np.tile(replicated, (2, 4)), rtol=1e-6)


def test_closure_over_an_outer_traced_value_becomes_a_replicated_operand():
    @jax.jit
    def shifted(a, b):
        return shard_map(lambda block: block + b, mesh=MESH, in_specs=P("x"), out_specs=P("x"))(a)

    a, b = _random(8, 4), _random(4, 4, seed=1)
    np.testing.assert_allclose(np.asarray(shifted(a, b)), a + np.tile(b, (2, 1)), rtol=1e-6)
    text = shifted.lower(a, b).as_text()
    assert 'in_shardings = [<@mesh, [{"x"}, {}]>, <@mesh, [{}, {}]>]' in text


def test_closure_over_a_device_array_eagerly():
    weights = jax.device_put(_random(4, 4, seed=3))
    mapped = shard_map(lambda block: block @ weights, mesh=MESH, in_specs=P("x"), out_specs=P("x"))
    x = _random(8, 4)
    np.testing.assert_allclose(np.asarray(mapped(x)), x @ np.asarray(weights), rtol=1e-5, atol=1e-6)


def test_outside_values_returned_unchanged():
    mapped = shard_map(lambda block: (block, np.float32(1.5)), mesh=MESH, in_specs=P("x"), out_specs=(P("x"), P()))
    x = _random(8, 2)
    block, constant = mapped(x)
    np.testing.assert_array_equal(np.asarray(block), x)
    assert float(constant) == 1.5


# --- the programs it produces ------------------------------------------------------------------


def test_traced_module_verifies_round_trips_and_interprets():
    a, b = _random(8, 16), _random(16, 12, seed=1)
    module = jax.jit(_matmul_psum).lower(a, b).module
    verify(module)
    assert renumber(parse_module(print_module(module))) == renumber(module)
    np.testing.assert_allclose(interpret(module, a, b)[0], a @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("function", "shapes", "collective"), [
    (_matmul_psum, ((8, 16), (16, 12)), 'all_reduce(%0) {axes = ["y"], mesh = @mesh, reduction = "sum"}'),
    (_matmul_reduce_scatter, ((6, 16), (16, 8)), 'reduce_scatter(%0) {axes = ["y"], dim = 1'),
    (_reshard_rows_to_columns, ((8, 12),), 'all_to_all(%block) {axes = ["y"], concat_dim = 0'),
    (_collective_matmul, ((16, 32), (32, 8)), 'collective_permute(%b_block) {axes = ["i"]'),
])
def test_compiled_per_device_text_shows_the_collectives(function, shapes, collective):
    arrays = [_random(*shape) for shape in shapes]
    compiled = jax.jit(function).lower(*arrays).compile()
    assert collective in compiled.as_text()
    reference = compiled.run_reference(*arrays)
    np.testing.assert_allclose(np.asarray(reference), np.asarray(compiled(*arrays)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("layout", [P(None, "x"), P(("x", "y")), P()])
@pytest.mark.parametrize("axis_names", [frozenset(), frozenset({"x"})])
def test_operands_and_results_are_resharded_around_the_body(layout, axis_names):
    in_specs = P("x") if axis_names else P("x", "y")
    out_specs = P() if axis_names else P(None, "y")
    body = shard_map(lambda block: lax.psum(block, "x") * 2, mesh=MESH, in_specs=in_specs, out_specs=out_specs,
                     axis_names=axis_names)
    sharding, out_sharding = NamedSharding(MESH, layout), NamedSharding(MESH, P("y", "x"))
    program = jax.jit(lambda a: body(jax.numpy.sin(a)) + 1, in_shardings=sharding, out_shardings=out_sharding)
    x = _random(8, 8)
    result = program(jax.device_put(x, sharding))
    np.testing.assert_allclose(np.asarray(result), (np.sin(x[:4]) + np.sin(x[4:])) * 2 + 1, rtol=1e-5, atol=1e-5)
    assert result.sharding.is_equivalent_to(out_sharding, 2)
