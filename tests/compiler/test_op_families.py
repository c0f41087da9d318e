"""Families x registries: every op of every family (``meshjit.ir.ops``) has an entry in each
registry it needs, and every entry lives in its family's files (``ir/ops/<family>.py`` and
``compiler/rules/<family>.py``). A failure names the op, the family and the registry."""

from __future__ import annotations

import pytest
from meshjit.compiler.tables import (
    MARKER_OPS,
    TRANSFORMATION_OPS,
    collective_steps,
    data_flow_rules,
    kernel_math,
    varying_over_axes,
)
from meshjit.compiler.sharding.partial_sums import partial_sum_rules
from meshjit.compiler.rules import (
    PER_DEVICE_OPS,
    batching_rules,
    jvp_rules,
    kernel_rules,
    local_attr_rules,
    partial_result_rules,
    partition_rules,
    sharding_rules,
    transpose_rules,
)
from meshjit.ir.interpret import region_impls
from meshjit.ir.ops import ALL_OPS, FAMILIES, REGION_OPS, family_of
from meshjit.ir.ops.collectives import collective_impls
from meshjit.ir.reference import reference_impls
from meshjit.ir.shape_rules import shape_rules

# Ops without operands: vmap never batches them (nothing of theirs depends on the example).
OPERANDLESS_OPS = frozenset({"iota", "constant", "axis_index", "partition_id"})


def _needs(registry_name: str, op: str) -> bool:
    """Which registries an op needs: per-device ops run as collectives (no sharding rule, no
    global reference); region ops are run by the interpreter itself (``region_impls``); every
    op has a JVP rule (``no_tangent`` for integer results) and every op with operands a
    batching rule (vmap)."""
    per_device, region = op in PER_DEVICE_OPS, op in REGION_OPS
    return {
        "shape rule": True,
        "reference implementation": not per_device and not region,
        "region implementation": region,
        "collective implementation": per_device,
        "sharding rule": not per_device,
        "JVP rule": True,
        "batching rule": op not in OPERANDLESS_OPS,
    }[registry_name]


REGISTRIES = {
    "shape rule": shape_rules,
    "reference implementation": reference_impls,
    "collective implementation": collective_impls,
    "region implementation": region_impls,
    "sharding rule": sharding_rules,
    "JVP rule": jvp_rules,
    "batching rule": batching_rules,
}


def test_families_partition_the_ops():
    names = [name for ops in FAMILIES.values() for name in ops]
    assert len(names) == len(set(names)), "an op is named by two families"
    assert sorted(names) == list(ALL_OPS)


@pytest.mark.parametrize("registry_name", sorted(REGISTRIES))
def test_every_op_has_an_entry_in_every_registry_it_needs(registry_name):
    registry = REGISTRIES[registry_name]
    missing = [f"{op} ({family_of(op)})" for op in ALL_OPS
               if _needs(registry_name, op) and op not in registry]
    assert not missing, f"ops without a {registry_name}: {', '.join(missing)}"


@pytest.mark.parametrize("registry", [shape_rules, reference_impls, collective_impls, sharding_rules,
                                      kernel_rules, jvp_rules, transpose_rules, batching_rules,
                                      partial_sum_rules, partition_rules, partial_result_rules,
                                      local_attr_rules, kernel_math, data_flow_rules],
                         ids=lambda registry: registry.name)
def test_no_registry_names_an_unknown_op(registry):
    unknown = set(registry) - set(ALL_OPS) - set(MARKER_OPS) - set(TRANSFORMATION_OPS)
    assert not unknown, f"the {registry.name} registry names ops no family defines: {sorted(unknown)}"


def _home(rule) -> str:
    return getattr(rule, "__module__", "") or ""


@pytest.mark.parametrize("registry,package", [
    (shape_rules, "meshjit.ir.ops"), (reference_impls, "meshjit.ir.ops"),
    (collective_impls, "meshjit.ir.ops"), (sharding_rules, "meshjit.compiler.rules"),
    (kernel_rules, "meshjit.compiler.rules"), (jvp_rules, "meshjit.compiler.rules"),
    (transpose_rules, "meshjit.compiler.rules"), (batching_rules, "meshjit.compiler.rules"),
    (partial_sum_rules, "meshjit.compiler.rules"), (partition_rules, "meshjit.compiler.rules"),
    (partial_result_rules, "meshjit.compiler.rules"), (local_attr_rules, "meshjit.compiler.rules"),
    (data_flow_rules, "meshjit.compiler.rules"),
], ids=lambda value: getattr(value, "name", value))
def test_rules_written_for_an_op_live_in_its_family(registry, package):
    """A rule written in a family file serves only that family's ops (shared rules such as
    ``linear_jvp`` live outside the family packages and may serve any). A family may span
    several files named after it (``regions_control_flow.py`` beside ``regions.py``)."""
    strays = []
    for op in registry:
        if op in MARKER_OPS or op in TRANSFORMATION_OPS:
            continue
        home = _home(registry[op])
        family_home = f"{package}.{family_of(op)}"
        if home.startswith(package + ".") and home != family_home \
                and not home.startswith(family_home + "_") and not home.endswith(".registries"):
            strays.append(f"{op} ({family_of(op)}) is registered from {home}")
    assert not strays, f"{registry.name}: " + "; ".join(strays)


@pytest.mark.parametrize("facts,family", [
    (kernel_math, "elementwise"), (data_flow_rules, "regions"),
    (collective_steps, "collectives"), (varying_over_axes, "collectives"),
], ids=["kernel math", "data-flow rule", "collective steps", "varying over axes"])
def test_codegen_collective_and_data_flow_facts_name_ops_of_their_family(facts, family):
    """The facts lowering, codegen, propagation and the varying-axes logic read are declared by
    the op's family (tables.py), never named in those stages."""
    assert len(facts) > 0
    strays = [f"{op} ({family_of(op) if op in ALL_OPS else 'no family'})" for op in facts
              if op not in ALL_OPS or family_of(op) != family]
    assert not strays, f"facts of the {family} family name other ops: {strays}"


def test_every_fused_math_helper_is_in_the_prelude():
    from meshjit.compiler.lowering.codegen_math import PRELUDE

    helpers = {helper for op in kernel_math for helper in kernel_math[op].helpers.values()}
    assert helpers and all(f"def {helper}(" in PRELUDE for helper in helpers), sorted(helpers)
