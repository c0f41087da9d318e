"""Check mode: a call's outputs against the unsharded reference interpreter, and the first op
whose per-device values differ when a partition is broken on purpose (in the runtime's
collectives, in the partitioner, or in an optimisation pass)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from meshjit.compiler import pipeline
from meshjit.compiler.check import PartitioningMismatchError, check_program, first_mismatch
from meshjit.compiler.propagation.propagate_shardings import propagate_shardings
from meshjit.compiler.propagation.normalize_boundaries import normalize_boundaries
from meshjit.compiler.partitioning.spmd_builder import SpmdBuilder
from meshjit.ir import Block, parse_module
from meshjit.runtime import inprocess_collectives

import meshjit as jax
from meshjit._check import run_checked
from meshjit.sharding import NamedSharding
from meshjit.sharding import PartitionSpec as P

pytestmark = pytest.mark.usefixtures("restore_runtime_state")


def megatron_mlp(x, w1, w2):
    return jax.nn.relu(x @ w1) @ w2


def mlp_arguments():
    generator = np.random.default_rng(0)
    return [generator.normal(size=shape).astype(np.float32) for shape in ((8, 16), (16, 32), (32, 16))]


def compiled_mlp(mesh):
    shardings = (NamedSharding(mesh, P("x", None)), NamedSharding(mesh, P(None, "y")), NamedSharding(mesh, P("y", None)))
    jitted = jax.jit(megatron_mlp, in_shardings=shardings, out_shardings=NamedSharding(mesh, P("x", None)))
    return jitted.lower(*mlp_arguments()).compile()


def compiled_iota_add(mesh):
    """``x + arange(8)`` with x split over "x": the partitioner builds each device's iota at its
    shard's offset."""
    jitted = jax.jit(lambda x: x + jax.numpy.arange(8, dtype=jax.numpy.float32),
                     in_shardings=NamedSharding(mesh, P("x")))
    return jitted.lower(np.ones(8, np.float32)).compile()


def zero_offsets(builder, axes, local_size):
    """A broken SpmdBuilder.shard_offset: every device thinks its shard starts at 0."""
    return builder.scalar(0, "i32")


def test_a_correct_program_passes_and_returns_the_outputs(mesh_2x4):
    arguments = mlp_arguments()
    outputs = run_checked(compiled_mlp(mesh_2x4), arguments)
    np.testing.assert_allclose(np.asarray(outputs[0]), megatron_mlp(*arguments).__array__(), rtol=1e-5)


def compiled_row_sums(mesh):
    """``sum(exp(x), axis=1)`` with the summed dim split over "y": partial sums, then an
    all_reduce over "y" that the executor runs as an in-process collective."""
    jitted = jax.jit(lambda x: jax.numpy.sum(jax.numpy.exp(x), axis=1),
                     in_shardings=NamedSharding(mesh, P("x", "y")), out_shardings=NamedSharding(mesh, P("x")))
    return jitted.lower(mlp_arguments()[0]).compile()


def test_a_broken_runtime_collective_is_named(mesh_2x4, monkeypatch):
    # NOTE: not the MLP: there the executor folds all_reduce(dot_general) into one GEMM and the
    # in-process all_reduce never runs
    compiled = compiled_row_sums(mesh_2x4)
    monkeypatch.setattr(inprocess_collectives, "all_reduce", lambda value, axes, mesh_shape, reduction="sum": value)
    with pytest.raises(PartitioningMismatchError) as failure:
        run_checked(compiled, mlp_arguments()[:1])
    message = str(failure.value)
    assert message.startswith("check_partitioning: output 0 differs from the unsharded reference (expected ")
    assert "the per-device program is right under the reference interpreter, so the fault is below the IR" in message
    assert '= all_reduce(%' in message and 'axes = ["y"]' in message
    assert "(needed for: output 0)" in message
    assert "device 0 (x=0, y=0): expected " in message


