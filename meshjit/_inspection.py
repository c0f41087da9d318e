"""inspect_array_sharding: outside jit it reports an Array's sharding at once; inside jit it
records the request while tracing, and jit answers it when the function is compiled
(``report_inspected_shardings``) with the sharding propagation chose."""

from __future__ import annotations

from collections.abc import Callable

import optree

from meshjit.compiler.frontend.trace import Tracer
from meshjit.ir import DimSharding, TensorSharding
from meshjit.runtime.array import Array
from meshjit.runtime.devices import devices
from meshjit.runtime.sharding import Sharding, SingleDeviceSharding

from ._shardings import from_ir_sharding
from .tree_util import NAMESPACE

# NOTE: callbacks of inspect_array_sharding calls made while tracing, by traced value id; jit
# hands each its sharding once the function is compiled (report_inspected_shardings).
_PENDING_INSPECTIONS: dict[int, list[Callable[[Sharding], None]]] = {}


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
