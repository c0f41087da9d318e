"""Pending reductions flow through the ops partial_sums.py lists, and only those.

Each chain of ``partial_sum_cases`` runs under every layout on the meshes (2,), (2,2), (2,4)
and (8,): partitioned with poisoned padding, against the unsharded program (the differential
harness of test_partition_differential), and the op's result must be pending exactly when the
chain says the reduction passes through it.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from meshjit.compiler.sharding.partial_sums import PartialRule, partial_sum_rules, pass_through
from meshjit.compiler.tables import partial_result_rules
from meshjit.compiler.analysis.collectives import collective_records
from meshjit.compiler.pipeline import compile_module
from meshjit.compiler.partitioning.partition import partition_with_report
from meshjit.compiler.propagation.propagate_shardings import propagate_shardings
from meshjit.compiler.propagation.normalize_boundaries import normalize_boundaries
from meshjit.ir import AxisRef, Op, TensorSharding, TensorType, Value

from partial_sum_cases import CHAINS, LAYOUTS, PRODUCER_GATHERS, Chain, ChainCase, Layout
from partition_cases import MESHES, axes_of, layout
from test_partition_differential import ProgramBuilder, partition_and_compare

pytestmark = pytest.mark.filterwarnings("ignore::meshjit.compiler.partitioning.partition.FullRematerializationWarning")



def build_chain(case: ChainCase, chain_layout: Layout):
    """The chain's module, the global value of the op's result, and the operands' value makers."""
    builder = ProgramBuilder(MESHES[chain_layout.mesh])
    chain = Chain(builder, chain_layout, case.dtype)
    result = case.build(chain)
    returned = result
    if chain_layout.output is not None:
        parts = chain_layout.output.split(",")
        rank = result.type.rank
        returned = builder.constrain(result, ",".join((parts + ["-"] * rank)[:rank]))
    return builder.module([returned]), result, chain.operands


def chain_params():
    for case in CHAINS:
        for chain_layout in LAYOUTS:
            yield pytest.param(case, chain_layout, id=f"{case.name}-{chain_layout.name}")


@pytest.mark.parametrize("case, chain_layout", list(chain_params()))
def test_pending_reduction_passes_through_exactly_where_the_algebra_allows(case: ChainCase, chain_layout: Layout):
    module, result, operands = build_chain(case, chain_layout)
    rng = np.random.default_rng(zlib.crc32(f"{case.name}-{chain_layout.name}".encode()))
    arrays = [np.asarray(operand.values(rng, operand.type.shape, operand.type.dtype)) for operand in operands]
    partition_and_compare(module, arrays)
    if case.passes is None:
        return
    report = partition_with_report(normalize_boundaries(propagate_shardings(module)), poison_padding=True)
    # NOTE: the op may add pending axes of its own (a reduction over a sharded dim)
    pending = {axis.name for axis in report.value_map[result.id].unreduced}
    passed = axes_of(chain_layout.reduced) <= pending
    if (case.name, chain_layout.name) in PRODUCER_GATHERS:
        assert not pending, f"{case.name}: the producer gathers, nothing is left pending"
        return
    assert passed == case.passes, (
        f"{case.name}: the op's result is pending over {sorted(pending)}, expected the reduction over "
        f"{chain_layout.reduced} {'passed on' if case.passes else 'done before the op'}")


@pytest.mark.parametrize("case_name, layout_name", sorted(PRODUCER_GATHERS))
def test_a_producer_that_gathers_moves_no_more_than_passing_on(case_name: str, layout_name: str):
    """Where the output's uneven sharding reaches the producer, gathering its contracted dim
    moves at most the bytes the plan that passed the reduction on moved."""
    case = next(case for case in CHAINS if case.name == case_name)
    module, _, _ = build_chain(case, next(found for found in LAYOUTS if found.name == layout_name))
    program = compile_module(module, propagation="shardy", plan=False)
    sent = sum(record.total_bytes for record in collective_records(program.partitioned, program.collective_reasons))
    assert sent <= PRODUCER_GATHERS[(case_name, layout_name)]


def test_every_rule_has_a_chain_that_passes_through_it():
    """Every op of the table runs on pending operands and leaves a pending result somewhere."""
    passed_through = set()
    for case in CHAINS:
        if not case.passes:
            continue
        module, _, _ = build_chain(case, LAYOUTS[0])
        report = partition_with_report(normalize_boundaries(propagate_shardings(module)))
        pending = {value_id for value_id, local in report.value_map.items() if local.unreduced}
        passed_through |= {op.name for op in module.main.body.ops
                           if op.results[0].id in pending and any(value.id in pending for value in op.operands)}
    assert sorted(set(partial_sum_rules) - passed_through) == []


@pytest.mark.parametrize("name", sorted(set(partial_sum_rules) & set(partial_result_rules)))
def test_a_reduction_passes_on_only_its_own_kind(name: str):
    """An op that itself leaves partial results combines them with the pending ones into one
    reduction, so it may only pass on its own kind."""
    operand = Value.fresh(TensorType((4, 4), "f32"))
    attrs = {"axes": (0,)} if name.startswith("reduce") else {"contracting_dims": ((1,), (0,)),
                                                              "batch_dims": ((), ())}
    operands = (operand,) if name.startswith("reduce") else (operand, operand)
    op = Op(name, operands, (Value.fresh(TensorType((4,), "f32")),), attrs)
    rule: PartialRule = partial_sum_rules[name](op)
    assert set(rule.reductions) == set(rule.reductions.values()) == {partial_result_rules[name](op)}


def test_a_value_with_another_consumer_is_reduced_once_for_all():
    free = layout("-,-")
    pending = TensorSharding("mesh", free.dims, unreduced=(AxisRef("x"),))
    operand = Value.fresh(TensorType((4, 4), "f32"))
    op = Op("neg", (operand,), (Value.fresh(TensorType((4, 4), "f32")),))
    assert pass_through(op, [pending], [True]) is not None
    assert pass_through(op, [pending], [False]) is None
    assert pass_through(op, [free], [True]) is None


@pytest.mark.parametrize("rows", [8, 6])
@pytest.mark.parametrize("target", ["yx,-", "y,x"])
def test_pending_value_is_split_locally_then_reduce_scattered(rows: int, target: str):
    """A value pending over x, whole on its dims, wanted split over y then x on dim 0: each
    device slices its y part (no communication) and reduce-scatters only that over x; or with
    x on dim 1, reduce-scatters dim 1 and slices dim 0."""
    builder = ProgramBuilder(MESHES["2x4"])
    lhs = builder.argument(TensorType((rows, 16), "f64"), "-,x")
    rhs = builder.argument(TensorType((16, 8), "f64"), "x,-")
    product = builder.emit("dot_general", [lhs, rhs], {"contracting_dims": ((1,), (0,)), "batch_dims": ((), ())})[0]
    pending = TensorSharding("mesh", layout("-,-").dims, unreduced=(AxisRef("x"),))
    held = builder.emit("sharding_constraint", [product], {"sharding": pending})[0]
    module = builder.module([builder.constrain(held, target)])
    rng = np.random.default_rng(rows)
    partitioned = partition_and_compare(module, [rng.standard_normal((rows, 16)), rng.standard_normal((16, 8))])
    names = [op.name for op in partitioned.main.body.ops]
    assert "reduce_scatter" in names and "all_reduce" not in names, names
