"""Automatic sharding search: choose the layouts of the arguments and results marked AUTO.

The search state gives each AUTO tensor a layout, or leaves it open for propagation to fill
from the rest of the program. A state is scored by compiling it for real: propagation, the
partitioner (with every partition rule, so an op's own plans count), CSE and DCE, then the
per-device program's collectives under the alpha-beta model (cost.CostModel), its arithmetic at
the device's flop rate, and its peak live bytes (memory.py) against ``memory_budget_bytes``.
A state that does not fit ranks after every state that does, by how far it is over.

The search starts from propagation's own answer (every AUTO tensor open) and runs a beam over
*roles*: AUTO tensors of the same shape and dtype used by the same ops in the same positions
(the weights of repeated layers) take one layout together, largest role first, each tried in
every layout the mesh allows; later roles stay open meanwhile, so propagation completes a
choice consistently (a weight split one way pulls the next layer's weight along). Sweeps repeat
until nothing improves, then each tensor of a shared role is refined alone, while the time
limit allows. See docs/auto-sharding.md.
"""

from __future__ import annotations

import itertools
import math
import time
import warnings
from dataclasses import dataclass, field, replace

from meshjit.ir import AxisRef, DimSharding, Module, TensorSharding
from meshjit.ir.printer import format_sharding, name_values

from ..analysis.collectives import COLLECTIVES
from ..analysis.cost import CostModel, collective_bytes, op_flops, ring_steps, value_bytes
from ..analysis.memory import peak_memory_bytes
from ..optimize.cse import eliminate_common_subexpressions
from ..optimize.dce import eliminate_dead_code
from ..partitioning.partition import partition_with_report
from ..propagation.normalize_boundaries import normalize_boundaries
from ..propagation.propagate_shardings import propagate_shardings, resolve_propagation

ARGUMENT, RESULT = "argument", "result"


@dataclass(frozen=True)
class SearchRequest:
    """What to search: the positions of the AUTO arguments and results over mesh ``mesh_name``,
    the per-device memory budget (None: unlimited), the beam width and a time limit."""

    auto_args: tuple[int, ...] = ()
    auto_results: tuple[int, ...] = ()
    mesh_name: str = "mesh"
    memory_budget_bytes: int | None = None
    beam_width: int = 2
    time_limit_seconds: float = 3.0
    cost_model: CostModel | None = None

    def __bool__(self) -> bool:
        return bool(self.auto_args or self.auto_results)


@dataclass(frozen=True)
class Score:
    """One compiled candidate: estimated seconds (collectives plus compute), collective bytes
    each device sends, peak bytes per device, and whether that fits the budget."""

    seconds: float
    collective_seconds: float
    compute_seconds: float
    collective_bytes: float
    collectives: int
    memory_bytes: int
    over_budget_bytes: int

    @property
    def fits(self) -> bool:
        return self.over_budget_bytes == 0

    def key(self) -> tuple[float, float]:
        return (self.over_budget_bytes, self.seconds)


@dataclass(frozen=True)
class Alternative:
    """A complete choice (every AUTO tensor's layout, open ones as propagation filled them) and
    its score."""

    arg_shardings: tuple[tuple[int, TensorSharding], ...]
    result_shardings: tuple[tuple[int, TensorSharding], ...]
    score: Score

    def describe(self, names: dict[tuple[str, int], str]) -> str:
        parts = [f"{names[(ARGUMENT, index)]} {format_sharding(sharding)}" for index, sharding in self.arg_shardings]
        parts += [f"{names[(RESULT, index)]} {format_sharding(sharding)}" for index, sharding in self.result_shardings]
        return ", ".join(parts)


