"""Sharding propagation: Shardy's factor-based step driven by GSPMD-style op stages.

``analyze_shardings`` computes a sharding for every value (plus provenance); ``propagate_shardings``
writes them into the module. User shardings (function arguments and results, sharding
constraints, manual-computation boundaries, shardings already on ops) are never overwritten;
only their open dims may grow. Every step only appends axes, so the fixpoint is reached.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace

from meshjit.ir import Block, Module, TensorSharding
from meshjit.ir.printer import name_values

from ..factor_projection import is_prefix, overlaps_any, project_dim, unproject_dim
from ..factor_rules import FactorRule, rule_from_spec
from ..provenance import Hop, Origin, ProvenanceTable
from ..sharding_rules import ELEMENTWISE, sharding_rules
from .propagation_state import Edge, TensorState, fits

PASS_THROUGH_OPS = frozenset(ELEMENTWISE) | {"transpose", "reshape", "squeeze", "expand_dims", "identity"}


@dataclass(frozen=True)
class Stage:
    """Which ops a stage visits, and through which of them a direction is blocked."""

    name: str
    ops: frozenset | None = None
    no_forward: frozenset = frozenset()
    no_backward: frozenset = frozenset()

    def visits(self, op_name: str) -> bool:
        return self.ops is None or op_name in self.ops


@dataclass(frozen=True)
class Strategy:
    """A propagation strategy: its stages, whether reshapes may split axes into sub-axes, and
    how a conflict between tensors is settled ("larger_tensor" or "more_axes")."""

    name: str
    stages: tuple[Stage, ...]
    allow_sub_axes: bool = True
    prefer: str = "larger_tensor"


BROADCAST = frozenset({"broadcast_in_dim"})

SHARDY = Strategy("shardy", (
    Stage("pass-through", PASS_THROUGH_OPS),
    Stage("all but forward through broadcast", None, no_forward=BROADCAST),
    Stage("all"),
))

GSPMD = Strategy("gspmd", (
    Stage("level 0: pass-through", PASS_THROUGH_OPS),
    Stage("level 1: all but broadcast", None, no_forward=BROADCAST, no_backward=BROADCAST),
    Stage("level 2: broadcast backward", None, no_forward=BROADCAST),
    Stage("level 3: broadcast forward"),
), allow_sub_axes=False, prefer="more_axes")

STRATEGIES = {"shardy": SHARDY, "gspmd": GSPMD}


@dataclass
class PropagationResult:
    """Per value id the chosen sharding, and where each axis came from."""

    mesh_name: str | None
    shardings: dict[int, TensorSharding]
    provenance: ProvenanceTable
    labels: dict[int, str]


def identity_rule(rank: int, shape) -> FactorRule:
    names = " ".join(f"d{dim}" for dim in range(rank)) or "[]"
    return rule_from_spec(f"{names} -> {names}", [shape], [shape])


class _Propagator:
    def __init__(self, module: Module, strategy: Strategy):
        self.module = module
        self.strategy = strategy
        self.func = module.main
        self.mesh_name = _single_mesh(module)
        self.mesh = module.mesh(self.mesh_name) if self.mesh_name else None
        self.states: dict[int, TensorState] = {}
        self.edges: list[Edge] = []
        self.provenance = ProvenanceTable()
        self._virtual = -1

    # -- building the graph -----------------------------------------------------------------
    def _seed(self, key: int, label: str, shape, sharding: TensorSharding | None, origin: Origin | None) -> None:
        if sharding is None or sharding.mesh_name != self.mesh_name:
            self.states[key] = TensorState.unsharded(key, label, shape)
            return
        self.states[key] = TensorState.from_sharding(key, label, shape, sharding)
        for axis in sharding.used_axes():
            self.provenance.seed(key, _axis_text(axis), origin)

    def _virtual_sink(self, label: str, value, sharding, origin, location) -> None:
        key = self._virtual
        self._virtual -= 1
        self._seed(key, label, value.type.shape, sharding, origin)
        rule = identity_rule(value.type.rank, value.type.shape)
        self.edges.append(Edge("identity", rule, [value.id, key], 1, location))

    def build(self) -> None:
        func = self.func
        names = name_values(func)
        for index, (arg, sharding) in enumerate(zip(func.args, func.arg_shardings)):
            self._seed(arg.id, names[arg.id], arg.type.shape, sharding,
                       Origin("input", index, label=names[arg.id]))
        constraint_count = 0
        for op in func.body.ops:
            origin_kind = "constraint" if op.name == "sharding_constraint" else "existing"
            for index, result in enumerate(op.results):
                sharding = op.sharding_of(index)
                if op.name == "sharding_constraint":
                    sharding = op.attrs["sharding"]
                elif op.name == "manual_computation":
                    sharding = op.attrs["out_shardings"][index]
                    origin_kind = "manual"
                self._seed(result.id, names[result.id], result.type.shape, sharding,
                           Origin(origin_kind, constraint_count, op.location))
            constraint_count += op.name == "sharding_constraint"
            if op.name == "manual_computation":
                for index, (operand, sharding) in enumerate(zip(op.operands, op.attrs["in_shardings"])):
                    self._virtual_sink(f"manual input {index}", operand, sharding,
                                       Origin("manual", index, op.location), op.location)
            self.edges.append(Edge(op.name, sharding_rules[op.name](op), [v.id for v in op.operands + op.results],
                                   len(op.operands), op.location))
        for index, (value, sharding) in enumerate(zip(func.returns, func.result_shardings)):
            self._virtual_sink(f"output {index}", value, sharding, Origin("output", index), None)

    # -- one step ---------------------------------------------------------------------------
    def _project(self, state: TensorState, dims_factors, rule: FactorRule, level: int | None):
        factor_axes, factor_open = {}, {}
        for dim, factors in enumerate(dims_factors):
            hidden = state.user and level is not None and (state.priority[dim] or 0) > level
            axes = [] if hidden else state.dims[dim]
            factor_axes.update(project_dim(axes, factors, rule.sizes, self.mesh,
                                           allow_sub_axes=self.strategy.allow_sub_axes))
            for factor in factors:
                factor_open[factor] = state.open[dim]
        return factor_axes, factor_open

    def _target(self, factor: int, rule: FactorRule, holders, projections):
        candidates = [(position, projections[position][0][factor]) for position in holders
                      if projections[position][0][factor]]
        if not candidates:
            return None, None
        longest_position, longest = max(candidates, key=lambda item: len(item[1]))
        if all(is_prefix(axes, longest) for _, axes in candidates):
            source, target = longest_position, longest
        elif self.strategy.prefer == "more_axes":
            source, target = longest_position, longest
        else:
            source, target = max(candidates, key=lambda item: (self._size_of(item[0]), -item[0]))
        replicated = [axis for position in holders for axis in self._state_at(position).replicated]
        kept = []
        for axis in fits(target, rule.sizes[factor], self.mesh):
            if overlaps_any(axis, replicated, self.mesh):
                break
            kept.append(axis)
        return source, kept

    def step(self, edge: Edge, stage: Stage, level: int | None) -> list[int]:
        """Apply the edge's rule once; returns the keys of tensors that changed."""
        self._edge = edge
        rule = edge.rule
        tensors = rule.tensors
        projections = [self._project(self.states[key], dims, rule, level) for key, dims in zip(edge.tensors, tensors)]
        may_update = [
            (position < edge.num_operands and edge.name not in stage.no_backward)
            or (position >= edge.num_operands and edge.name not in stage.no_forward)
            for position in range(len(edge.tensors))
        ]
        holders = {factor: [p for p, dims in enumerate(tensors) if any(factor in fs for fs in dims)]
                   for factor in range(len(rule.sizes))}
        order = sorted(range(len(rule.sizes)), key=lambda f: -max((self._size_of(p) for p in holders[f]), default=0))
        sources: dict[tuple[int, int], int] = {}
        for factor in order:
            if rule.kinds[factor] == "replication":
                continue
            source, target = self._target(factor, rule, holders[factor], projections)
            if not target:
                continue
            for position in holders[factor]:
                if may_update[position] and self._extend(projections[position], factor, target, position, tensors):
                    sources[(position, factor)] = source
        return self._write_back(edge, projections, sources, stage)

    def _extend(self, projection, factor: int, target, position: int, tensors) -> bool:
        factor_axes, factor_open = projection
        current = factor_axes[factor]
        if not factor_open[factor] or len(current) >= len(target) or not is_prefix(current, target):
            return False
        others = [axis for other, axes in factor_axes.items() if other != factor for axis in axes]
        others += list(self._state_at(position).replicated) + list(self._state_at(position).unreduced)
        extended = list(current)
        for axis in target[len(current):]:
            if overlaps_any(axis, others, self.mesh):
                break
            extended.append(axis)
        if len(extended) == len(current):
            return False
        factor_axes[factor] = extended
        return True

    def _write_back(self, edge: Edge, projections, sources, stage: Stage) -> list[int]:
        changed = []
        for position, (key, dims) in enumerate(zip(edge.tensors, edge.rule.tensors)):
            state = self.states[key]
            factor_axes = projections[position][0]
            touched = False
            for dim, factors in enumerate(dims):
                if not state.open[dim] or not factors:
                    continue
                new_axes = unproject_dim(factor_axes, factors, edge.rule.sizes, self.mesh)
                if len(new_axes) <= len(state.dims[dim]) or not is_prefix(state.dims[dim], new_axes):
                    continue
                source = next((sources[(position, f)] for f in factors if (position, f) in sources), None)
                for axis in new_axes[len(state.dims[dim]):]:
                    source_key = edge.tensors[source] if source is not None else key
                    hop = Hop(edge.name, self.states[source_key].label, state.label, edge.location, stage.name)
                    self.provenance.carry(source_key, key, _axis_text(axis), hop)
                state.dims[dim] = new_axes
                touched = True
            if touched:
                changed.append(key)
        return changed

    def _state_at(self, position: int) -> TensorState:
        return self.states[self._edge.tensors[position]]

    def _size_of(self, position: int) -> int:
        return self._state_at(position).size

    # -- driver -----------------------------------------------------------------------------
    def run(self) -> None:
        if self.mesh is None:
            return
        levels = sorted({dim_priority or 0 for state in self.states.values() if state.user
                         for dim_priority in state.priority}) or [0]
        by_tensor: dict[int, list[int]] = {}
        for index, edge in enumerate(self.edges):
            for key in edge.tensors:
                by_tensor.setdefault(key, []).append(index)
        for level in levels:
            for stage in self.strategy.stages:
                self._run_stage(stage, level, by_tensor)

    def _run_stage(self, stage: Stage, level: int, by_tensor) -> None:
        queue = deque(index for index, edge in enumerate(self.edges) if stage.visits(edge.name))
        queued = set(queue)
        while queue:
            index = queue.popleft()
            queued.discard(index)
            for key in self.step(self.edges[index], stage, level):
                for neighbour in by_tensor[key]:
                    if neighbour not in queued and stage.visits(self.edges[neighbour].name):
                        queue.append(neighbour)
                        queued.add(neighbour)

    def result(self) -> PropagationResult:
        shardings = {}
        if self.mesh is not None:
            shardings = {key: state.to_sharding(self.mesh_name) for key, state in self.states.items() if key >= 0}
        labels = {key: state.label for key, state in self.states.items()}
        return PropagationResult(self.mesh_name, shardings, self.provenance, labels)


