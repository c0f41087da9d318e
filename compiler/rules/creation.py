"""The compiler's rules for iota and constant: any dim may be sharded (the partitioner builds each
shard at its offset); no tangents.
"""

from __future__ import annotations

from meshjit.ir import Op
from meshjit.ir.reference import reference_impls

from ..sharding.factor_rules import FactorRule, joined, letters
from ..frontend.autodiff.jvp import no_tangent
from ..tables import jvp_rules
from ..partitioning.reshard import reshard
from ..partitioning.spmd_builder import Local, describe, replicated
from ..tables import factor_rule, kernel_rules, local_attr_rules, partition_rules, sharding_rules

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


# --- partitioning ----------------------------------------------------------------------------


@partition_rules.register("iota", "constant")
def _partition_creation(partitioner, op: Op) -> list:
    """iota builds this device's shard directly (its padding holds values past the end, which
    nothing reads); a constant is built whole and sliced."""
    target = partitioner.result_shardings(op)[0]
    local_shape = target.local_shape(op.result.type.shape, partitioner.mesh)
    if op.name == "iota" and not target.is_fully_replicated():
        return [_sharded_iota(partitioner.builder, op, target, local_shape)]
    value = partitioner.builder.emit1(op.name, [], dict(op.attrs), location=op.location)
    whole = Local(value, replicated(partitioner.mesh_name, op.result.type.rank), op.result.type.shape)
    return [reshard(partitioner.builder, whole, target, describe(op))]


def _sharded_iota(builder, op: Op, target, local_shape) -> Local:
    dimension = op.attrs["dimension"]
    value = builder.emit1("iota", [], {**op.attrs, "shape": tuple(local_shape)}, location=op.location)
    axes = target.dims[dimension].axes
    if axes:
        offset = builder.shard_offset(axes, local_shape[dimension])
        if op.attrs["dtype"] != "i32":
            offset = builder.emit1("convert", [offset], {"new_dtype": op.attrs["dtype"]})
        value = builder.emit1("add", [value, builder.broadcast_scalar(offset, local_shape)])
    return Local(value, target, op.result.type.shape)


# --- local attributes ------------------------------------------------------------------------

local_attr_rules.register("iota")(lambda op, local_result_shapes: {**op.attrs, "shape": tuple(local_result_shapes[0])})
