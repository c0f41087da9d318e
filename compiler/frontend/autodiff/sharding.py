"""Autodiff in explicit mode: the ops autodiff emits keep their values' sharding types.

A replayed op takes the types it was recorded with; a derivative (tangent or cotangent) has its
primal's type, as JAX's do. Rules that build derivatives emit their ops leniently (an ambiguous
result drops the conflicting axes instead of raising) and the derivative is then resharded to
its primal's type, where JAX's rules pass ``out_sharding``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from meshjit.ir import Op, Value

from ..op_types import seeds_propagation
from ..sharding_ops import reshard_to
from ...sharding.sharding_types import ShardingType, lenient_sharding_types
from ..trace import Tracer, current_trace


def recorded_type(value: Value) -> ShardingType | None:
    """The sharding type ``value`` was traced with, when it pins a layout (explicit mode)."""
    trace = current_trace()
    known = trace.types.get(value.id) if trace is not None else None
    return known if known is not None and seeds_propagation(known) else None


def recorded_types(op: Op) -> list[ShardingType] | None:
    """The types of ``op``'s results, when every one was recorded (a replay keeps them)."""
    types = [recorded_type(result) for result in op.results]
    return types if types and all(sharding is not None for sharding in types) else None


def as_primal_type(derivative, primal: Value):
    """``derivative`` resharded to the type ``primal`` was traced with (without its pending or
    reduced axes), when the two differ."""
    wanted = recorded_type(primal)
    if wanted is None or not isinstance(derivative, Tracer):
        return derivative
    plain = ShardingType(wanted.mesh, wanted.dims, varying=wanted.varying)
    have = derivative.sharding_type
    if have.dims == plain.dims and not have.unreduced:
        return derivative
    return reshard_to(derivative, plain)


@contextmanager
def deriving() -> Iterator[None]:
    """While a derivative rule emits its ops."""
    with lenient_sharding_types():
        yield