def _axis_text(axis) -> str:
    return axis.name if axis.size is None else f"{axis.name}:({axis.pre_size}){axis.size}"


def _single_mesh(module: Module) -> str | None:
    """The one mesh shardings refer to; programs over several meshes are rejected."""
    used = {sharding.mesh_name for sharding in _all_shardings(module) if sharding is not None}
    if not used:
        return module.meshes[0][0] if len(module.meshes) == 1 else None
    if len(used) > 1:
        raise ValueError(f"propagation needs one mesh per program, but shardings use meshes {sorted(used)}")
    return used.pop()


def _all_shardings(module: Module):
    func = module.main
    yield from func.arg_shardings
    yield from func.result_shardings
    for op in func.body.ops:
        yield from op.shardings
        if op.name == "sharding_constraint":
            yield op.attrs["sharding"]


def analyze_shardings(module: Module, strategy: str | Strategy = "shardy") -> PropagationResult:
    """Compute every value's sharding without changing the module."""
    chosen = STRATEGIES.get(strategy) if isinstance(strategy, str) else strategy
    if chosen is None:
        raise ValueError(f"unknown propagation strategy {strategy!r}; expected one of {sorted(STRATEGIES)} or a Strategy")
    propagator = _Propagator(module, chosen)
    propagator.build()
    propagator.run()
    return propagator.result()


def apply_shardings(module: Module, result: PropagationResult) -> Module:
    """Write a PropagationResult into the module: argument, op-result and function-result shardings."""
    if result.mesh_name is None:
        return module
    func = module.main
    shardings = result.shardings
    ops = tuple(replace(op, shardings=tuple(shardings[value.id] for value in op.results)) for op in func.body.ops)
    arg_shardings = tuple(shardings[arg.id] for arg in func.args)
    result_shardings = tuple(given if given is not None else shardings[value.id]
                             for given, value in zip(func.result_shardings, func.returns))
    body = Block(func.body.args, ops, func.body.returns)
    new_func = replace(func, body=body, arg_shardings=arg_shardings, result_shardings=result_shardings)
    return replace(module, funcs=tuple(new_func if f is func else f for f in module.funcs))


def propagate_shardings(module: Module, strategy: str | Strategy | Callable = "shardy") -> Module:
    """The pass: every value of the entry function gets a sharding."""
    if callable(strategy) and not isinstance(strategy, Strategy):
        return strategy(module)
    return apply_shardings(module, analyze_shardings(module, strategy))
