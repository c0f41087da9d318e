"""The compiler's rules for iota and constant: any dim may be sharded (the partitioner builds each
shard at its offset); no tangents.
"""

from __future__ import annotations

from meshjit.ir import Op
from meshjit.ir.reference import reference_impls

from ..factor_rules import FactorRule, joined, letters
from ..frontend.autodiff.jvp import no_tangent
from ..frontend.autodiff.registries import jvp_rules
from .registries import factor_rule, kernel_rules, sharding_rules

# --- sharding ------------------------------------------------------------------------------------


@sharding_rules.register("iota", "constant")
def _creation(op: Op) -> FactorRule:
    # the partitioner materialises each shard at its offset, so any dim may be sharded
    return factor_rule(op, f" -> {joined(letters(op.result.type.rank))}")


# --- kernels -------------------------------------------------------------------------------------


@kernel_rules.register("iota")
def _iota(op: Op, lead: int):
    value = reference_impls["iota"](op.attrs)[0]
    constant = value.reshape((1,) * lead + value.shape)
    constant.flags.writeable = False
    return lambda: (constant,)


@kernel_rules.register("constant")
def _constant(op: Op, lead: int):
    value = op.attrs["value"].array
    constant = value.reshape((1,) * lead + value.shape)
    constant.flags.writeable = False
    return lambda: (constant,)


# --- autodiff ------------------------------------------------------------------------------------

jvp_rules.register("iota", "constant")(no_tangent)
