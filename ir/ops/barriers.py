"""optimization_barrier: the identity on any number of operands, which no optimisation sees
through. Rematerialisation (jax.checkpoint) routes the values it recomputes from through one,
so that common-subexpression elimination cannot merge the recomputation with the original."""

from __future__ import annotations

from ..reference import reference_impls
from ..shape_rules import fail, shape_rules

OPS = ("optimization_barrier",)


@shape_rules.register("optimization_barrier")
def _optimization_barrier(op, operands, attrs, regions, meshes):
    if not operands:
        fail(op, "expected at least one operand")
    return tuple(operands)


@reference_impls.register("optimization_barrier")
def _identity(attrs, *operands):
    return tuple(operands)
