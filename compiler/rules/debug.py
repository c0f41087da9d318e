"""The compiler's rules for debug_callback: its operands are gathered whole before it runs (a
replication factor per dim, so propagation never pushes a layout through it), its kernel calls
the host callback once per distinct device value (once for a replicated value, once per device
inside a shard_map body), it adds no tangent (its JVP calls back with the primal values, as
JAX's), and vmap unrolls it into one call per example, as JAX does."""

from __future__ import annotations

import numpy as np
from meshjit.ir import Op
from meshjit.ir.ops.debug import callback_of

from ..frontend.autodiff.jvp import no_tangent
from .callbacks import device_grid
from ..frontend.vmap.batching import unrolled
from ..sharding.factor_rules import FactorRule
from ..tables import (
    batching_rules,
    jvp_rules,
    kernel_rules,
    partition_rules,
    per_leading_position,
    sharding_rules,
    sharding_type_rules,
)


@sharding_rules.register("debug_callback")
def _debug_callback(op: Op) -> FactorRule:
    """Every operand dim its own factor: a replication factor (gathered whole) unless the
    callback asked for each device's shard (``partitioned``)."""
    kind = "pass" if op.attrs.get("partitioned") else "replication"
    sizes, operands = [], []
    for value in op.operands:
        operands.append(tuple((len(sizes) + dim,) for dim in range(value.type.rank)))
        sizes.extend(value.type.shape)
    return FactorRule(sizes=tuple(sizes), kinds=(kind,) * len(sizes), operands=tuple(operands),
                      results=())


@sharding_type_rules.register("debug_callback")
def _no_results(op: Op, operands, mesh) -> list:
    """No results, so no types; any operand layout is fine (it is gathered, or shard by shard)."""
    return []


@kernel_rules.register("debug_callback")
def _debug_callback_kernel(op: Op, lead: int):
    callback = callback_of(op.attrs["callback"])
    devices = op.attrs.get("devices")
    if not devices or len(devices) != lead:
        return per_leading_position(lambda *pieces: callback(*pieces) or (), lead)

    def per_device(*operands):
        # NOTE: a replicated buffer has size-1 leading dims; every device still calls back
        for position in np.ndindex(*device_grid(devices, operands)[0]):
            callback(*(operand[tuple(index if size > 1 else 0 for index, size in zip(position, operand.shape))]
                       for operand in operands))
        return ()

    return per_device


@partition_rules.register("debug_callback")
def _partition_debug_callback(partitioner, op: Op) -> list:
    """Gathered operands (the generic plan with replication factors), or with ``partitioned``
    each device's shard as it lies, the callback running on every device."""
    if not op.attrs.get("partitioned"):
        return partitioner.partition_generic(op)
    operands = [partitioner.locals[value.id].value for value in op.operands]
    devices = tuple(size for _, size in partitioner.mesh.axes)
    partitioner.builder.emit(op.name, operands, op.attrs.updated(devices=devices), location=op.location)
    return []


jvp_rules.register("debug_callback")(no_tangent)
batching_rules.register("debug_callback")(unrolled)
