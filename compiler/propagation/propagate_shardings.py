"""Sharding propagation: Shardy's factor-based step driven by staged op priorities.

``analyze_shardings`` computes a sharding for every value of the entry function, with the
provenance of each axis; ``apply_shardings`` writes them into the module; ``propagate_shardings``
is the pass (both steps). User shardings (function arguments and results, sharding constraints,
manual-computation boundaries, shardings already on ops) are never overwritten: only their open
dims grow. Every change strictly refines one open dim and a dim can be refined only finitely
often (its shard count grows and divides the mesh size), so every stage reaches its fixpoint.
See docs/propagation.md.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace

from meshjit.ir import AxisRef, Block, Module, Op, TensorSharding, Value
from meshjit.ir.printer import name_values

from ..sharding.factor_projection import overlaps_any, refines
from ..sharding.factor_rules import FactorRule, rule_from_spec
from ..sharding.provenance import Hop, Origin, ProvenanceTable
from ..tables import Tie, data_flow_ties, rule_of
from .manual_bodies import with_body_result_axes
from .propagation_state import Edge, TensorState
from .propagation_step import DimGrowth, StepContext, step
from .propagation_strategies import (
    BROADCAST,
    GSPMD,
    PASS_THROUGH_OPS,
    SHARDY,
    STRATEGIES,
    Candidate,
    Conflict,
    Grant,
    Stage,
    Strategy,
    prefer_larger_tensor,
    prefer_more_shards,
    register_strategy,
    resolve_propagation,
    strategy_names,
    unregister_strategy,
)

__all__ = [
    "BROADCAST", "GSPMD", "PASS_THROUGH_OPS", "SHARDY", "STRATEGIES", "Candidate", "Conflict", "Grant",
    "PropagationResult", "Stage", "Strategy", "analyze_shardings", "apply_shardings", "prefer_larger_tensor",
    "prefer_more_shards", "propagate_shardings", "register_strategy", "resolve_propagation", "strategy_names",
    "unregister_strategy",
]


@dataclass
class PropagationResult:
    """Per value id the chosen sharding, the function results' shardings, where each axis came
    from (``provenance``, keyed by value id) and the printed name of every tensor
    (``labels``; virtual ones such as ``output 0`` have negative keys)."""

    mesh_name: str | None
    shardings: dict[int, TensorSharding]
    result_shardings: tuple[TensorSharding | None, ...]
    provenance: ProvenanceTable
    labels: dict[int, str]


def identity_rule(shape) -> FactorRule:
    names = " ".join(f"d{dim}" for dim in range(len(shape))) or "[]"
    return rule_from_spec(f"{names} -> {names}", [shape], [shape])


def _tie_rule(tie: Tie) -> FactorRule:
    """Identity between the tied values; a stacked outer value's loop dim is its own factor,
    which never takes axes (a scanned dim stays whole)."""
    if not tie.stacked:
        return identity_rule(tie.inner.type.shape)
    names = " ".join(f"d{dim}" for dim in range(tie.inner.type.rank))
    return rule_from_spec(f"loop {names} -> {names or '[]'}", [tie.outer.type.shape],
                          [tie.inner.type.shape], {"loop": "replication"})


class _Propagator:
    """Builds one TensorState per value and one Edge per op, then runs the stages."""

    def __init__(self, module: Module, strategy: Strategy):
        self.strategy = strategy
        self.func = module.main
        self.names = name_values(self.func)
        self.mesh_name = _single_mesh(module)
        self.mesh = module.mesh(self.mesh_name) if self.mesh_name else None
        self.states: dict[int, TensorState] = {}
        self.edges: list[Edge] = []
        self.output_keys: list[int] = []
        self.virtual_count = 0
        self.provenance = ProvenanceTable()
        self.counts = {"constraint": 0, "manual": 0, "existing": 0}
        # NOTE: partial-manual results seeded open to the free axes, by key: their out_sharding
        self.opened: dict[int, TensorSharding] = {}

    # -- building the graph -----------------------------------------------------------------
    def build(self) -> None:
        func = self.func
        for index, (arg, sharding) in enumerate(zip(func.args, func.arg_shardings)):
            label = self.names[arg.id]
            self._seed(arg.id, label, arg.type.shape, sharding, Origin("input", index, label=label))
        for op in func.body.ops:
            self._add_op(op)
        for index, (value, sharding) in enumerate(zip(func.returns, func.result_shardings)):
            key = self._add_virtual(f"output {index}", value, sharding, Origin("output", index))
            self.edges.append(Edge("return", identity_rule(value.type.shape), [value.id, key], 1))
            self.output_keys.append(key)

    def _add_op(self, op: Op) -> None:
        if op.name == "manual_computation":
            self._add_manual_computation(op)
        else:
            for index, result in enumerate(op.results):
                self._seed_result(op, index, result)
        rule = rule_of(op)
        keys = [value.id for value in op.operands + op.results]
        self.edges.append(Edge(op.name, rule, keys, len(op.operands), op.location))
        if op.name != "manual_computation":
            self._add_regions(op)

    def _add_regions(self, op: Op) -> None:
        """A control flow op's region values are propagated with the program; data-flow edges
        tie each to the values outside it must share a sharding with (its ties)."""
        for region in op.regions:
            for arg in region.args:
                self.states[arg.id] = TensorState.unsharded(arg.id, self.names[arg.id], arg.type.shape)
            for inner in region.ops:
                self._add_op(inner)
        for tie in data_flow_ties(op):
            self.edges.append(Edge("data_flow", _tie_rule(tie), [tie.outer.id, tie.inner.id], 1,
                                   op.location))

    def _seed_result(self, op: Op, index: int, result: Value) -> None:
        label = self.names[result.id]
        if op.name == "sharding_constraint":
            origin = Origin("constraint", self.counts["constraint"], op.location, label)
            self.counts["constraint"] += 1
            self._seed(result.id, label, result.type.shape, op.attrs["sharding"], origin)
            return
        sharding = op.sharding_of(index)
        origin = Origin("existing", self.counts["existing"], op.location, label)
        self.counts["existing"] += sharding is not None
        self._seed(result.id, label, result.type.shape, sharding, origin)

    def _add_manual_computation(self, op: Op) -> None:
        """Its in_shardings pull on the operands through identity edges (Shardy's data-flow
        edges); its out_shardings seed the results. Nothing crosses into the body."""
        number = self.counts["manual"]
        self.counts["manual"] += 1
        for index, (operand, sharding) in enumerate(zip(op.operands, op.attrs["in_shardings"])):
            origin = Origin("manual", number, op.location, f"operand {index}")
            key = self._add_virtual(f"manual {number} operand {index}", operand, sharding, origin)
            self.edges.append(Edge("manual_input", identity_rule(operand.type.shape),
                                   [operand.id, key], 1, op.location))
        for index, (result, sharding) in enumerate(zip(op.results, op.attrs["out_shardings"])):
            origin = Origin("manual", number, op.location, f"result {index}")
            opened = self._open_free_axes(sharding, op.attrs["manual_axes"])
            self._seed(result.id, self.names[result.id], result.type.shape, opened, origin)
            if opened is not sharding:
                self.opened[result.id] = sharding

    def _open_free_axes(self, sharding: TensorSharding, manual_axes) -> TensorSharding:
        """A partial-manual body is partitioned over its free axes like the rest of the program
        (manual_free_axes.py), so its results' dims stay open to them; the manual axes an
        out_sharding leaves out are explicitly replicated (the result is the same along them)."""
        if self.mesh is None or sharding.mesh_name != self.mesh_name:
            return sharding
        if all(name in manual_axes or self.mesh.axis_size(name) == 1 for name in self.mesh.axis_names):
            return sharding
        used = {axis.name for axis in sharding.used_axes()}
        replicated = tuple(sharding.replicated) + tuple(
            AxisRef(name) for name in manual_axes if name not in used)
        dims = tuple(replace(dim, is_closed=False) for dim in sharding.dims)
        return replace(sharding, dims=dims, replicated=replicated)

    def _add_virtual(self, label: str, value: Value, sharding, origin: Origin) -> int:
        """A state for a user sharding that is not a value's (a function result, a manual
        computation's in_sharding); its key is negative so it never clashes with a value id."""
        self.virtual_count += 1
        key = -self.virtual_count
        self._seed(key, label, value.type.shape, sharding, origin)
        return key

    def _seed(self, key: int, label: str, shape, sharding: TensorSharding | None,
              origin: Origin) -> None:
        if sharding is None or sharding.mesh_name != self.mesh_name:
            self.states[key] = TensorState.unsharded(key, label, shape)
            return
        self.states[key] = TensorState.from_sharding(key, label, shape, sharding)
        for axis in sharding.used_axes():
            self.provenance.seed(key, axis, origin)

    # -- running ----------------------------------------------------------------------------
    def run(self) -> None:
        if self.mesh is None:
            return
        levels = sorted({priority or 0 for state in self.states.values() if state.user
                         for priority in state.priority}) or [0]
        edges_of: dict[int, list[int]] = {}
        for index, edge in enumerate(self.edges):
            for key in edge.tensors:
                edges_of.setdefault(key, []).append(index)
        for level in levels:
            for stage in self.strategy.stages:
                self._run_stage(StepContext(self.mesh, self.strategy, stage, level), edges_of)

    def _run_stage(self, context: StepContext, edges_of: dict[int, list[int]]) -> None:
        """A worklist over the edges the stage visits, until no dim grows."""
        visited = [index for index, edge in enumerate(self.edges)
                   if context.stage.visits(edge.name)]
        queue, queued = deque(visited), set(visited)
        while queue:
            index = queue.popleft()
            queued.discard(index)
            edge = self.edges[index]
            for growth in step(edge, self.states, context):
                if not self._grow(growth, edge, context.stage):
                    continue
                for neighbour in edges_of[growth.key]:
                    if neighbour not in queued and context.stage.visits(self.edges[neighbour].name):
                        queue.append(neighbour)
                        queued.add(neighbour)

    def _grow(self, growth: DimGrowth, edge: Edge, stage: Stage) -> bool:
        """Write one growth (re-checked against the current state) and its provenance."""
        state = self.states[growth.key]
        old_axes, new_axes = state.dims[growth.dim], list(growth.axes)
        others = [axis for dim, axes in enumerate(state.dims) if dim != growth.dim for axis in axes]
        others += list(state.replicated) + list(state.unreduced)
        reused = any(overlaps_any(axis, others, self.mesh) for axis in new_axes)
        if reused or not refines(old_axes, new_axes, self.mesh):
            return False
        source = self.states[growth.source_key]
        hop = Hop(edge.name, source.label, state.label, edge.location, stage.name)
        for axis in new_axes:
            if axis not in old_axes:
                self.provenance.carry(growth.source_key, growth.key, axis, hop)
        state.dims[growth.dim] = new_axes
        return True

    def result(self) -> PropagationResult:
        shardings, outputs = {}, (None,) * len(self.output_keys)
        if self.mesh is not None:
            shardings = {key: state.to_sharding(self.mesh_name)
                         for key, state in self.states.items() if key >= 0}
            for key, given in self.opened.items():
                grown = shardings[key]
                dims = tuple(replace(dim, is_closed=True) for dim in grown.dims)
                shardings[key] = replace(grown, dims=dims, replicated=given.replicated)
            outputs = tuple(_with_pending_sum(self.states[key].to_sharding(self.mesh_name), shardings[value.id], given)
                            for key, value, given in zip(self.output_keys, self.func.returns,
                                                         self.func.result_shardings))
        labels = {key: state.label for key, state in self.states.items()}
        return PropagationResult(self.mesh_name, shardings, outputs, self.provenance, labels)