@dataclass
class SearchReport:
    """What the search found: the chosen alternative, the best distinct ones it scored (best
    first), how many candidates it compiled, how long it took, and the budget and cost model."""

    chosen: Alternative
    alternatives: list[Alternative]
    evaluations: int
    seconds: float
    memory_budget_bytes: int | None
    cost_model: CostModel
    names: dict[tuple[str, int], str] = field(default_factory=dict)
    stopped_by_time_limit: bool = False
    seed: Alternative | None = None

    def format(self, top: int = 5) -> str:
        budget = "none" if self.memory_budget_bytes is None else f"{self.memory_budget_bytes} bytes/device"
        lines = [f"automatic sharding search: {self.evaluations} candidates compiled in {self.seconds:.2f} s"
                 + (" (stopped by the time limit)" if self.stopped_by_time_limit else ""),
                 *([f"  propagation alone (the seed): {self.seed.score.seconds * 1e6:.1f} us, "
                    f"{self.seed.score.collective_bytes:.0f} bytes/device, peak {self.seed.score.memory_bytes} "
                    f"bytes/device"] if self.seed is not None else []),
                 f"  memory budget: {budget}; cost model: {self.cost_model.source} (alpha "
                 f"{self.cost_model.latency:.2e} s, beta 1/{self.cost_model.bandwidth:.3g} s/byte, "
                 f"{self.cost_model.flops_per_second:.3g} flop/s)"]
        for rank, alternative in enumerate(self.alternatives[:top]):
            score = alternative.score
            mark = "*" if alternative == self.chosen else " "
            fits = "" if score.fits else f", over budget by {score.over_budget_bytes} bytes"
            lines.append(f" {mark}{rank + 1}. {score.seconds * 1e6:.1f} us ({score.collective_seconds * 1e6:.1f} us "
                         f"collectives, {score.compute_seconds * 1e6:.1f} us compute), {score.collective_bytes:.0f} "
                         f"bytes/device in {score.collectives} collectives, peak {score.memory_bytes} bytes/device"
                         f"{fits}")
            lines.append(f"      {alternative.describe(self.names)}")
        return "\n".join(lines) + "\n"


# -- the layouts a tensor may take -----------------------------------------------------------------
def layout_options(shape, mesh, mesh_name: str) -> list[TensorSharding]:
    """Every layout of whole mesh axes that divides ``shape``: each axis shards one dim or none,
    axes of one dim in mesh order; the replicated layout first."""
    names = mesh.axis_names
    options, seen = [], set()
    for placement in itertools.product(range(len(shape) + 1), repeat=len(names)):
        dims = [[] for _ in shape]
        for name, dim in zip(names, placement):
            if dim < len(shape):
                dims[dim].append(name)
        if any(size % math.prod(mesh.axis_size(name) for name in axes) for size, axes in zip(shape, dims)):
            continue
        key = tuple(tuple(axes) for axes in dims)
        if key in seen:
            continue
        seen.add(key)
        options.append(TensorSharding(mesh_name, tuple(DimSharding(tuple(AxisRef(name) for name in axes))
                                                       for axes in dims)))
    return sorted(options, key=lambda option: len(option.used_axes()))


def open_sharding(mesh_name: str, rank: int) -> TensorSharding:
    """Every dim open and empty: propagation fills it."""
    return TensorSharding(mesh_name, tuple(DimSharding((), is_closed=False) for _ in range(rank)))


# -- roles -----------------------------------------------------------------------------------------
def _roles(module: Module, tensors: list[tuple[str, int]]) -> list[list[tuple[str, int]]]:
    """AUTO tensors grouped by shape, dtype and how the program uses them (consumer ops and
    operand positions for arguments, the producing op for results), largest first."""
    func = module.main
    uses: dict[int, list] = {}
    producers: dict[int, str] = {}
    for op in func.body.ops:
        for position, operand in enumerate(op.operands):
            uses.setdefault(operand.id, []).append((op.name, position))
        for result in op.results:
            producers[result.id] = op.name
    groups: dict[tuple, list] = {}
    for kind, index in tensors:
        value = func.args[index] if kind == ARGUMENT else func.returns[index]
        usage = tuple(sorted(uses.get(value.id, []))) if kind == ARGUMENT else producers.get(value.id, "argument")
        key = (kind, value.type.shape, value.type.dtype, usage)
        groups.setdefault(key, []).append((kind, index))
    ordered = sorted(groups.items(), key=lambda item: -math.prod(item[0][1]) * len(item[1]))
    return [members for _, members in ordered]


def _searched_roles(module: Module, tensors) -> list[list[tuple[str, int]]]:
    """The roles the search tries layouts for: those within SMALL_FRACTION of the largest AUTO
    tensor's size. Smaller ones (biases, scales) stay open: propagation lays them out like the
    values they meet, which costs next to nothing either way."""
    roles = _roles(module, tensors)
    func = module.main

    def size(tensor) -> int:
        kind, index = tensor
        return (func.args[index] if kind == ARGUMENT else func.returns[index]).type.size

    largest = max((size(tensor) for tensor in tensors), default=0)
    return [role for role in roles if size(role[0]) * SMALL_FRACTION >= largest]


# NOTE: an AUTO tensor this many times smaller than the largest is left to propagation.
SMALL_FRACTION = 16


