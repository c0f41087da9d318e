"""Resharding traced values in explicit mode: ``reshard_to`` a sharding type, a user's
``out_sharding``, and the layout a constant made to combine with a value takes."""

from __future__ import annotations

from .operands import as_operand, dtype_of, shape_of
from ..sharding.sharding_types import ShardingType, resolve_sharding
from .trace import bind, operand_sharding_type


def layout_of(other):
    """The sharding type a constant made to combine with ``other`` takes in explicit mode (a
    broadcast Python scalar, a fill value, an iota): ``other``'s layout, reduced where it is
    (never its pending sum), as a JAX scalar has; None off explicit meshes."""
    sharding = operand_sharding_type(other)
    if not sharding.mesh.explicit_axes:
        return None
    return ShardingType(sharding.mesh, sharding.dims, reduced=sharding.reduced)


def reshard_to(x, sharding):
    """``x`` resharded to the ShardingType ``sharding`` (a sharding_constraint whose result has
    that type); on a concrete array the eager executor moves its shards."""
    x = as_operand(x)
    return bind("sharding_constraint", [x], {}, weak_type=dtype_of(x).weak, out_sharding=[sharding])[0]


def apply_out_sharding(result, out_sharding, function: str):
    """``result`` resharded to a user's ``out_sharding`` (None: unchanged)."""
    sharding = resolve_sharding(out_sharding, len(shape_of(result)), function)
    return result if sharding is None else reshard_to(result, sharding)
