"""Which mesh axes each factor of an op is computed over, chosen by communication cost.

A candidate maps every factor of the op's sharding rule to axes. Pass-through factors follow the
result's layout; a reduction factor may keep its operands' axes, leaving partial results. When
that conflicts with the result's layout (both want the same axis), one candidate keeps the
result's layout and gathers the operands, another computes partial results less sharded and
reduce-scatters them. Each candidate is priced by emitting its reshards into a scratch builder
and summing the bytes every device sends; the cheapest wins and the others are kept for
``explain()``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from meshjit.ir import DimSharding, MeshAttr, Op, TensorSharding, Value

from . import cost
from .collectives import COLLECTIVES
from .factor_projection import project_dim, unproject_dim
from .factor_rules import FactorRule
from .partition_rules import PARTIAL_REDUCTION
from .reshard import reshard
from .spmd_builder import Local, SpmdBuilder, local_type


@dataclass
class Decision:
    """A choice the partitioner made between valid strategies, kept for explain()."""

    op: str
    location: str | None
    chosen: str
    alternatives: dict[str, float] = field(default_factory=dict)


def _common_prefix(first, second) -> int:
    length = 0
    while length < min(len(first), len(second)) and first[length] == second[length]:
        length += 1
    return length


def collective_bytes(op: Op, mesh: MeshAttr) -> float:
    """What each device sends for one collective under the ring model."""
    group = math.prod(mesh.axis_size(name) for name in op.attrs.get("axes", ()))
    operand, result = cost.value_bytes(op.operands[0]), cost.value_bytes(op.result)
    if op.name == "all_reduce":
        return cost.all_reduce_bytes(operand, group)
    if op.name == "all_gather":
        return cost.all_gather_bytes(result, group)
    if op.name == "reduce_scatter":
        return cost.reduce_scatter_bytes(operand, group)
    if op.name == "all_to_all":
        return cost.all_to_all_bytes(operand, group)
    return float(operand) if op.name == "collective_permute" else 0.0


class FactorChooser:
    """Chooses factor axes for the ops of one function over one mesh."""

    def __init__(self, mesh_name: str, mesh: MeshAttr):
        self.mesh_name = mesh_name
        self.mesh = mesh
        self.decisions: list[Decision] = []

    def count(self, axes) -> int:
        return math.prod(axis.resolved_size(self.mesh) for axis in axes)

    def project(self, sharding: TensorSharding, dims_factors, rule: FactorRule) -> dict[int, list]:
        projected = {}
        for dim, factors in zip(sharding.dims, dims_factors):
            projected.update(project_dim(dim.axes, factors, rule.sizes, self.mesh))
        return projected

    def required_sharding(self, rule: FactorRule, dims_factors, factor_axes) -> TensorSharding:
        dims = tuple(DimSharding(tuple(unproject_dim(factor_axes, factors, rule.sizes, self.mesh)))
                     for factors in dims_factors)
        return TensorSharding(self.mesh_name, dims)

    def unreduced_axes(self, op: Op, rule: FactorRule, factor_axes) -> list:
        if op.name not in PARTIAL_REDUCTION:
            return []
        return [axis for factor, kind in enumerate(rule.kinds) if kind == "reduction" for axis in factor_axes[factor]]

    # -- candidates -------------------------------------------------------------------------
    def _overlaps(self, axis, used) -> bool:
        return any(axis.overlaps(other, self.mesh) for other in used)

    def _result_axes(self, rule: FactorRule, result_shardings, blocked=()) -> dict[int, list]:
        """Pass-through factors take the results' axes (the first result that has them), each
        axis once, up to the first axis in ``blocked``."""
        factor_axes = {factor: [] for factor in range(len(rule.sizes))}
        used = list(blocked)
        for sharding, dims in zip(result_shardings, rule.results):
            for factor, axes in self.project(sharding, dims, rule).items():
                if rule.kinds[factor] != "pass" or factor_axes[factor]:
                    continue
                for axis in axes:
                    if self._overlaps(axis, used):
                        break
                    factor_axes[factor].append(axis)
                used += factor_axes[factor]
        return factor_axes

    def _reduction_axes(self, rule: FactorRule, operands: list[Local], factor_axes) -> dict[int, list]:
        """Reduction factors take their operands' axes (the longest list) not already used."""
        factor_axes = {factor: list(axes) for factor, axes in factor_axes.items()}
        used = [axis for axes in factor_axes.values() for axis in axes]
        for factor, kind in enumerate(rule.kinds):
            if kind != "reduction":
                continue
            lists = [self.project(local.sharding, dims, rule).get(factor, [])
                     for local, dims in zip(operands, rule.operands)]
            best = [axis for axis in max(lists, key=len) if not self._overlaps(axis, used)]
            factor_axes[factor] = best
            used += best
        return factor_axes

    def candidates(self, op: Op, rule: FactorRule, operands: list[Local], result_shardings) -> dict[str, dict]:
        """The factor axes worth pricing, by name, cheapest-on-ties first."""
        follow = self._result_axes(rule, result_shardings)
        if op.name not in PARTIAL_REDUCTION or "reduction" not in rule.kinds:
            return {"follow the result": follow}
        reduced = self._reduction_axes(rule, operands, {factor: [] for factor in follow})
        blocked = [axis for axes in reduced.values() for axis in axes]
        around = self._result_axes(rule, result_shardings, blocked)
        return {"partial results in the result's layout": self._reduction_axes(rule, operands, follow),
                "partial results, then reduce_scatter": {f: reduced[f] or around[f] for f in follow},
                "gather the reduced dims": follow}

    # -- making a candidate valid -----------------------------------------------------------
    def _consistent(self, factor_axes: dict[int, list], rule: FactorRule) -> dict[int, list]:
        """Shrink factor axes until every tensor can express them on its dims (a dim's factors
        are sharded major to minor); only ever shrinks, so it ends."""
        changed = True
        while changed:
            changed = False
            for factors in (factors for dims in rule.tensors for factors in dims):
                axes = unproject_dim(factor_axes, factors, rule.sizes, self.mesh)
                back = project_dim(axes, factors, rule.sizes, self.mesh)
                for factor in factors:
                    keep = _common_prefix(factor_axes[factor], back[factor])
                    if keep < len(factor_axes[factor]):
                        factor_axes[factor] = factor_axes[factor][:keep]
                        changed = True
        return factor_axes

    def _divisible(self, rule: FactorRule, factor_axes) -> dict[int, list]:
        """A factor that shares a dim with others (a reshape's split or merged dims) must divide
        its axes, or padding would land inside the dim: keep the longest prefix that does."""
        for factor, axes in factor_axes.items():
            shares = any(len(factors) > 1 for dims in rule.tensors for factors in dims if factor in factors)
            while shares and axes and rule.sizes[factor] % self.count(axes):
                axes = axes[:-1]
            factor_axes[factor] = axes
        return factor_axes

    def valid(self, rule: FactorRule, factor_axes) -> dict[int, list]:
        return self._consistent(self._divisible(rule, dict(factor_axes)), rule)

    # -- pricing ----------------------------------------------------------------------------
    def price(self, op: Op, rule: FactorRule, operands: list[Local], result_shardings, factor_axes) -> float:
        """Bytes each device sends to reshard the operands for ``factor_axes`` and to bring the
        results to ``result_shardings``, emitted into a scratch builder."""
        scratch = SpmdBuilder(self.mesh_name, self.mesh)
        for local, dims in zip(operands, rule.operands):
            reshard(scratch, local, self.required_sharding(rule, dims, factor_axes), "pricing")
        unreduced = tuple(self.unreduced_axes(op, rule, factor_axes))
        reduction = PARTIAL_REDUCTION.get(op.name, "sum")
        for result, dims, wanted in zip(op.results, rule.results, result_shardings):
            sharding = self.required_sharding(rule, dims, factor_axes)
            sharding = TensorSharding(self.mesh_name, sharding.dims, (), unreduced, reduction)
            value = Value.fresh(local_type(result.type, sharding, self.mesh))
            reshard(scratch, Local(value, sharding, result.type.shape), wanted, "pricing")
        return sum(collective_bytes(emitted, self.mesh) for emitted in scratch.ops
                   if emitted.name in COLLECTIVES)

    def choose(self, op: Op, rule: FactorRule, operands: list[Local], result_shardings) -> dict[int, list]:
        options = {name: self.valid(rule, axes)
                   for name, axes in self.candidates(op, rule, operands, result_shardings).items()}
        distinct = {}
        for name, axes in options.items():
            if axes not in distinct.values():
                distinct[name] = axes
        if len(distinct) == 1:
            return next(iter(distinct.values()))
        prices = {name: self.price(op, rule, operands, result_shardings, axes) for name, axes in distinct.items()}
        chosen = min(prices, key=prices.get)
        self.decisions.append(Decision(op.name, op.location, chosen,
                                       {f"{name} (bytes/device)": price for name, price in prices.items()}))
        return distinct[chosen]
