"""Check mode's comparison: a partitioned program against the unsharded reference interpreter.

``first_mismatch`` interprets the propagated global module and its per-device module side by
side and names the first op whose per-device values differ from the global values they stand
for (the partitioner's ``value_map`` says which local value stands for which global one, and
in which layout, pending reductions included). ``explain_mismatch`` goes on to the optimisation
passes when the partitioner's own output is right.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from meshjit.ir import Block, MeshAttr, Module, TensorSharding, interpret
from meshjit.ir.layout import shard_array, unshard_array
from meshjit.ir.printer import format_sharding, name_values, op_lines

from . import pipeline
from .partitioning.partition import PartitionResult, partition_with_report
from meshjit.ir.dtypes import kind_of

_COMBINE = {"sum": np.sum, "max": np.max, "min": np.min}
# NOTE: partitioned sums add in another order than the reference; these bound the rounding.
RELATIVE_TOLERANCE = 1e-4
ABSOLUTE_TOLERANCE = 1e-5


class PartitioningMismatchError(RuntimeError):
    """A partitioned program computed a value that differs from the unsharded program's."""


# -- comparing arrays ---------------------------------------------------------------------------
def _scale(array: np.ndarray) -> float:
    """The magnitude rounding errors are measured against: the largest finite element."""
    if kind_of(array.dtype) not in "fc" or array.size == 0:
        return 1.0
    finite = np.abs(array[np.isfinite(array)])
    return max(1.0, float(finite.max())) if finite.size else 1.0


def values_close(expected: np.ndarray, actual: np.ndarray, scale: float | None = None) -> bool:
    """Equal for integers and booleans; equal up to rounding (NaN matching NaN) for floats."""
    expected, actual = np.asarray(expected), np.asarray(actual)
    if expected.shape != actual.shape:
        return False
    if kind_of(expected.dtype) not in "fc":
        return bool(np.array_equal(expected, actual))
    tolerance = ABSOLUTE_TOLERANCE * (scale if scale is not None else _scale(expected))
    return bool(np.allclose(actual, expected, rtol=RELATIVE_TOLERANCE, atol=tolerance, equal_nan=True))


def differing_outputs(expected: Sequence, actual: Sequence) -> list[int]:
    """The positions where two lists of output arrays disagree."""
    return [index for index, (want, got) in enumerate(zip(expected, actual))
            if not values_close(np.asarray(want), np.asarray(got))]


def describe_difference(expected: np.ndarray, actual: np.ndarray, inside: np.ndarray | None = None) -> str:
    """The element that differs most: its index, the expected and the computed value."""
    expected, actual = np.asarray(expected), np.asarray(actual)
    if expected.shape != actual.shape:
        return f"shape {actual.shape} where {expected.shape} was expected"
    if kind_of(expected.dtype) in "fc":
        error = np.abs(expected.astype(np.float64) - actual.astype(np.float64))
        error = np.where(np.isnan(expected) & np.isnan(actual), 0.0, np.nan_to_num(error, nan=np.inf))
    else:
        error = (expected != actual).astype(np.float64)
    if inside is not None:
        error = np.where(inside, error, 0.0)
    index = np.unravel_index(int(np.argmax(error)), error.shape) if error.ndim else ()
    where = f" at index {tuple(int(i) for i in index)}" if index else ""
    return f"expected {_element(expected[index])}, got {_element(actual[index])}{where}"


def _element(value) -> str:
    value = np.asarray(value).item()
    return format(value, ".7g") if isinstance(value, float) else repr(value)


# -- running modules so that every value can be read --------------------------------------------
def interpret_all(module: Module, arguments: Sequence) -> dict[int, np.ndarray]:
    """Every top-level value of ``module.main`` (arguments and op results) by value id."""
    func = module.main
    values = list(func.args) + [result for op in func.body.ops for result in op.results]
    probe = replace(func, body=Block(func.body.args, func.body.ops, tuple(values)),
                    result_shardings=(None,) * len(values))
    funcs = tuple(probe if other is func else other for other in module.funcs)
    results = interpret(replace(module, funcs=funcs), *arguments)
    return {value.id: array for value, array in zip(values, results)}