def test_a_broken_partitioner_names_the_first_differing_op(mesh_8, monkeypatch):
    monkeypatch.setattr(SpmdBuilder, "shard_offset", zero_offsets)
    compiled = compiled_iota_add(mesh_8)
    with pytest.raises(PartitioningMismatchError) as failure:
        run_checked(compiled, [np.ones(8, np.float32)])
    message = str(failure.value)
    assert "first op whose per-device values differ: %0 = iota()" in message
    assert 'per-device value %' in message and 'laid out as <@mesh, [{"x"}]>' in message
    assert "device 1 (x=1): expected 1, got 0 at index (0,)" in message


def break_relu(module):
    """A broken optimisation pass: relu's max becomes min."""
    func = module.main
    ops = tuple(replace(op, name="min") if op.name == "max" else op for op in func.body.ops)
    return replace(module, funcs=(replace(func, body=Block(func.body.args, ops, func.body.returns)),))


def test_a_broken_optimisation_pass_is_named(mesh_2x4, monkeypatch):
    monkeypatch.setattr(pipeline, "OPTIMISATIONS", pipeline.OPTIMISATIONS + (pipeline.PassSpec("break_relu", break_relu),))
    compiled = compiled_mlp(mesh_2x4)
    with pytest.raises(PartitioningMismatchError, match="after the optimisation pass break_relu its outputs differ"):
        run_checked(compiled, mlp_arguments())


def test_an_unsharded_program_is_checked_against_its_kernels(monkeypatch):
    compiled = jax.jit(lambda x: x * 3).lower(np.ones(4, np.float32)).compile()
    assert np.asarray(run_checked(compiled, [np.ones(4, np.float32)])[0]).tolist() == [3, 3, 3, 3]


# -- the module-level comparison, on IR text --------------------------------------------------
SPLIT_IOTA = """mesh @mesh = <["x"=4]>
func @main(%a: f32[8] {sharding = <@mesh, [{"x"}]>}) -> f32[8] {
  %0 = iota() {dimension = 0, dtype = "f32", shape = [8]} : f32[8]
  %1 = exp(%a) : f32[8]
  %2 = add(%1, %0) : f32[8]
  return %2
}
"""


def global_modules(text: str):
    traced = parse_module(text)
    return traced, normalize_boundaries(propagate_shardings(traced))


def test_check_program_returns_the_reference_outputs():
    traced, propagated = global_modules(SPLIT_IOTA)
    arguments = [np.linspace(0, 1, 8, dtype=np.float32)]
    (expected,) = check_program(traced, propagated, arguments)
    np.testing.assert_allclose(expected, np.exp(arguments[0]) + np.arange(8), rtol=1e-6)
    assert first_mismatch(propagated, arguments) is None


def test_check_program_names_the_op_and_the_device(monkeypatch):
    monkeypatch.setattr(SpmdBuilder, "shard_offset", zero_offsets)
    traced, propagated = global_modules(SPLIT_IOTA)
    with pytest.raises(PartitioningMismatchError) as failure:
        check_program(traced, propagated, [np.zeros(8, np.float32)])
    message = str(failure.value)
    assert 'first op whose per-device values differ: %0 = iota() {dimension = 0, dtype = "f32", shape = [8]}' in message
    assert "device 1 (x=1): expected 2, got 0 at index (0,)" in message
    mismatch = first_mismatch(propagated, [np.zeros(8, np.float32)])
    assert mismatch.where.startswith("%0 = iota()") and mismatch.device.startswith("device 1 (x=1)")


def test_partial_results_are_compared_after_their_pending_reduction():
    """The dot's per-device value holds partial sums over "x" (unreduced); they are summed
    before the comparison, so a correct partition passes."""
    text = """mesh @mesh = <["x"=2, "y"=2]>
func @main(%a: f32[4,8] {sharding = <@mesh, [{}, {"x"}]>}, %b: f32[8,6] {sharding = <@mesh, [{"x"}, {"y"}]>}) -> f32[4,6] {
  %0 = dot_general(%a, %b) {batch_dims = [[], []], contracting_dims = [[1], [0]]} : f32[4,6]
  %1 = mul(%0, %0) : f32[4,6]
  return %1
}
"""
    traced, propagated = global_modules(text)
    generator = np.random.default_rng(1)
    arguments = [generator.normal(size=(4, 8)).astype(np.float32), generator.normal(size=(8, 6)).astype(np.float32)]
    check_program(traced, propagated, arguments)
