"""Propagation strategies as data: ordered stages, each saying which ops may pass which factor
kinds in which direction, plus the function that settles conflicts and whether sub-axes are
used; and the registry that names them for jit, the command line and explain."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from meshjit.ir import AxisRef
from meshjit.ir.ops import elementwise

# Ops that move every element to one place of the result: Shardy's and GSPMD's first stage.
# ``return`` and ``manual_input`` are the virtual edges to user shardings, ``data_flow`` those
# that tie control flow values to their region counterparts (propagation_state.Edge).
PASS_THROUGH_OPS = frozenset(elementwise.OPS) | {
    "sharding_constraint", "transpose", "reshape", "squeeze", "expand_dims", "return", "manual_input",
    "data_flow",
}
DYNAMIC_SLICES = frozenset({"dynamic_slice", "dynamic_update_slice"})
BROADCAST = frozenset({"broadcast_in_dim"})


@dataclass(frozen=True)
class Grant:
    """Lets ``ops`` (None: every op but ``except_ops``) pass factors of ``kinds`` (None: every
    kind) forward (operands to results) and/or backward (results to operands)."""

    ops: frozenset | None = None
    kinds: frozenset | None = None
    forward: bool = True
    backward: bool = True
    except_ops: frozenset = frozenset()

    def covers(self, op_name: str, kind: str | None = None) -> bool:
        if op_name in self.except_ops or (self.ops is not None and op_name not in self.ops):
            return False
        return kind is None or self.kinds is None or kind in self.kinds


@dataclass(frozen=True)
class Stage:
    """One propagation stage, run to a fixpoint: the union of its grants."""

    name: str
    grants: tuple[Grant, ...]

    def visits(self, op_name: str) -> bool:
        return any(grant.covers(op_name) for grant in self.grants)

    def directions(self, op_name: str, kind: str) -> tuple[bool, bool]:
        """(forward, backward) for a factor of ``kind`` on op ``op_name``."""
        granted = [grant for grant in self.grants if grant.covers(op_name, kind)]
        return any(grant.forward for grant in granted), any(grant.backward for grant in granted)


@dataclass(frozen=True)
class Candidate:
    """One tensor's axes for a factor the op's tensors disagree on: its position among the op's
    tensors (operands first), its axes, its size in elements and the shards the axes make."""

    position: int
    axes: tuple[AxisRef, ...]
    tensor_size: int
    shards: int


@dataclass(frozen=True)
class Conflict:
    """A factor of op ``op`` whose tensors hold incompatible axes (no list is a prefix of the
    finest); a strategy's ``resolve_conflict`` picks the candidate the factor grows towards."""

    op: str
    factor: int
    candidates: tuple[Candidate, ...]


ConflictResolver = Callable[[Conflict], Candidate]


def prefer_larger_tensor(conflict: Conflict) -> Candidate:
    """Shardy: the largest tensor's axes win; ties go to the lower position."""
    return max(conflict.candidates, key=lambda candidate: (candidate.tensor_size, -candidate.position))


def prefer_more_shards(conflict: Conflict) -> Candidate:
    """GSPMD: the axes that cut the factor into most shards win; ties as prefer_larger_tensor."""
    return max(conflict.candidates,
               key=lambda candidate: (candidate.shards, candidate.tensor_size, -candidate.position))


@dataclass(frozen=True)
class Strategy:
    """A propagation strategy.

    ``stages`` run in order, each to a fixpoint (once per user-priority level).
    ``resolve_conflict`` settles a factor whose tensors disagree: it gets a Conflict and returns
    one of its candidates (``prefer_larger_tensor`` and ``prefer_more_shards`` are the built-in
    rules). ``allow_sub_axes=False`` never propagates a sub-axis.
    """

    name: str
    stages: tuple[Stage, ...]
    allow_sub_axes: bool = True
    resolve_conflict: ConflictResolver = prefer_larger_tensor

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"a strategy's name must be a non-empty string, got {self.name!r}")
        if not callable(self.resolve_conflict):
            raise TypeError(f"strategy {self.name!r}: resolve_conflict must be a function "
                            f"Conflict -> Candidate, got {self.resolve_conflict!r}")

    def choose(self, conflict: Conflict) -> Candidate:
        """``resolve_conflict`` on ``conflict``, checked to return one of its candidates."""
        chosen = self.resolve_conflict(conflict)
        if chosen not in conflict.candidates:
            raise ValueError(f"strategy {self.name!r}: resolve_conflict returned {chosen!r} for a conflict on "
                             f"{conflict.op}, which is not one of its candidates {list(conflict.candidates)}")
        return chosen

    def __call__(self, module):
        """A strategy is also a pass ``Module -> Module``, so it goes wherever one is accepted
        (``jit(f, propagation=strategy)``)."""
        from .propagate_shardings import propagate_shardings

        return propagate_shardings(module, self)


