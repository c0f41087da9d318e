"""Call 1 and call 100 give the same bits: every program runs the same on the first tier
(MESHJIT_COMPILE=never) as on its kernels (sync), here over the random jit programs and the
benchmark workloads, their first tiers in blocks of leading positions (the op table is in
test_tiers.py, on whole arrays)."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import meshjit as jax
from meshjit.compiler.lowering import tiers
from meshjit.sharding import NamedSharding

from tier_helpers import bits, tiered_steps

pytestmark = [pytest.mark.usefixtures("restore_runtime_state", "in_blocks"),
              pytest.mark.filterwarnings("ignore:involuntary full rematerialization")]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _module(name: str, path: str):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, path))
    module = sys.modules[name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def in_blocks(monkeypatch):
    """Every first tier over several leading positions runs in blocks (tiers.py ``in_blocks``;
    the op table in test_tiers.py runs whole arrays)."""
    monkeypatch.setattr(tiers, "BLOCKED_MIN_ELEMENTS", 0)


RANDOM = _module("random_jit_programs", "tests/api/test_jit_random_programs.py")


def _on_both_tiers(monkeypatch, build) -> tuple[list, list]:
    """``build()`` -> (function, arguments), run once under each mode: the results' leaves."""
    results = []
    for mode in ("never", "sync"):
        monkeypatch.setenv("MESHJIT_COMPILE", mode)
        function, arguments = build()
        results.append([np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(function(*arguments))])
    return results


def _assert_same_bits(first: list, kernels: list) -> None:
    assert len(first) == len(kernels)
    for a, b in zip(first, kernels):
        assert a.dtype == b.dtype and a.shape == b.shape and bits(a) == bits(b)


# NOTE: derandomized, so that the kernels the examples need are in the cache after one run
PROGRAMS = st.lists(st.one_of(st.tuples(st.just("unary"), st.sampled_from(sorted(RANDOM.UNARY))),
                              st.tuples(st.just("binary"), st.sampled_from(sorted(RANDOM.BINARY)))),
                    min_size=1, max_size=4)


@settings(max_examples=10, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(steps=PROGRAMS, spec_a=st.sampled_from(RANDOM.SPECS), spec_b=st.sampled_from(RANDOM.SPECS),
       seed=st.integers(0, 2**16))
def test_random_programs_give_the_same_bits_on_both_tiers(monkeypatch, steps, spec_a, spec_b, seed):
    rng = np.random.default_rng(seed)
    # NOTE: 128 x 128: large enough to fuse (the random suite's 8 x 8 stays numpy steps)
    a, b = (rng.standard_normal((128, 128)).astype(np.float32) for _ in range(2))

    def build():
        placed = (jax.device_put(a, NamedSharding(RANDOM.MESH, spec_a)),
                  jax.device_put(b, NamedSharding(RANDOM.MESH, spec_b)))
        return jax.jit(lambda a, b: RANDOM._run(steps, 0, a, b)), placed

    _assert_same_bits(*_on_both_tiers(monkeypatch, build))


def _small(workload):
    """The workload with its large dims cut by 8, so both tiers run in a test's time."""
    shapes = {name: tuple(size // 8 if size >= 512 else size for size in shape)
              for name, shape in workload.shapes.items()}
    return dataclasses.replace(workload, shapes=shapes)


WORKLOADS = _module("benchmark_workloads", "benchmarks/workloads.py")


@pytest.mark.parametrize("index", range(len(WORKLOADS.WORKLOADS)),
                         ids=[workload.name for workload in WORKLOADS.WORKLOADS])
def test_benchmark_workloads_give_the_same_bits_on_both_tiers(monkeypatch, index):
    workload = _small(WORKLOADS.WORKLOADS[index])
    arrays = workload.inputs()

    def build():
        namespace: dict = {}
        exec(WORKLOADS.program_source(workload), namespace)
        return namespace["build"](arrays)

    _assert_same_bits(*_on_both_tiers(monkeypatch, build))


def test_some_workload_runs_on_the_first_tier(monkeypatch):
    """The invariant above is not vacuous: the training step has steps on the first tier."""
    monkeypatch.setenv("MESHJIT_COMPILE", "never")
    workload = next(item for item in WORKLOADS.WORKLOADS if item.name.startswith("elementwise"))
    workload = dataclasses.replace(_small(workload), meshjit_source="return (a * b + c) * 2")
    namespace: dict = {}
    exec(WORKLOADS.program_source(workload), namespace)
    function, placed = namespace["build"](workload.inputs())
    assert tiered_steps(function, *placed)
