"""debug_callback: call a host Python function with the values of its operands when the
program runs (``jax.debug.callback`` and ``jax.debug.print``). It has no results; it is the
IR's one effect, so the passes that drop, merge or move pure ops leave it alone
(``has_effect``) and it runs in program order, once per call of the program.

The callable itself never enters the IR: the op's ``callback`` attribute is a number in the
process-wide table below, so the text form stays printable and parseable.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from ..reference import reference_impls
from ..shape_rules import int_attr, shape_rules

OPS = ("debug_callback",)

# Ops whose running is observable: never dead, never merged, never hoisted out of a loop
# (io_callback, the one with results, is defined in callbacks.py).
EFFECT_OPS = frozenset((*OPS, "io_callback"))

_CALLBACKS: dict[int, Callable] = {}
_NUMBERS = itertools.count()


def register_callback(callback: Callable) -> int:
    """The number under which ``callback`` is kept for debug_callback ops to name."""
    number = next(_NUMBERS)
    _CALLBACKS[number] = callback
    return number


def callback_of(number: int) -> Callable:
    """The callable a debug_callback op's ``callback`` attribute names."""
    try:
        return _CALLBACKS[number]
    except KeyError:
        raise KeyError(f"debug_callback: no callback registered under number {number} in this process") from None


def has_effect(op) -> bool:
    """Whether running ``op`` does something besides computing its results: it is an effect op,
    or one of its regions (a loop or branch body) holds one."""
    if op.name in EFFECT_OPS:
        return True
    return any(has_effect(inner) for region in op.regions for inner in region.ops)


def has_effect_with_results(op) -> bool:
    """Whether ``op`` is, or holds in a region, an effect op with results (an io_callback): its
    results cannot be computed without running the effect."""
    if op.name in EFFECT_OPS and op.results:
        return True
    return any(has_effect_with_results(inner) for region in op.regions for inner in region.ops)


def without_effects(op):
    """``op`` with the effect ops in its regions (at any depth) left out: what computing its
    results alone runs. Only for ops where ``has_effect_with_results`` is false (the effect ops
    left out have no results, so nothing else changes)."""
    from dataclasses import replace

    if not op.regions or not has_effect(op):
        return op
    regions = tuple(replace(region, ops=tuple(without_effects(inner) for inner in region.ops
                                              if inner.name not in EFFECT_OPS))
                    for region in op.regions)
    return replace(op, regions=regions)


@shape_rules.register("debug_callback")
def _debug_callback(op, operands, attrs, regions, meshes):
    int_attr(op, attrs, "callback")
    return ()


@reference_impls.register("debug_callback")
def _call(attrs, *operands):
    callback_of(attrs["callback"])(*operands)
    return ()
