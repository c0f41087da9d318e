"""Random jnp programs with AUTO layouts: whatever the search chooses computes numpy's answer,
scores no worse than propagation alone, and is what Compiled reports."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import meshjit as jax
from meshjit.sharding import AUTO, NamedSharding, PartitionSpec

from test_jit_random_programs import MESH, SPECS, _run, programs

pytestmark = pytest.mark.filterwarnings("ignore:involuntary full rematerialization")


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=programs(), spec_a=st.sampled_from(SPECS), auto_out=st.booleans(), seed=st.integers(0, 2**16))
def test_random_program_with_auto_layouts_matches_numpy(steps, spec_a, auto_out, seed):
    rng = np.random.default_rng(seed)
    a, b = (rng.standard_normal((8, 8)).astype(np.float32) for _ in range(2))
    expected = _run(steps, 1, a.astype(np.float64), b.astype(np.float64))
    function = jax.jit(lambda a, b: _run(steps, 0, a, b), in_shardings=(NamedSharding(MESH, spec_a), AUTO(MESH)),
                       out_shardings=AUTO(MESH) if auto_out else None)
    compiled = function.lower(a, b).compile()
    report = compiled.program.search
    assert report.chosen.score.key() <= report.seed.score.key()
    chosen_b = dict(report.chosen.arg_shardings)[1]
    assert compiled.input_shardings[0][1].spec == NamedSharding(MESH, _spec(chosen_b)).spec
    result = function(a, b)
    np.testing.assert_allclose(np.asarray(result), expected, rtol=2e-4, atol=2e-4)


def _spec(sharding):
    entries = [tuple(axis.name for axis in dim.axes) for dim in sharding.dims]
    entries = [None if not names else names[0] if len(names) == 1 else names for names in entries]
    while entries and entries[-1] is None:
        entries.pop()
    return PartitionSpec(*entries)
