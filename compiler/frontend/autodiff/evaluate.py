"""Running a traced block again: every op is re-emitted through ``bind`` into whatever trace is
current (a jit trace, another differentiation trace, or eager execution), which is what makes
autodiff's results re-traceable and composable.

Regions are copied with fresh values on every emission, so no two ops of a module share one.
Markers (stop_gradient, custom derivative calls) stay as ops while autodiff is recording and
are replaced by their region, their plain meaning, everywhere else.
"""

from __future__ import annotations

from collections.abc import Sequence

from meshjit.ir import Block, Op, Value

from ..trace import bind, located_at, stage
from ...tables import MARKER_OPS, TRANSFORMATION_OPS
from .sharding import recorded_types
from .tracing import differentiating


class ForwardModeError(TypeError):
    """A custom_vjp function was differentiated in forward mode."""


# NOTE: JAX 0.10.2's text
FORWARD_MODE_MESSAGE = "can't apply forward-mode autodiff (jvp) to a custom_vjp function."


def evaluate_block(block: Block, inputs: Sequence) -> list:
    """Emit ``block``'s ops on ``inputs`` (one per block argument); its returned values."""
    environment = {argument.id: value for argument, value in zip(block.args, inputs, strict=True)}
    evaluate_ops(block.ops, environment)
    return [environment[value.id] for value in block.returns]


def evaluate_ops(ops: Sequence[Op], environment: dict) -> None:
    """Emit ``ops`` in order, reading operands from and writing results to ``environment``."""
    for op in ops:
        results = emit(op, [environment[operand.id] for operand in op.operands])
        environment.update((value.id, result) for value, result in zip(op.results, results))


def emit(op: Op, operands: Sequence) -> list:
    """Apply ``op`` (its name, attributes and regions) to ``operands`` in the current trace; the
    new op keeps ``op``'s source location."""
    with located_at(op.location):
        return _emit(op, operands)


def _emit(op: Op, operands: Sequence) -> list:
    if op.name in TRANSFORMATION_OPS:
        types = [value.type for value in op.results]
        weak = [bool(getattr(operand, "weak_type", False)) for operand in operands[:1]] * len(types)
        return stage(op.name, operands, types, op.attrs, weak_types=weak or None)
    keep_markers = differentiating()
    if op.name in MARKER_OPS and not keep_markers:
        if not op.regions:
            raise ForwardModeError(FORWARD_MODE_MESSAGE)
        return evaluate_block(op.regions[0], operands)
    regions = tuple(copy_block(region, keep_markers) for region in op.regions)
    if op.name in MARKER_OPS:
        types = [value.type for value in op.results]
        return stage(op.name, operands, types, op.attrs, regions=regions)
    # NOTE: a replay keeps the sharding types the op was traced with (explicit mode)
    return bind(op.name, list(operands), op.attrs, regions=regions, out_sharding=recorded_types(op))


def copy_block(block: Block, keep_markers: bool) -> Block:
    """``block`` with fresh values; markers replaced by their regions unless ``keep_markers``."""
    mapping: dict[int, Value] = {}
    args = tuple(_define(mapping, argument) for argument in block.args)
    ops: list[Op] = []
    _copy_ops(block.ops, mapping, ops, keep_markers)
    return Block(args, tuple(ops), tuple(mapping[value.id] for value in block.returns))


def _define(mapping: dict[int, Value], value: Value) -> Value:
    fresh = Value.fresh(value.type, value.hint)
    mapping[value.id] = fresh
    return fresh


def _copy_ops(
    source: Sequence[Op], mapping: dict[int, Value], target: list[Op], keep_markers: bool
) -> None:
    for op in source:
        operands = tuple(mapping[operand.id] for operand in op.operands)
        if op.name in MARKER_OPS and not keep_markers:
            _inline_marker(op, operands, mapping, target)
            continue
        regions = tuple(copy_block(region, keep_markers) for region in op.regions)
        results = tuple(_define(mapping, result) for result in op.results)
        target.append(Op(op.name, operands, results, op.attrs, regions, op.shardings, op.location))


def _inline_marker(
    op: Op, operands: tuple[Value, ...], mapping: dict[int, Value], target: list[Op]
) -> None:
    """Replace marker ``op`` by a copy of its region's ops (its plain meaning)."""
    if not op.regions:
        raise ForwardModeError(FORWARD_MODE_MESSAGE)
    region = op.regions[0]
    mapping.update((argument.id, operand) for argument, operand in zip(region.args, operands))
    _copy_ops(region.ops, mapping, target, keep_markers=False)
    mapping.update(
        (result.id, mapping[value.id]) for result, value in zip(op.results, region.returns)
    )