def spmd_mesh(module: Module) -> MeshAttr:
    return module.mesh(module.main.spmd_mesh)


def stacked_arguments(partitioned: Module, arguments: Sequence) -> list[np.ndarray]:
    """Global arguments laid out as the per-device module's arguments, one row per device."""
    mesh = spmd_mesh(partitioned)
    return [shard_array(np.asarray(argument), sharding, mesh)
            for argument, sharding in zip(arguments, partitioned.main.arg_shardings)]


def global_outputs(partitioned: Module, stacked: Sequence, shapes) -> list[np.ndarray | None]:
    """The per-device module's outputs put back together (None where replicas disagree)."""
    mesh = spmd_mesh(partitioned)
    outputs = []
    for output, sharding, shape in zip(interpret(partitioned, *stacked), partitioned.main.result_shardings, shapes):
        try:
            outputs.append(unshard_array(output, sharding, mesh, shape))
        except ValueError:
            outputs.append(None)
    return outputs


# -- comparing one global value with its per-device form ----------------------------------------
def _reduce_pending(stacked: np.ndarray, sharding: TensorSharding, mesh: MeshAttr) -> np.ndarray | None:
    """Partial results combined over their unreduced axes (None for unreduced sub-axes)."""
    if not sharding.unreduced:
        return stacked
    if any(axis.is_sub_axis for axis in sharding.unreduced):
        return None
    grid = stacked.reshape(tuple(size for _, size in mesh.axes) + stacked.shape[1:])
    axes = tuple(mesh.axis_names.index(axis.name) for axis in sharding.unreduced)
    reduced = _COMBINE[sharding.reduction](grid, axis=axes, keepdims=True).astype(stacked.dtype)
    return np.broadcast_to(reduced, grid.shape).reshape(stacked.shape)


def device_name(mesh: MeshAttr, position: int) -> str:
    coordinates = ", ".join(f"{name}={index}" for name, index in mesh.coordinates(position).items())
    return f"device {mesh.devices[position]} ({coordinates})"


def first_bad_device(expected: np.ndarray, stacked: np.ndarray, sharding: TensorSharding | None,
                     mesh: MeshAttr) -> str | None:
    """Which device's shard of ``expected`` differs from its row of ``stacked``, and how."""
    if sharding is not None:
        stacked = _reduce_pending(stacked, sharding, mesh)
        if stacked is None:
            return None
    want = shard_array(expected, sharding, mesh)
    inside = shard_array(np.ones(np.shape(expected), bool), sharding, mesh)
    if want.shape != stacked.shape:
        return f"per-device shape {stacked.shape[1:]}, but the layout gives {want.shape[1:]}"
    scale = _scale(np.asarray(expected))
    for position in range(mesh.size):
        mask = inside[position]
        if not values_close(want[position][mask], stacked[position][mask], scale):
            difference = describe_difference(want[position], stacked[position], mask)
            return f"{device_name(mesh, position)}: {difference}"
    return None


@dataclass(frozen=True)
class Mismatch:
    """The first global value whose per-device form is wrong: the op (or output) that defines it,
    the per-device value standing for it with its layout, and the first device that differs."""

    where: str
    local: str
    device: str

    def __str__(self) -> str:
        return f"{self.where}\n    per-device value {self.local}\n    {self.device}"


def _describe_op(op, names: dict[int, str]) -> str:
    return op_lines(op, names)[0]


def _describe_local(value_id: int, names: dict[int, str], sharding: TensorSharding | None) -> str:
    layout = format_sharding(sharding) if sharding is not None else "replicated"
    return f"{names.get(value_id, '?')} laid out as {layout}"


