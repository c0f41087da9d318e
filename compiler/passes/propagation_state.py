"""The mutable state propagation keeps per tensor, and its conversion to and from IR shardings."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from meshjit.ir import AxisRef, DimSharding, MeshAttr, TensorSharding

from ..factor_rules import FactorRule


@dataclass
class TensorState:
    """One tensor's sharding while propagation runs; only open dims grow."""

    key: int
    label: str
    shape: tuple[int, ...]
    dims: list[list[AxisRef]]
    open: list[bool]
    priority: list[int | None]
    replicated: tuple[AxisRef, ...] = ()
    unreduced: tuple[AxisRef, ...] = ()
    reduction: str = "sum"
    user: bool = False

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @staticmethod
    def unsharded(key: int, label: str, shape) -> TensorState:
        rank = len(shape)
        return TensorState(key, label, tuple(shape), [[] for _ in range(rank)], [True] * rank, [None] * rank)

    @staticmethod
    def from_sharding(key: int, label: str, shape, sharding: TensorSharding) -> TensorState:
        return TensorState(
            key, label, tuple(shape),
            dims=[list(dim.axes) for dim in sharding.dims],
            open=[not dim.is_closed for dim in sharding.dims],
            priority=[dim.priority for dim in sharding.dims],
            replicated=sharding.replicated, unreduced=sharding.unreduced,
            reduction=sharding.reduction, user=True,
        )

    def used_axes(self) -> list[AxisRef]:
        return [axis for dim in self.dims for axis in dim] + list(self.replicated) + list(self.unreduced)

    def to_sharding(self, mesh_name: str) -> TensorSharding:
        dims = tuple(
            DimSharding(tuple(axes), is_closed=not (self.user and is_open), priority=priority if self.user else None)
            for axes, is_open, priority in zip(self.dims, self.open, self.priority)
        )
        return TensorSharding(mesh_name, dims, self.replicated, self.unreduced, self.reduction)


@dataclass
class Edge:
    """An op (or a virtual identity to a function result or a manual-computation operand) seen
    through its factor rule; ``tensors`` are state keys, operands first."""

    name: str
    rule: FactorRule
    tensors: list[int]
    num_operands: int
    location: str | None = None
    extra: dict = field(default_factory=dict)


def fits(axes, size: int, mesh: MeshAttr) -> list[AxisRef]:
    """The longest prefix of ``axes`` whose device count divides ``size``."""
    kept, product = [], 1
    for axis in axes:
        product *= axis.resolved_size(mesh)
        if size % product:
            break
        kept.append(axis)
    return kept
