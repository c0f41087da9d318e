"""The control flow ops' sharding rules and data flow (the regions family's scan, while and cond).

Their regions are propagated like the rest of the program: every region value gets a state,
and *data-flow ties* (Shardy's data-flow edges) join each loop-carried value's four places
(initial value, body argument, body result, op result), each scanned operand to its per-step
slice, each stacked result to its per-step value, and a cond's operands and results to every
branch's arguments and results. So a carry has one sharding at entry, in the body and at exit,
and shardings from inside a body (constraints, dots) reach the values outside and back.
"""

from __future__ import annotations

from meshjit.ir import Op, Value
from meshjit.ir.ops.regions import scan_parts

from ..sharding.factor_rules import FactorRule, joined, letters
from ..frontend.vmap.batching import unrolled
from ..frontend.control_flow_tracing import explicit_dims
from ..frontend.trace import current_trace
from ..tables import (
    Tie,
    batching_rules,
    data_flow_rules,
    factor_rule,
    sharding_rules,
    sharding_type_rules,
    typed,
    unreduced_not_implemented,
)


# NOTE: propagation reads the ties through ``tables.data_flow_ties``.
@data_flow_rules.register("scan")
def _scan_ties(op: Op) -> list[Tie]:
    body = op.regions[0]
    num_consts, num_carry = op.attrs["num_consts"], op.attrs["num_carry"]
    consts, init, xs = scan_parts(op.operands, num_consts, num_carry)
    const_args, carry_args, x_args = scan_parts(body.args, num_consts, num_carry)
    ties = [Tie(outer, inner) for outer, inner in zip(consts, const_args)]
    for start, arg, returned, result in zip(init, carry_args, body.returns, op.results):
        ties += [Tie(start, arg), Tie(result, returned), Tie(result, arg)]
    ties += [Tie(x, arg, stacked=True) for x, arg in zip(xs, x_args)]
    ties += [Tie(result, value, stacked=True)
             for result, value in zip(op.results[num_carry:], body.returns[num_carry:])]
    return ties


@data_flow_rules.register("while")
def _while_ties(op: Op) -> list[Tie]:
    cond, body = op.regions
    num_consts = op.attrs["num_consts"]
    ties = [Tie(operand, arg) for region in (cond, body) for operand, arg in zip(op.operands, region.args)]
    carry_args = body.args[num_consts:]
    for result, arg, returned in zip(op.results, carry_args, body.returns):
        ties += [Tie(result, returned), Tie(result, arg)]
    return ties


@data_flow_rules.register("cond")
def _cond_ties(op: Op) -> list[Tie]:
    ties = []
    for branch in op.regions:
        ties += [Tie(operand, arg) for operand, arg in zip(op.operands[1:], branch.args)]
        ties += [Tie(result, returned) for result, returned in zip(op.results, branch.returns)]
    return ties


# --- op-level sharding rules -----------------------------------------------------------------
# Across the op itself only a loop carry's initial value and final value share factors; every
# other dim is a factor of its own that the op never moves axes through (the ties do).


def _own_factors(prefix: str, value: Value) -> str:
    return joined([f"{prefix}{dim}" for dim in range(value.type.rank)])


def _rule(op: Op, operand_specs: list[str], result_specs: list[str]) -> FactorRule:
    names = {name for spec in operand_specs + result_specs for name in spec.split() if name != "[]"}
    kinds = {name: "replication" for name in names if not name.startswith("c")}
    return factor_rule(op, f"{', '.join(operand_specs)} -> {', '.join(result_specs)}", kinds)


def _carried(index: int, value: Value) -> str:
    return joined([f"c{index}_{name}" for name in letters(value.type.rank)])


@sharding_rules.register("scan")
def _scan(op: Op) -> FactorRule:
    num_consts, num_carry = op.attrs["num_consts"], op.attrs["num_carry"]
    consts, init, xs = scan_parts(op.operands, num_consts, num_carry)
    operands = [_own_factors(f"k{index}_", value) for index, value in enumerate(consts)]
    operands += [_carried(index, value) for index, value in enumerate(init)]
    operands += [_own_factors(f"x{index}_", value) for index, value in enumerate(xs)]
    results = [_carried(index, value) for index, value in enumerate(op.results[:num_carry])]
    results += [_own_factors(f"y{index}_", value) for index, value in enumerate(op.results[num_carry:])]
    return _rule(op, operands, results)


@sharding_rules.register("while")
def _while(op: Op) -> FactorRule:
    num_consts = op.attrs["num_consts"]
    operands = [_own_factors(f"k{index}_", value) for index, value in enumerate(op.operands[:num_consts])]
    operands += [_carried(index, value) for index, value in enumerate(op.operands[num_consts:])]
    results = [_carried(index, value) for index, value in enumerate(op.results)]
    return _rule(op, operands, results)


@sharding_rules.register("cond")
def _cond(op: Op) -> FactorRule:
    operands = [_own_factors(f"o{index}_", value) for index, value in enumerate(op.operands)]
    results = [_own_factors(f"r{index}_", value) for index, value in enumerate(op.results)]
    return _rule(op, operands, results)


@sharding_type_rules.register("cond")
def _cond_type(op: Op, operands, mesh) -> list:
    """As JAX, a cond's results have its branches' output types: the branches are traced over
    the operands' types, and tracing checked that they agree (lax_branches.py)."""
    unreduced_not_implemented(op, operands)
    known = current_trace().types
    first = op.regions[0].returns
    return typed(mesh, [explicit_dims(known.get(value.id), value.type.rank) for value in first])


# --- vmap ----------------------------------------------------------------------------------------

# NOTE: loops and branches batch by running once per example (vmap's generic rule, which keeps
# the op's regions); batching the bodies themselves would be the faster rule.
batching_rules.register("scan", "while", "cond")(unrolled)