class _SideBySide:
    """The global module and its per-device module, interpreted on the same inputs."""

    def __init__(self, propagated: Module, report: PartitionResult, arguments: Sequence):
        self.propagated = propagated
        self.report = report
        self.mesh = spmd_mesh(report.module)
        self.global_values = interpret_all(propagated, arguments)
        self.local_values = interpret_all(report.module, stacked_arguments(report.module, arguments))
        self.global_names = name_values(propagated.main)
        self.local_names = name_values(report.module.main)

    def check_value(self, value_id: int, where: str) -> Mismatch | None:
        local = self.report.value_map.get(value_id)
        if local is None or local.value.id not in self.local_values:
            return None
        bad = first_bad_device(self.global_values[value_id], self.local_values[local.value.id],
                               local.sharding, self.mesh)
        if bad is None:
            return None
        return Mismatch(where, _describe_local(local.value.id, self.local_names, local.sharding), bad)

    def check_outputs(self) -> Mismatch | None:
        partitioned = self.report.module.main
        for index, (value, local, sharding) in enumerate(zip(self.propagated.main.returns, partitioned.returns,
                                                             partitioned.result_shardings)):
            bad = first_bad_device(self.global_values[value.id], self.local_values[local.id], sharding, self.mesh)
            if bad is not None:
                where = f"output {index} (the reshard to the function's result layout)"
                return Mismatch(where, _describe_local(local.id, self.local_names, sharding), bad)
        return None


def first_mismatch(propagated: Module, arguments: Sequence,
                   report: PartitionResult | None = None) -> Mismatch | None:
    """Interpret ``propagated`` globally and its partition per device; the first op (in program
    order) whose result's per-device values differ from the global value, else the first
    output that differs, else None."""
    side_by_side = _SideBySide(propagated, report or partition_with_report(propagated), arguments)
    func = propagated.main
    for value in func.args:
        mismatch = side_by_side.check_value(value.id, f"argument {side_by_side.global_names[value.id]}")
        if mismatch is not None:
            return mismatch
    for op in func.body.ops:
        for result in op.results:
            mismatch = side_by_side.check_value(result.id, _describe_op(op, side_by_side.global_names))
            if mismatch is not None:
                return mismatch
    return side_by_side.check_outputs()


def breaking_pass(report: PartitionResult, arguments: Sequence, expected: Sequence,
                  optimisations: pipeline.Pipeline | None = None) -> str | None:
    """The first optimisation pass (of ``optimisations``, by default the default pipeline's
    per-device passes) after which the per-device program's outputs differ."""
    module = report.module
    stacked = stacked_arguments(module, arguments)
    shapes = [np.shape(output) for output in expected]
    optimisations = optimisations or pipeline.default_pipeline().of_stage(pipeline.PER_DEVICE)
    for spec in optimisations.passes:
        module = spec(module)
        outputs = global_outputs(module, stacked, shapes)
        if any(output is None for output in outputs) or differing_outputs(expected, outputs):
            return spec.name
    return None


def explain_mismatch(propagated: Module, arguments: Sequence, expected: Sequence,
                     optimisations: pipeline.Pipeline | None = None) -> str | None:
    """Where the per-device program first goes wrong, as text; None when the per-device program
    (partitioned and optimised by ``optimisations``) agrees with the reference under the
    interpreter."""
    report = partition_with_report(propagated)
    mismatch = first_mismatch(propagated, arguments, report)
    if mismatch is not None:
        return f"first op whose per-device values differ: {mismatch}"
    pass_name = breaking_pass(report, arguments, expected, optimisations)
    if pass_name is not None:
        return (f"the partitioner's per-device program is right, but after the optimisation pass "
                f"{pass_name} its outputs differ")
    return None


def check_program(traced: Module, propagated: Module, arguments: Sequence) -> list[np.ndarray]:
    """Interpret the unsharded program and its per-device program on global ``arguments``; raise
    PartitioningMismatchError naming the first op whose per-device values differ. Returns the
    reference outputs."""
    expected = list(interpret(traced, *arguments))
    message = explain_mismatch(propagated, arguments, expected)
    if message is not None:
        raise PartitioningMismatchError(f"check_partitioning: the partitioned program differs from the "
                                        f"unsharded reference.\n{message}")
    return expected
