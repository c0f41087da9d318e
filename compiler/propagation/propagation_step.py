"""One propagation step on one op (Shardy's factor propagation, aggressive flavour).

Project every tensor's dim shardings onto the op's factors; per factor pick the target axes
(the longest axes list that every source tensor's list is a prefix of, or on a conflict the
list the strategy's resolve_conflict picks), cut them after the first that does not divide the
factor (padded shards; before it if the factor is shorter than its devices) or before an
explicitly replicated axis; grow every receiving tensor whose axes are a prefix of the target,
factors of larger source tensors first, never reusing an axis within a tensor; project back to dims.
``step`` only reports growth; the caller writes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from meshjit.ir import AxisRef, MeshAttr

from ..sharding.factor_projection import (
    device_count,
    is_prefix,
    prefix_without_overlap,
    project_dim_with_overflow,
    refines,
    unproject_dim,
)
from .propagation_state import Edge, TensorState
from .propagation_strategies import Candidate, Conflict, Stage, Strategy


@dataclass(frozen=True)
class StepContext:
    """What a step needs besides the op: the mesh, the strategy and stage, the priority level."""

    mesh: MeshAttr
    strategy: Strategy
    stage: Stage
    level: int | None = None


@dataclass
class TensorView:
    """One tensor as an op's factors see it.

    ``replicated`` are the axes no tensor of a shared factor may take (explicitly replicated,
    or held by a dim hidden at this priority level); ``reserved`` adds what only this tensor may
    not take (unreduced axes, overflow axes).
    """

    axes: dict[int, list[AxisRef]]
    growable: dict[int, bool]
    replicated: list[AxisRef]
    reserved: list[AxisRef]


@dataclass(frozen=True)
class FactorPlan:
    """Grow factor ``factor`` towards ``axes``, taken from tensor ``source`` (a position)."""

    factor: int
    source: int
    axes: tuple[AxisRef, ...]
    receivers: tuple[int, ...]


@dataclass(frozen=True)
class DimGrowth:
    """Dim ``dim`` of state ``key`` now has ``axes``; ``source_key`` is where they came from."""

    key: int
    dim: int
    axes: tuple[AxisRef, ...]
    source_key: int


def step(edge: Edge, states: dict[int, TensorState], context: StepContext) -> list[DimGrowth]:
    """Apply ``edge``'s rule once and report every dim that grew."""
    tensors = [states[key] for key in edge.tensors]
    if not any(axes for state in tensors for axes in state.dims):
        return []  # NOTE: nothing is sharded, so no factor has axes to pass on
    views = [view_tensor(state, dims, edge, context)
             for state, dims in zip(tensors, edge.rule.tensors)]
    plans = [plan_factor(factor, edge, tensors, views, context)
             for factor in range(len(edge.rule.sizes))]
    plans = [plan for plan in plans if plan is not None]
    # NOTE: conflicts across factors go to the factor whose source tensor is larger.
    plans.sort(key=lambda plan: (-tensors[plan.source].size, plan.source, plan.factor))
    sources: dict[tuple[int, int], int] = {}
    for plan in plans:
        for position in plan.receivers:
            if extend(views[position], plan.factor, plan.axes, context):
                sources[(position, plan.factor)] = plan.source
    return growths(edge, tensors, views, sources, context)


def view_tensor(state: TensorState, dims_factors, edge: Edge, context: StepContext) -> TensorView:
    """Project one tensor's dims onto its factors; hidden dims project as unsharded."""
    hidden = state.hidden_axes(context.level)
    view = TensorView({}, {}, list(state.replicated) + hidden,
                      list(state.replicated) + hidden + list(state.unreduced))
    for dim, factors in enumerate(dims_factors):
        visible = [] if state.is_hidden(dim, context.level) else state.dims[dim]
        projection = project_dim_with_overflow(visible, factors, edge.rule.sizes, context.mesh)
        view.axes.update(projection.axes)
        view.reserved.extend(projection.overflow)
        for factor in factors:
            view.growable[factor] = state.may_grow(dim, context.level) and not projection.overflow
    return view