# -- scoring ---------------------------------------------------------------------------------------
class _Evaluator:
    """Compiles candidate states of the module and scores them (memoised)."""

    def __init__(self, module: Module, request: SearchRequest, strategy, cost_model: CostModel):
        self.module = module
        self.request = request
        self.strategy = strategy
        self.cost_model = cost_model
        self.mesh = module.mesh(request.mesh_name)
        self.cache: dict[tuple, Alternative | None] = {}

    def apply(self, state: dict[tuple[str, int], TensorSharding | None]) -> Module:
        func = self.module.main
        args = list(func.arg_shardings)
        results = list(func.result_shardings)
        for (kind, index), sharding in state.items():
            target, value = (args, func.args[index]) if kind == ARGUMENT else (results, func.returns[index])
            target[index] = sharding if sharding is not None else open_sharding(self.request.mesh_name, value.type.rank)
        new_func = replace(func, arg_shardings=tuple(args), result_shardings=tuple(results))
        return replace(self.module, funcs=(new_func,))

    def evaluate(self, state: dict) -> Alternative | None:
        key = tuple(sorted(state.items(), key=lambda item: item[0]))
        if key in self.cache:
            return self.cache[key]

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                propagated = normalize_boundaries(propagate_shardings(self.apply(state), self.strategy))
                partitioned = partition_with_report(propagated).module
            partitioned = eliminate_dead_code(eliminate_common_subexpressions(partitioned))
        except ValueError:
            self.cache[key] = None  # NOTE: a layout the partitioner refuses is no candidate
            return None
        func = propagated.main
        args = tuple((index, _close(func.arg_shardings[index])) for kind, index in sorted(state) if kind == ARGUMENT)
        results = tuple((index, _close(func.result_shardings[index])) for kind, index in sorted(state)
                        if kind == RESULT)
        alternative = Alternative(args, results, self.score(partitioned))
        self.cache[key] = alternative
        return alternative

    def score(self, partitioned: Module) -> Score:
        sent = seconds = flops = 0.0
        count = 0
        for op in partitioned.main.body.walk():
            if op.name in COLLECTIVES:
                group = math.prod(self.mesh.axis_size(name) for name in op.attrs.get("axes", ()))
                bytes_sent = collective_bytes(op.name, value_bytes(op.operands[0]), value_bytes(op.result), group)
                sent += bytes_sent
                seconds += self.cost_model.collective_seconds(bytes_sent, ring_steps(op.name, group))
                count += 1
            else:
                flops += op_flops(op)
        memory = peak_memory_bytes(partitioned)
        budget = self.request.memory_budget_bytes
        over = max(0, memory - budget) if budget is not None else 0
        compute = self.cost_model.compute_seconds(flops)
        return Score(seconds + compute, seconds, compute, sent, count, memory, over)


# -- the search ------------------------------------------------------------------------------------
def _ranked(alternatives) -> list[Alternative]:
    distinct: dict[tuple, Alternative] = {}
    for alternative in alternatives:
        if alternative is not None:
            distinct.setdefault((alternative.arg_shardings, alternative.result_shardings), alternative)
    return sorted(distinct.values(), key=lambda alternative: alternative.score.key())


