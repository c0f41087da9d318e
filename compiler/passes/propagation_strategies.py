"""Propagation strategies as data: ordered stages, each saying which ops may pass which factor
kinds in which direction, plus how a strategy settles conflicts and whether it uses sub-axes."""

from __future__ import annotations

from dataclasses import dataclass

from meshjit.ir.ops import elementwise

# Ops that move every element to one place of the result: Shardy's and GSPMD's first stage.
# ``return`` and ``manual_input`` are the virtual edges to user shardings (propagation_state.Edge).
PASS_THROUGH_OPS = frozenset(elementwise.OPS) | {
    "sharding_constraint", "transpose", "reshape", "squeeze", "expand_dims", "return", "manual_input",
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
class Strategy:
    """A propagation strategy.

    ``stages`` run in order, each to a fixpoint (once per user-priority level). ``prefer`` settles
    a factor whose tensors disagree: ``"larger_tensor"`` takes the axes of the largest tensor
    (ties to the lower operand/result index), ``"more_shards"`` the axes that cut the factor into
    most shards (ties as before). ``allow_sub_axes=False`` never propagates a sub-axis.
    """

    name: str
    stages: tuple[Stage, ...]
    allow_sub_axes: bool = True
    prefer: str = "larger_tensor"

    def __post_init__(self):
        if self.prefer not in ("larger_tensor", "more_shards"):
            raise ValueError(f"strategy {self.name!r}: prefer must be 'larger_tensor' or "
                             f"'more_shards', got {self.prefer!r}")

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
), allow_sub_axes=False, prefer="more_shards")

STRATEGIES = {"shardy": SHARDY, "gspmd": GSPMD}
