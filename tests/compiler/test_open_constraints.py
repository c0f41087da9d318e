"""A sharding_constraint's open dims ask only that their listed axes come first: they keep the
sharding propagation gave them, and only closed dims are resharded to what they list. (JAX writes
fully open constraints around every op of a partially manual shard_map body.)"""

from __future__ import annotations

import numpy as np
import pytest
from meshjit.cli_tools import module_collectives
from meshjit.ir import parse_module

from test_partition_differential import partition_and_compare

PROGRAM = """
mesh @mesh = <["x"=2, "y"=4]>
func @main(%a: f32[8,16] {sharding = <@mesh, [{"x"}, {"y"}]>}) -> (f32[8,16]) {
  %0 = sharding_constraint(%a) {sharding = <@mesh, [CONSTRAINT]>} : f32[8,16]
  %1 = tanh(%0) : f32[8,16]
  return %1
}
"""

# constraint dims -> (collective kinds and axes, bytes each device sends)
CASES = {
    "{?}, {?}": ([], 0),
    '{"x", ?}, {?}': ([], 0),
    "{?}, {}": ([("all_gather", ("y",))], 192),
    '{}, {"y", ?}': ([("all_gather", ("x",))], 64),
    "{}, {}": ([("all_gather", ("x",)), ("all_gather", ("y",))], 448),
}


def _module(constraint: str):
    return parse_module(PROGRAM.replace("CONSTRAINT", constraint))


@pytest.mark.parametrize("constraint", CASES)
def test_open_dims_keep_the_propagated_sharding(constraint: str):
    partitioned, records = module_collectives(_module(constraint), "shardy")
    kinds, total = CASES[constraint]
    assert [(record.kind, record.axes) for record in records] == kinds
    assert sum(record.total_bytes for record in records) == total


@pytest.mark.parametrize("constraint", CASES)
def test_open_constraints_compute_what_the_unsharded_program_does(constraint: str):
    argument = np.random.default_rng(0).normal(size=(8, 16)).astype(np.float32)
    partition_and_compare(_module(constraint), [argument])