_PASS_THROUGH = (Grant(PASS_THROUGH_OPS), Grant(DYNAMIC_SLICES, backward=False))

# Shardy's op-priority schedule (op_priority_propagation.cc); each stage adds to the last.
SHARDY = Strategy("shardy", (
    Stage("pass-through ops", _PASS_THROUGH),
    Stage("pass-through factors, broadcast backward", _PASS_THROUGH + (
        Grant(kinds=frozenset({"pass"}), except_ops=BROADCAST),
        Grant(BROADCAST, frozenset({"pass"}), forward=False),
    )),
    Stage("all ops", (Grant(),)),
))

# GSPMD's aggressiveness levels (sharding_propagation.cc): broadcast last, forward very last.
GSPMD = Strategy("gspmd", (
    Stage("level 0: pass-through ops", (Grant(PASS_THROUGH_OPS | DYNAMIC_SLICES),)),
    Stage("level 1: all but broadcast", (Grant(except_ops=BROADCAST),)),
    Stage("level 2: broadcast backward", (Grant(except_ops=BROADCAST),
                                          Grant(BROADCAST, forward=False))),
    Stage("level 3: all ops", (Grant(),)),
), allow_sub_axes=False, resolve_conflict=prefer_more_shards)


class StrategyRegistry:
    """The propagation strategies known by name: ``jit(propagation=name)``, the command line's
    ``--strategy`` and ``explain`` read it. Fill it with ``register_strategy``."""

    def __init__(self, builtins: tuple[Strategy, ...]):
        self._strategies = {strategy.name: strategy for strategy in builtins}
        self._builtins = frozenset(self._strategies)

    def register(self, strategy: Strategy) -> Strategy:
        if not isinstance(strategy, Strategy):
            raise TypeError(f"register_strategy expects a Strategy, got {type(strategy).__name__}: {strategy!r}")
        existing = self._strategies.get(strategy.name)
        if existing is not None and existing != strategy:
            raise ValueError(f"a different propagation strategy is already registered as {strategy.name!r}; "
                             f"pick another name")
        self._strategies[strategy.name] = strategy
        return strategy

    def unregister(self, name: str) -> None:
        if name in self._builtins:
            raise ValueError(f"the built-in propagation strategy {name!r} cannot be unregistered")
        if name not in self._strategies:
            raise ValueError(self._unknown(name))
        del self._strategies[name]

    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self._strategies))

    def resolve(self, strategy: str | Strategy) -> Strategy:
        """A registered strategy by name; a Strategy is returned as it is."""
        if isinstance(strategy, Strategy):
            return strategy
        found = self._strategies.get(strategy) if isinstance(strategy, str) else None
        if found is None:
            raise ValueError(self._unknown(strategy))
        return found

    def _unknown(self, name) -> str:
        return (f"unknown propagation strategy {name!r}; the registered strategies are "
                f"{', '.join(repr(known) for known in self.names())} (or pass a Strategy, or a callable "
                f"Module -> Module; register_strategy adds one by name)")

    def __contains__(self, name) -> bool:
        return name in self._strategies

    def __iter__(self):
        return iter(self.names())


STRATEGIES = StrategyRegistry((SHARDY, GSPMD))


def register_strategy(strategy: Strategy) -> Strategy:
    """Make ``strategy`` known by its name (to jit, the command line and explain); returns it,
    so it also works as ``MINE = register_strategy(Strategy("mine", ...))``."""
    return STRATEGIES.register(strategy)


def unregister_strategy(name: str) -> None:
    """Forget a strategy registered with ``register_strategy`` (the built-ins stay)."""
    STRATEGIES.unregister(name)


def strategy_names() -> tuple[str, ...]:
    """Every registered strategy's name, sorted."""
    return STRATEGIES.names()


def resolve_propagation(propagation):
    """What a ``propagation=`` argument means: a registered name becomes its Strategy, a Strategy
    or a callable ``Module -> Module`` stays; anything else raises ValueError naming the
    registered strategies."""
    if isinstance(propagation, Strategy) or (callable(propagation) and not isinstance(propagation, str)):
        return propagation
    return STRATEGIES.resolve(propagation)