def plan_factor(factor: int, edge: Edge, tensors, views, context: StepContext) -> FactorPlan | None:
    """Where factor ``factor`` should grow to in this stage, or None."""
    kind = edge.rule.kinds[factor]
    if kind == "replication":
        return None
    forward, backward = context.stage.directions(edge.name, kind)
    if not (forward or backward):
        return None
    holders = [position for position, dims in enumerate(edge.rule.tensors)
               if any(factor in factors for factors in dims)]
    operands = [position for position in holders if position < edge.num_operands]
    results = [position for position in holders if position >= edge.num_operands]
    senders, receivers = (holders, holders) if forward and backward else (
        (operands, results) if forward else (results, operands))
    candidates = [(position, views[position].axes[factor]) for position in senders
                  if views[position].axes[factor]]
    if not candidates or not receivers:
        return None
    source, axes = choose(candidates, [tensor.size for tensor in tensors], edge, factor, context)
    replicated = [axis for position in holders for axis in views[position].replicated]
    axes = admissible(axes, edge.rule.sizes[factor], replicated, context)
    return FactorPlan(factor, source, tuple(axes), tuple(receivers)) if axes else None


def choose(candidates, sizes, edge: Edge, factor: int, context: StepContext) -> tuple[int, list[AxisRef]]:
    """The source position and axes a factor grows towards.

    Compatible lists (each a prefix of the finest) agree on the finest; otherwise the
    strategy's ``resolve_conflict`` picks one.
    """
    mesh = context.mesh
    finest = max(candidates, key=lambda item: (device_count(item[1], mesh), -item[0]))
    if all(is_prefix(axes, finest[1], mesh) for _, axes in candidates):
        return finest
    conflict = Conflict(edge.name, factor, tuple(
        Candidate(position, tuple(axes), sizes[position], device_count(axes, mesh))
        for position, axes in candidates))
    chosen = context.strategy.choose(conflict)
    return chosen.position, list(chosen.axes)


def admissible(axes, factor_size: int, replicated, context: StepContext) -> list[AxisRef]:
    """The major part of ``axes`` that avoids replicated axes; only its last axis may leave the
    factor unevenly split, and only over at most the factor's size in devices."""
    kept: list[AxisRef] = []
    for axis in axes:
        allowed = prefix_without_overlap(axis, replicated, context.mesh)
        if allowed is None or (allowed.is_sub_axis and not context.strategy.allow_sub_axes):
            break
        count = device_count(kept + [allowed], context.mesh)
        if factor_size % count and factor_size < count:
            break
        kept.append(allowed)
        if allowed != axis or factor_size % count:
            break  # NOTE: an axis that does not divide (padded shards) is the minor-most one
    return kept


def extend(view: TensorView, factor: int, target, context: StepContext) -> bool:
    """Grow one tensor's factor towards ``target`` if its axes are a prefix of it."""
    mesh = context.mesh
    current = view.axes[factor]
    if not view.growable.get(factor) or not is_prefix(current, target, mesh):
        return False
    taken = view.reserved + [axis for other, axes in view.axes.items() if other != factor
                             for axis in axes]
    # a last sub-axis that is a strict prefix of its partner may widen to it
    widening = bool(current) and current[-1] != target[len(current) - 1]
    start = len(current) - 1 if widening else len(current)
    extended = list(current[:start])
    for axis in target[start:]:
        allowed = prefix_without_overlap(axis, taken, mesh)
        if allowed is None or (allowed.is_sub_axis and not context.strategy.allow_sub_axes):
            break
        extended.append(allowed)
        if allowed != axis:
            break
    if not refines(current, extended, mesh):
        return False
    view.axes[factor] = extended
    return True


def growths(edge: Edge, tensors, views, sources, context: StepContext) -> list[DimGrowth]:
    """The dims whose unprojected axes strictly refine what the tensor has."""
    grown = []
    for position, (state, dims) in enumerate(zip(tensors, edge.rule.tensors)):
        for dim, factors in enumerate(dims):
            if not factors or not state.may_grow(dim, context.level):
                continue
            new_axes = unproject_dim(views[position].axes, factors, edge.rule.sizes, context.mesh)
            old_axes = state.dims[dim]
            if not refines(old_axes, new_axes, context.mesh):
                continue
            source = next((sources[(position, factor)] for factor in factors
                           if (position, factor) in sources), position)
            grown.append(DimGrowth(state.key, dim, tuple(new_axes), edge.tensors[source]))
    return grown

