"""Which mesh axes each factor of an op is computed over, chosen by communication cost.

A candidate maps every factor of the op's sharding rule to axes. Pass-through factors follow the
result's layout; a reduction factor may keep its operands' axes, leaving partial results. When
that conflicts with the result's layout (both want the same axis), one candidate keeps the
result's layout and gathers the operands, another computes partial results less sharded and
reduce-scatters them. When operands arrive with a pending reduction the op can pass on
(partial_sums.py), each candidate also comes in a variant that keeps the pending axes out of
the factors and runs the op on the partial terms. One more candidate runs the op where its
operands are and moves its results (an all_to_all) when that splits them as much as
propagation's layout does. Each candidate is priced by emitting its
reshards, and the reduction of its results to the layout propagation chose, into a scratch
builder: the fewest bytes every device sends wins, ties go to the least alpha-beta time, then
to the earlier candidate; the others are kept for ``explain()``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from meshjit.ir import DimSharding, MeshAttr, Op, TensorSharding, Value
from meshjit.ir.printer import format_axis

from ..analysis import cost
from ..analysis.collectives import COLLECTIVES
from ..sharding.factor_projection import merge_sub_axes, project_dim, unproject_dim
from ..sharding.factor_rules import FactorRule
from ..sharding.partial_sums import PassThrough
from .reshard import reshard
from .spmd_builder import Local, SpmdBuilder, local_type


# NOTE: a device's arithmetic rate over its link's (machine balance): a CPU core's float32 GEMM
# against a copy between cores here is about 16; accelerators have more. It only has to rank a
# plan that saves bytes by repeating a contraction on every device against one that does not.
FLOPS_PER_BYTE_SENT = 16


def partial_reduction(op: Op) -> str | None:
    """The op's partial-result reduction (``compiler/rules``' ``partial_result_rules``).

    NOTE: imported at call time: the rules families import the partition plans, which import
    this module, so importing the rules here would be circular."""
    from ..tables import partial_reduction as lookup

    return lookup(op)

@dataclass
class Decision:
    """A choice the partitioner made between valid strategies, kept for explain()."""

    op: str
    location: str | None
    chosen: str
    alternatives: dict[str, float] = field(default_factory=dict)


@dataclass
class Strategy:
    """How one op runs: the mesh axes of each factor, and the pending reduction it passes on
    (None: its operands are reduced first)."""

    factor_axes: dict[int, list]
    passing: PassThrough | None = None


def _common_prefix(first, second) -> int:
    length = 0
    while length < min(len(first), len(second)) and first[length] == second[length]:
        length += 1
    return length


def collective_cost(op: Op, mesh: MeshAttr) -> tuple[float, float]:
    """Bytes each device sends for one collective under the ring model, and its alpha-beta time."""
    group = math.prod(mesh.axis_size(name) for name in op.attrs.get("axes", ()))
    sent = cost.collective_bytes(op.name, cost.value_bytes(op.operands[0]), cost.value_bytes(op.result), group)
    return sent, cost.alpha_beta_seconds(sent, cost.ring_steps(op.name, group))


def _elements(shape) -> int:
    return math.prod(shape)


def canonical_axes(axes, mesh: MeshAttr) -> list:
    """A set of axes with the parts of each axis major first and merged where adjacent (whole
    axes keep their order)."""
    if not any(axis.is_sub_axis for axis in axes):
        return list(axes)
    order = {name: position for position, name in enumerate(mesh.axis_names)}
    ordered = sorted(axes, key=lambda axis: (order[axis.name], axis.pre_size))
    return merge_sub_axes(ordered, mesh)


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
        """The axes the op's sharded reduction factors leave pending, as whole axes where the
        sub-axes of several factors make one up (a contraction over ``(heads, head_dim)``
        split ``"x":(1)4, "x":(4)2`` is pending over ``"x"``, one collective)."""
        if partial_reduction(op) is None:
            return []
        pending = [axis for factor, kind in enumerate(rule.kinds) if kind == "reduction" for axis in factor_axes[factor]]
        return canonical_axes(pending, self.mesh)

    def operand_targets(self, rule: FactorRule, operands: list[Local], strategy: Strategy) -> list[TensorSharding]:
        """The layout each operand must be in: the factors' axes, and the pending reduction
        on the operands that carry it through."""
        targets = []
        for index, (local, dims) in enumerate(zip(operands, rule.operands)):
            target = self.required_sharding(rule, dims, strategy.factor_axes)
            if strategy.passing is not None and index in strategy.passing.operands:
                target = replace(target, unreduced=local.unreduced, reduction=local.sharding.reduction)
            targets.append(target)
        return targets

    def result_targets(self, op: Op, rule: FactorRule, strategy: Strategy) -> list[TensorSharding]:
        """The layout the results come out in: pending over the axes passed through and the
        op's own sharded reduction factors."""
        unreduced = tuple(self.unreduced_axes(op, rule, strategy.factor_axes))
        reduction = partial_reduction(op) or "sum"
        if strategy.passing is not None:
            unreduced = tuple(canonical_axes(strategy.passing.axes + unreduced, self.mesh))
            reduction = strategy.passing.result_reduction
        return [replace(self.required_sharding(rule, dims, strategy.factor_axes), unreduced=unreduced,
                        reduction=reduction if unreduced else "sum")
                for dims in rule.results]

    # -- candidates -------------------------------------------------------------------------
    def _overlaps(self, axis, used) -> bool:
        return any(axis.overlaps(other, self.mesh) for other in used)

    def _result_axes(self, rule: FactorRule, result_shardings, blocked=()) -> dict[int, list]:
        """Pass-through factors take the results' axes (the first result that has them), each
        axis once, up to the first axis in ``blocked``."""
        factor_axes = {factor: [] for factor in range(len(rule.sizes))}
        used = list(blocked)
        for sharding, dims in zip(result_shardings, rule.results):
            self._take_axes(rule, self.project(sharding, dims, rule), factor_axes, used)
        return factor_axes

    def _take_axes(self, rule: FactorRule, projected: dict, factor_axes: dict, used: list,
                   allowed=None) -> None:
        """Give each pass factor still without axes (and in ``allowed``, if given) its
        ``projected`` axes, up to the first one overlapping ``used``; ``used`` grows."""
        for factor, axes in projected.items():
            if rule.kinds[factor] != "pass" or factor_axes[factor] or (allowed is not None and factor not in allowed):
                continue
            for axis in axes:
                if self._overlaps(axis, used):
                    break
                factor_axes[factor].append(axis)
            used += factor_axes[factor]

    def _reduction_axes(self, rule: FactorRule, operands: list[Local], factor_axes, blocked=()) -> dict[int, list]:
        """Reduction factors take their operands' axes (the longest list) not already used."""
        factor_axes = {factor: list(axes) for factor, axes in factor_axes.items()}
        used = list(blocked) + [axis for axes in factor_axes.values() for axis in axes]
        for factor, kind in enumerate(rule.kinds):
            if kind != "reduction":
                continue
            lists = [self.project(local.sharding, dims, rule).get(factor, [])
                     for local, dims in zip(operands, rule.operands)]
            best = [axis for axis in max(lists, key=len) if not self._overlaps(axis, used)]
            factor_axes[factor] = best
            used += best
        return factor_axes

    def _operand_axes(self, rule: FactorRule, operands: list[Local], result_shardings, blocked=()) -> dict | None:
        """The op run where its operands are, its results moved instead: every pass factor takes
        the axes its operands hold it on (the largest operand first, each axis once). Offered
        only when that shards every result into as many pieces as the layout propagation chose,
        and leaves nothing partial, so moving the results is a permutation of data (an
        all_to_all), priced against gathering the operands into the result's layout."""
        if not any(dim.axes for local in operands for dim in local.sharding.dims):
            return None
        factor_axes = {factor: [] for factor in range(len(rule.sizes))}
        used = list(blocked)
        # NOTE: a factor no result has (a reshape's dropped size-1 dim) splits the work but not
        # the results: devices along its axes would hold different results (padding, here)
        in_results = {factor for dims in rule.results for factors in dims for factor in factors}
        ordered = sorted(zip(operands, rule.operands), key=lambda pair: -_elements(pair[0].global_shape))
        for local, dims in ordered:
            self._take_axes(rule, self.project(local.sharding, dims, rule), factor_axes, used, in_results)
        factor_axes = self.valid(rule, factor_axes)
        for sharding, dims in zip(result_shardings, rule.results):
            moved = self.required_sharding(rule, dims, factor_axes)
            if moved.dims == sharding.dims or self._shards(moved) != self._shards(sharding):
                return None
        return factor_axes

    def _shards(self, sharding: TensorSharding) -> int:
        return self.count([axis for dim in sharding.dims for axis in dim.axes])

    def candidates(self, op: Op, rule: FactorRule, operands: list[Local], result_shardings,
                   blocked=()) -> dict[str, dict]:
        """The factor axes worth pricing, by name, cheapest-on-ties first; no factor takes an
        axis in ``blocked``. The last candidate computes where the operands are and moves the
        result (an all_to_all after the op can cost less than gathering an operand before it)."""
        follow = self._result_axes(rule, result_shardings, blocked)
        moved = self._operand_axes(rule, operands, result_shardings, blocked)
        moving = {} if moved is None else {"follow the operands, move the result": moved}
        if partial_reduction(op) is None or "reduction" not in rule.kinds:
            return {"follow the result": follow, **moving}
        reduced = self._reduction_axes(rule, operands, {factor: [] for factor in follow}, blocked)
        around = self._result_axes(rule, result_shardings, list(blocked) + [
            axis for axes in reduced.values() for axis in axes])
        return {"partial results in the result's layout": self._reduction_axes(rule, operands, follow, blocked),
                "partial results, then reduce_scatter": {f: reduced[f] or around[f] for f in follow},
                "gather the reduced dims": follow, **moving}

    def strategies(self, op: Op, rule: FactorRule, operands: list[Local], result_shardings,
                   passing: PassThrough | None) -> dict[str, Strategy]:
        """Every distinct valid strategy by name: passing the pending reduction on first (so
        that it wins ties), then reducing the operands first."""
        named = []
        if passing is not None:
            axes = ", ".join(format_axis(axis) for axis in passing.axes)
            for name, factor_axes in self.candidates(op, rule, operands, result_shardings, passing.axes).items():
                named.append((f"{name}, pending {passing.reduction} over {axes} passed on",
                              Strategy(self.valid(rule, factor_axes), passing)))
        for name, factor_axes in self.candidates(op, rule, operands, result_shardings).items():
            named.append((name, Strategy(self.valid(rule, factor_axes))))
        distinct: dict[str, Strategy] = {}
        for name, strategy in named:
            if strategy not in distinct.values():
                distinct[name] = strategy
        return distinct
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
        if not any(factor_axes.values()):
            return dict(factor_axes)
        return self._consistent(self._divisible(rule, dict(factor_axes)), rule)

    # -- pricing ----------------------------------------------------------------------------
    def price(self, op: Op, rule: FactorRule, operands: list[Local], result_shardings,
              strategy: Strategy) -> tuple[float, float]:
        """Bytes each device sends, and the alpha-beta time, to reshard the operands for
        ``strategy`` and to bring its results to ``result_shardings``, emitted into a scratch
        builder."""
        scratch = SpmdBuilder(self.mesh_name, self.mesh)
        for local, target in zip(operands, self.operand_targets(rule, operands, strategy)):
            reshard(scratch, local, target, "pricing")
        for result, sharding, wanted in zip(op.results, self.result_targets(op, rule, strategy), result_shardings):
            value = Value.fresh(local_type(result.type, sharding, self.mesh))
            reshard(scratch, Local(value, sharding, result.type.shape), wanted, "pricing")
        costs = [collective_cost(emitted, self.mesh) for emitted in scratch.ops if emitted.name in COLLECTIVES]
        return sum(sent for sent, _ in costs), sum(seconds for _, seconds in costs)

    def work(self, op: Op, strategy: Strategy) -> float:
        """A contraction's arithmetic on one device under ``strategy`` (its operations divided
        among the devices its factors are split over), in bytes: ``FLOPS_PER_BYTE_SENT``
        operations cost what sending one byte does. Other ops do about one operation per
        element they touch, far less than sending it, so they count none."""
        if op.name != "dot_general":
            return 0.0
        split = self.count([axis for axes in strategy.factor_axes.values() for axis in axes])
        return cost.op_flops(op) / split / FLOPS_PER_BYTE_SENT

    def choose(self, op: Op, rule: FactorRule, operands: list[Local], result_shardings,
               passing: PassThrough | None = None) -> Strategy:
        """The strategy that sends the fewest bytes per device, where a plan that sends fewer
        bytes by repeating a contraction on more devices is charged for the repeated work
        (``work``): the bytes come from the plan with the least bytes plus work. Among the
        plans sending those bytes, the least alpha-beta time wins, then the earlier strategy.
        A choice between several is kept for explain()."""
        distinct = self.strategies(op, rule, operands, result_shardings, passing)
        if len(distinct) == 1:
            return next(iter(distinct.values()))
        prices = {name: self.price(op, rule, operands, result_shardings, strategy)
                  for name, strategy in distinct.items()}
        work = {name: self.work(op, strategy) for name, strategy in distinct.items()}
        cheapest = min(prices, key=lambda name: (prices[name][0] + work[name], prices[name][0]))
        chosen = min((name for name in prices if prices[name][0] == prices[cheapest][0]),
                     key=lambda name: prices[name][1])
        self.decisions.append(Decision(op.name, op.location, chosen,
                                       {f"{name} (bytes/device)": sent for name, (sent, _) in prices.items()}))
        return distinct[chosen]
