"""meshjit.debug: look at how arrays are laid out over devices, inside and outside jit, and
compare propagation strategies on one program."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import optree

from meshjit.compiler.collectives import CollectiveRecord
from meshjit.compiler.trace import Tracer
from meshjit.ir import DimSharding, TensorSharding
from meshjit.runtime.array import Array
from meshjit.runtime.devices import devices
from meshjit.runtime.sharding import Sharding, SingleDeviceSharding
from meshjit.runtime.visualize import visualize_sharding as visualize_sharding

from ._shardings import from_ir_sharding
from .tree_util import NAMESPACE

# NOTE: callbacks of inspect_array_sharding calls made while tracing, by traced value id; jit
# hands each its sharding once the function is compiled (report_inspected_shardings).
_PENDING_INSPECTIONS: dict[int, list[Callable[[Sharding], None]]] = {}


def visualize_array_sharding(arr: Array, *, use_color: bool = True, scale: float = 1.0,
                             min_width: int = 9, max_width: int = 80) -> None:
    """Print a table of which devices hold which part of the 1-d or 2-d array ``arr``."""
    if not isinstance(arr, Array):
        raise TypeError(f"visualize_array_sharding expects a meshjit.Array, got {type(arr).__name__}")
    visualize_sharding(arr.shape, arr.sharding, use_color=use_color, scale=scale,
                       min_width=min_width, max_width=max_width)


def inspect_array_sharding(value, *, callback: Callable[[Sharding], None]) -> None:
    """Call ``callback`` with the sharding of every array in the pytree ``value``.

    Inside a jitted function the callback runs once, when the function is compiled, with the
    sharding propagation chose for that value (as ``jax.debug.inspect_array_sharding``);
    outside jit it runs at once with the Array's own sharding.
    """
    if not callable(callback):
        raise TypeError(f"inspect_array_sharding callback must be callable, got {type(callback).__name__}")
    for index, leaf in enumerate(optree.tree_leaves(value, namespace=NAMESPACE)):
        if isinstance(leaf, Tracer):
            _PENDING_INSPECTIONS.setdefault(leaf.value.id, []).append(callback)
        elif isinstance(leaf, Array):
            callback(leaf.sharding)
        else:
            raise TypeError(f"inspect_array_sharding value leaf {index} must be a meshjit Array or a traced "
                            f"array, got {type(leaf).__name__}; use meshjit.device_put to make an Array")


def _whole_axes(sharding: TensorSharding) -> TensorSharding:
    """The layout an Array can hold: per dim, the whole mesh axes before any sub-axis."""
    dims = []
    for dim in sharding.dims:
        axes = []
        for axis in dim.axes:
            if axis.is_sub_axis:
                break
            axes.append(axis)
        dims.append(DimSharding(tuple(axes)))
    return TensorSharding(sharding.mesh_name, tuple(dims))


def report_inspected_shardings(program) -> None:
    """Give the callbacks of values inspected while tracing ``program`` (a CompiledProgram)
    the shardings propagation chose; jit calls this right after compiling."""
    if not _PENDING_INSPECTIONS:
        return
    module = program.propagated
    func = module.main
    found = {arg.id: (sharding, arg.type.rank) for arg, sharding in zip(func.args, func.arg_shardings)}
    for op in func.body.walk():
        for index, result in enumerate(op.results):
            found[result.id] = (op.sharding_of(index), result.type.rank)
    for value_id, (sharding, rank) in found.items():
        callbacks = _PENDING_INSPECTIONS.pop(value_id, None)
        if not callbacks:
            continue
        if sharding is None:
            runtime_sharding = SingleDeviceSharding(devices()[0])
        else:
            runtime_sharding = from_ir_sharding(_whole_axes(sharding), module.mesh(sharding.mesh_name), rank)
        for callback in callbacks:
            callback(runtime_sharding)


@dataclass(frozen=True)
class StrategyReport:
    """What one propagation strategy costs on a program: its collectives and their total."""

    strategy: str
    collectives: list[CollectiveRecord]
    total_bytes: int


def _rejit(fun, propagation):
    """``fun`` jitted with ``propagation``; a jitted ``fun`` keeps its shardings and statics."""
    from .jit_api import Jitted, jit

    if not isinstance(fun, Jitted):
        return jit(fun, propagation=propagation)
    return jit(fun._fun, in_shardings=fun._in_shardings, out_shardings=fun._out_shardings,
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
        reports[name] = StrategyReport(name, records, sum(record.bytes for record in records))
    return reports
