"""Check mode and inspect_array_sharding through ``meshjit.jit`` itself: ``jit(..., check=True)``,
the ``check_partitioning`` option, and callbacks answered when a jitted function compiles."""

from __future__ import annotations


import numpy as np
import pytest
from meshjit.compiler.check import PartitioningMismatchError
from meshjit.compiler.partitioning.spmd_builder import SpmdBuilder

import meshjit as jax
from meshjit.debug import inspect_array_sharding
from meshjit.sharding import NamedSharding
from meshjit.sharding import PartitionSpec as P

pytestmark = pytest.mark.usefixtures("restore_runtime_state")


def add_iota(x):
    return x + jax.numpy.arange(8, dtype=jax.numpy.float32)


def zero_offsets(builder, axes, local_size):
    return builder.scalar(0, "i32")


@pytest.fixture
def check_partitioning():
    jax.config.update("check_partitioning", True)
    yield
    jax.config.update("check_partitioning", False)


def test_check_true_passes_a_correct_program(mesh_8):
    jitted = jax.jit(add_iota, in_shardings=NamedSharding(mesh_8, P("x")), check=True)
    np.testing.assert_array_equal(np.asarray(jitted(np.ones(8, np.float32))), np.arange(8) + 1)
    np.testing.assert_array_equal(np.asarray(jitted(np.zeros(8, np.float32))), np.arange(8))


def test_check_true_names_the_op_of_a_broken_partition(mesh_8, monkeypatch):
    monkeypatch.setattr(SpmdBuilder, "shard_offset", zero_offsets)
    jitted = jax.jit(add_iota, in_shardings=NamedSharding(mesh_8, P("x")), check=True)
    with pytest.raises(PartitioningMismatchError, match=r"first op whose per-device values differ: %0 = iota\(\)"):
        jitted(np.ones(8, np.float32))


def test_without_check_the_broken_partition_goes_unnoticed(mesh_8, monkeypatch):
    monkeypatch.setattr(SpmdBuilder, "shard_offset", zero_offsets)
    jitted = jax.jit(add_iota, in_shardings=NamedSharding(mesh_8, P("x")))
    assert np.asarray(jitted(np.zeros(8, np.float32))).tolist() == [0] * 8


def test_the_config_option_checks_every_call(mesh_8, monkeypatch, check_partitioning):
    monkeypatch.setattr(SpmdBuilder, "shard_offset", zero_offsets)
    jitted = jax.jit(add_iota, in_shardings=NamedSharding(mesh_8, P("x")))
    with pytest.raises(PartitioningMismatchError, match="device 1 \\(x=1\\)"):
        jitted(np.ones(8, np.float32))
    compiled = jitted.lower(np.ones(8, np.float32)).compile()
    with pytest.raises(PartitioningMismatchError):
        compiled(np.ones(8, np.float32))


def test_inspect_array_sharding_inside_jit_runs_once_at_compile_time(mesh_2x4):
    seen = []

    def f(x, w):
        hidden = x @ w
        inspect_array_sharding(hidden, callback=seen.append)
        return hidden * 2

    jitted = jax.jit(f, in_shardings=(NamedSharding(mesh_2x4, P("x", None)), NamedSharding(mesh_2x4, P(None, "y"))))
    for _ in range(3):
        jitted(np.ones((8, 16), np.float32), np.ones((16, 32), np.float32))
    (sharding,) = seen
    assert sharding == NamedSharding(mesh_2x4, P("x", "y"))