def _with_pending_sum(output: TensorSharding, value: TensorSharding, given) -> TensorSharding:
    """A result the user gave no sharding keeps the pending sum its value's type pinned (an
    explicit ``{U:X}`` type comes back as an unreduced Array, as in JAX)."""
    if given is not None or not value.unreduced or output.unreduced:
        return output
    return replace(output, unreduced=value.unreduced, reduction=value.reduction)


def _single_mesh(module: Module) -> str | None:
    """The one mesh shardings refer to; programs over several meshes are rejected."""
    used = {sharding.mesh_name for sharding in _all_shardings(module) if sharding is not None}
    if not used:
        return module.meshes[0][0] if len(module.meshes) == 1 else None
    if len(used) > 1:
        raise ValueError(f"propagation needs one mesh per program, but shardings use meshes "
                         f"{sorted(used)}")
    return used.pop()


def _all_shardings(module: Module):
    func = module.main
    yield from func.arg_shardings
    yield from func.result_shardings
    for op in _propagated_ops(func.body):
        yield from op.shardings
        if op.name == "sharding_constraint":
            yield op.attrs["sharding"]
        if op.name == "manual_computation":
            yield from op.attrs["in_shardings"]
            yield from op.attrs["out_shardings"]


def _propagated_ops(block: Block):
    """The ops propagation sees: the block's, and those of control flow regions in it (not
    those inside manual computation bodies)."""
    for op in block.ops:
        yield op
        if op.name != "manual_computation":
            for region in op.regions:
                yield from _propagated_ops(region)