class _Search:
    """The beam over roles (see the module docstring); states are dicts from AUTO tensor to a
    layout or None (open), scored through the evaluator's cache."""

    def __init__(self, evaluator: _Evaluator, roles, options, deadline: float, width: int):
        self.evaluator = evaluator
        self.roles = roles
        self.options = options
        self.deadline = deadline
        self.width = max(1, width)
        self.timed_out = False

    def out_of_time(self) -> bool:
        self.timed_out = self.timed_out or time.perf_counter() > self.deadline
        return self.timed_out

    def sweep(self, beam: list[dict], groups, timed: bool = True) -> list[dict]:
        """One pass over ``groups``: each beam state tries every layout for the group's tensors;
        the best ``width`` states go on to the next group."""
        for group in groups:
            candidates = list(beam)
            for state in beam:
                for option in self.options[group[0]]:
                    if timed and self.out_of_time():
                        return self.best(candidates)
                    candidate = {**state, **{tensor: option for tensor in group}}
                    self.evaluator.evaluate(candidate)
                    candidates.append(candidate)
            beam = self.best(candidates)
        return beam

    def best(self, states: list[dict]) -> list[dict]:
        scored = []
        seen = set()
        for state in states:
            alternative = self.evaluator.evaluate(state)
            if alternative is None:
                continue
            identity = (alternative.arg_shardings, alternative.result_shardings)
            if identity in seen:
                continue
            seen.add(identity)
            scored.append((alternative.score.key(), len(scored), state))
        scored.sort(key=lambda item: item[:2])
        return [state for _, _, state in scored[:self.width]]

    def run(self, seed: dict) -> None:
        """A first sweep over the roles one state at a time (always whole, so the answer does
        not depend on the machine's speed); then sweeps with the full beam while they improve,
        and each member of a shared role alone, while the time limit allows."""
        width, self.width = self.width, 1
        beam = self.sweep([seed], self.roles, timed=False)
        best = self.evaluator.evaluate(beam[0]).score.key()
        self.width = width
        beam = self.best(beam + [state for state in self.ranked_states() if state not in beam])
        while not self.out_of_time():
            beam = self.sweep(beam, self.roles)
            score = self.evaluator.evaluate(beam[0]).score.key()
            if score >= best:
                break
            best = score
        self.refine_members(beam[0])

    def refine_members(self, state: dict) -> None:
        """Each member of a shared role alone, tried in the layouts the best states gave its
        role (the repeated layers may want different ones, e.g. to fit the budget)."""
        self.width = 1
        leading = [dict(key) for key in self.ranked_keys(4)]
        for role in (role for role in self.roles if len(role) > 1):
            layouts = list(dict.fromkeys(candidate[role[0]] for candidate in leading if candidate.get(role[0])))
            for tensor in role:
                candidates = [state] + [{**state, tensor: layout} for layout in layouts]
                if self.out_of_time():
                    return
                state = self.best(candidates)[0]

    def ranked_keys(self, count: int) -> list[tuple]:
        scored = [(alternative.score.key(), key) for key, alternative in self.evaluator.cache.items()
                  if alternative is not None]
        return [key for _, key in sorted(scored, key=lambda item: item[0])][:count]

    def ranked_states(self) -> list[dict]:
        """The states scored so far, best first."""
        return [dict(key) for key in self.ranked_keys(self.width)]


def search_shardings(module: Module, request: SearchRequest, strategy="shardy",
                     cost_model: CostModel | None = None) -> tuple[Module, SearchReport]:
    """The module with every AUTO argument and result laid out as the search chose (closed
    shardings of whole mesh axes), and the report of what it compared."""
    started = time.perf_counter()
    strategy = resolve_propagation(strategy)
    cost_model = cost_model or request.cost_model or CostModel()
    evaluator = _Evaluator(module, request, strategy, cost_model)
    func = module.main
    tensors = [(ARGUMENT, index) for index in request.auto_args] + [(RESULT, index) for index in request.auto_results]
    options = {}
    for kind, index in tensors:
        value = func.args[index] if kind == ARGUMENT else func.returns[index]
        options[(kind, index)] = layout_options(value.type.shape, evaluator.mesh, request.mesh_name)
    seed = {tensor: None for tensor in tensors}
    search = _Search(evaluator, _searched_roles(module, tensors), options,
                     started + request.time_limit_seconds, request.beam_width)
    seeded = evaluator.evaluate(seed)
    if seeded is None:
        raise ValueError("automatic sharding search: the program does not partition even with every AUTO "
                         "layout left to propagation")
    search.run(seed)
    ranked = _ranked(evaluator.cache.values())
    chosen = ranked[0]
    budget = request.memory_budget_bytes
    if budget is not None and not chosen.score.fits:
        raise ValueError(f"jit memory_budget_bytes={budget}: no layout the automatic sharding search found fits; "
                         f"the smallest needs {min(a.score.memory_bytes for a in ranked)} bytes per device")
    report = SearchReport(chosen, ranked, len(evaluator.cache), time.perf_counter() - started, budget, cost_model,
                          _names(module, tensors), search.timed_out, seeded)
    return evaluator.apply(_closed(chosen)), report


def _closed(alternative: Alternative) -> dict:
    state = {(ARGUMENT, index): _close(sharding) for index, sharding in alternative.arg_shardings}
    state.update({(RESULT, index): _close(sharding) for index, sharding in alternative.result_shardings})
    return state


def _close(sharding: TensorSharding) -> TensorSharding:
    return TensorSharding(sharding.mesh_name, tuple(DimSharding(dim.axes) for dim in sharding.dims), sharding.replicated)


def _names(module: Module, tensors) -> dict[tuple[str, int], str]:
    names = name_values(module.main)
    return {(kind, index): (names[module.main.args[index].id] if kind == ARGUMENT else f"output {index}")
            for kind, index in tensors}
