"""The compiler's rules for optimization_barrier: each result is its operand (an identity
factor mapping per pair, so shardings pass through it both ways), its kernel returns its
operands, its derivative is a barrier on the tangents and its transpose the identity."""

from __future__ import annotations

from meshjit.ir import Op

from ..sharding.factor_rules import FactorRule, joined
from ..frontend.autodiff.jvp import linear_jvp
from ..tables import jvp_rules, transpose_rules
from ..frontend.vmap.batching import unrolled
from ..tables import batching_rules, factor_rule, kernel_rules, sharding_rules


@sharding_rules.register("optimization_barrier")
def _optimization_barrier(op: Op) -> FactorRule:
    specs = [joined([f"v{index}_{dim}" for dim in range(value.type.rank)]) for index, value in enumerate(op.operands)]
    return factor_rule(op, f"{', '.join(specs)} -> {', '.join(specs)}")


@kernel_rules.register("optimization_barrier")
def _identity(op: Op, lead: int):
    return lambda *operands: tuple(operands)


jvp_rules.register("optimization_barrier")(linear_jvp)


@transpose_rules.register("optimization_barrier")
def _optimization_barrier_transpose(op, cotangents, operands):
    return list(cotangents)


# --- vmap ----------------------------------------------------------------------------------------

batching_rules.register("optimization_barrier")(unrolled)
