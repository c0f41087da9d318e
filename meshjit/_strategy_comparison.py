"""compare_propagation: one program compiled under several propagation strategies, with the
collectives and bytes each one costs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from meshjit.compiler.analysis.collectives import CollectiveRecord


@dataclass(frozen=True)
class StrategyReport:
    """What one propagation strategy costs on a program: its collectives and their total."""

    strategy: str
    collectives: list[CollectiveRecord]
    total_bytes: int


def _rejit(fun, propagation):
    """``fun`` jitted with ``propagation``; a jitted ``fun`` keeps its shardings and statics."""
    from .jit_api import Jitted

    if not isinstance(fun, Jitted):
        return Jitted(fun, propagation=propagation)
    return Jitted(fun._fun, in_shardings=fun._in_shardings, out_shardings=fun._out_shardings,
               static_argnums=fun._static_argnums or None, static_argnames=fun._static_argnames or None,
               donate_argnums=fun._donate_argnums or None, propagation=propagation)


def _strategy_name(strategy) -> str:
    """A built-in's name, a Strategy's ``name``, or a callable's ``__name__``."""
    if isinstance(strategy, str):
        return strategy
    return getattr(strategy, "name", None) or getattr(strategy, "__name__", None) or repr(strategy)


def compare_propagation(fun, *args, strategies: Sequence = ("shardy", "gspmd"), **kwargs) -> dict[str, StrategyReport]:
    """Compile ``fun`` for ``args`` under each propagation strategy (a name or a callable
    ``Module -> Module``) and report, per strategy, the collectives and total bytes per device."""
    reports = {}
    for strategy in strategies:
        name = _strategy_name(strategy)
        records = _rejit(fun, strategy).lower(*args, **kwargs).compile().collectives()
        reports[name] = StrategyReport(name, records, sum(record.total_bytes for record in records))
    return reports