def analyze_shardings(module: Module, strategy: str | Strategy = "shardy") -> PropagationResult:
    """Compute every value's sharding without changing the module."""
    strategy = STRATEGIES.resolve(strategy)
    result = _analyze(module, strategy)
    refined = with_body_result_axes(module, result.shardings, lambda body: _analyze(body, strategy))
    return result if refined is None else _analyze(refined, strategy)


def _analyze(module: Module, strategy: Strategy) -> PropagationResult:
    propagator = _Propagator(module, strategy)
    propagator.build()
    propagator.run()
    return propagator.result()


def apply_shardings(module: Module, result: PropagationResult) -> Module:
    """Write a PropagationResult into the module: argument, op result and function result
    shardings."""
    if result.mesh_name is None:
        return module
    func = module.main
    body = _with_shardings(func.body, result.shardings)
    new_func = replace(func, body=body, arg_shardings=tuple(result.shardings[arg.id] for arg in func.args),
                       result_shardings=result.result_shardings)
    funcs = tuple(new_func if other is func else other for other in module.funcs)
    return replace(module, funcs=funcs)


def _with_shardings(block: Block, shardings: dict[int, TensorSharding], *, region: bool = False) -> Block:
    """``block`` with every op's result shardings written, and control flow regions' argument
    and op shardings."""
    ops = []
    for op in block.ops:
        regions = op.regions
        if op.name != "manual_computation":
            regions = tuple(_with_shardings(inner, shardings, region=True) for inner in regions)
        ops.append(replace(op, regions=regions, shardings=tuple(shardings[value.id] for value in op.results)))
    arg_shardings = tuple(shardings[arg.id] for arg in block.args) if region else ()
    return Block(block.args, tuple(ops), block.returns, arg_shardings)


def propagate_shardings(module: Module, strategy: str | Strategy | Callable = "shardy") -> Module:
    """The pass: every value of the entry function gets a sharding.

    ``strategy`` is a registered name (``"shardy"``, ``"gspmd"`` or one given to
    ``register_strategy``), a Strategy, or any callable ``Module -> Module`` that does the whole
    job itself.
    """
    strategy = resolve_propagation(strategy)
    if not isinstance(strategy, Strategy):
        return strategy(module)
    return apply_shardings(module, analyze_shardings(module, strategy))
