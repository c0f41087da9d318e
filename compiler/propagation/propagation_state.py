"""The mutable state propagation keeps per tensor, and its conversion to and from IR shardings."""

from __future__ import annotations

import math
from dataclasses import dataclass

from meshjit.ir import AxisRef, DimSharding, TensorSharding

from ..sharding.factor_rules import FactorRule


@dataclass
class TensorState:
    """One tensor's sharding while propagation runs; only open dims grow.

    ``user`` marks a sharding the user wrote (an argument, a result, a constraint, a manual
    computation boundary, or an op that came with one): its closed dims never change, and at a
    user-priority level below a dim's priority that dim counts as closed and its axes as taken.
    """

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
        return TensorState(key, label, tuple(shape), [[] for _ in range(rank)], [True] * rank,
                           [None] * rank)

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

    def is_hidden(self, dim: int, level: int | None) -> bool:
        """A user dim whose priority is lower (a larger number) than the running level."""
        return self.user and level is not None and (self.priority[dim] or 0) > level

    def may_grow(self, dim: int, level: int | None) -> bool:
        return self.open[dim] and not self.is_hidden(dim, level)

    def hidden_axes(self, level: int | None) -> list[AxisRef]:
        return [axis for dim, axes in enumerate(self.dims) if self.is_hidden(dim, level)
                for axis in axes]

    def to_sharding(self, mesh_name: str) -> TensorSharding:
        """A user sharding keeps its open marks and priorities; a propagated one is closed."""
        dims = tuple(
            DimSharding(tuple(axes), is_closed=not (self.user and is_open),
                        priority=priority if self.user else None)
            for axes, is_open, priority in zip(self.dims, self.open, self.priority)
        )
        return TensorSharding(mesh_name, dims, self.replicated, self.unreduced, self.reduction)


@dataclass
class Edge:
    """An op seen through its factor rule; ``tensors`` are state keys, operands first.

    Besides real ops there are three virtual kinds, like Shardy's data-flow edges: ``return``
    (an identity to a function result sharding), ``manual_input`` (to a manual computation's
    in_sharding) and ``data_flow`` (a control flow value to its region counterpart, see
    compiler/rules/regions_control_flow.py).
    """

    name: str
    rule: FactorRule
    tensors: list[int]
    num_operands: int
    location: str | None = None
