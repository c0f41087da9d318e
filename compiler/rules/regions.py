"""The compiler's rules for manual_computation (shard_map's op): nothing propagates across its
boundary; its JVP is a second manual_computation over the body's JVP, and its transpose runs
the body's backward pass per device.
"""

from __future__ import annotations

from dataclasses import replace

from meshjit.ir import DimSharding, Op, TensorSharding, TensorType
from meshjit.ir.ops.regions import manual_part

from ..sharding.factor_rules import FactorRule, joined
from ..frontend.autodiff.evaluate import emit
from ..frontend.autodiff.jvp import jvp_block
from ..tables import jvp_rules, transpose_rules
from ..frontend.autodiff.registries import LinearInput, instantiate, is_float, type_of
from ..frontend.autodiff.transpose import VaryingAxes, backward_pass
from ..frontend.shard_map import varying_axes
from ..sharding.sharding_types import ShardingType
from ..frontend.trace import bind, current_trace
from ..frontend.trace_functions import trace_region
from ..frontend.vmap.batching import at_front, move_dim
from ..frontend.vmap.transform import batch_block, current_batch_axis
from ..partitioning.manual_free_axes import partition_over_free_axes
from ..partitioning.reshard import reshard
from ..partitioning.spmd_builder import Local, describe
from ..tables import (
    batching_rules,
    factor_rule,
    partition_rules,
    sharding_rules,
    sharding_type_rules,
)

# --- sharding ------------------------------------------------------------------------------------


@sharding_rules.register("manual_computation")
def _manual_computation(op: Op) -> FactorRule:
    # NOTE: the boundary shardings are fixed by in/out_shardings; nothing flows across it
    operand_specs = [joined([f"a{index}_{dim}" for dim in range(value.type.rank)])
                     for index, value in enumerate(op.operands)]
    result_specs = [joined([f"r{index}_{dim}" for dim in range(value.type.rank)])
                    for index, value in enumerate(op.results)]
    names = [name for spec in operand_specs + result_specs for name in spec.split() if name != "[]"]
    return factor_rule(op, f"{', '.join(operand_specs)} -> {', '.join(result_specs)}",
                 {name: "replication" for name in names})


@sharding_type_rules.register("manual_computation")
def _manual_computation_type(op: Op, operands, mesh) -> list:
    """A shard_map's results are laid out as its out_specs say: their types keep the Explicit
    axes of those layouts."""
    explicit = set(mesh.explicit_axes)
    types = []
    for sharding in op.attrs["out_shardings"]:
        dims = tuple(tuple(axis.name for axis in dim.axes if axis.name in explicit) for dim in sharding.dims)
        length = max((index + 1 for index, dim in enumerate(sharding.dims) if dim.axes), default=0)
        unreduced = frozenset(axis.name for axis in sharding.unreduced)
        types.append(ShardingType(mesh, dims, unreduced=unreduced, spec_length=length))
    return types


# --- autodiff ------------------------------------------------------------------------------------



# --- manual_computation --------------------------------------------------------------------------


def _replicated(mesh_name: str, values) -> tuple[TensorSharding, ...]:
    return tuple(
        TensorSharding.from_axis_names(mesh_name, ((),) * type_of(value).rank) for value in values
    )


def _mesh_name(op) -> str:
    return (op.attrs["in_shardings"] + op.attrs["out_shardings"])[0].mesh_name


def _bind_manual(op, operands, in_shardings, out_shardings, region) -> list:
    """A manual_computation like ``op`` over ``region`` (values it captured are replicated)."""
    mesh_name = _mesh_name(op)
    attrs = {
        "in_shardings": tuple(in_shardings) + _replicated(mesh_name, region.captured),
        "out_shardings": tuple(out_shardings),
        "manual_axes": op.attrs["manual_axes"],
    }
    return bind(
        "manual_computation", list(operands) + list(region.captured), attrs, regions=(region.block,)
    )


@jvp_rules.register("manual_computation")
def _manual_computation(op, primals, tangents):
    outputs = emit(op, primals)
    body = op.regions[0]
    moving = [index for index, tangent in enumerate(tangents) if tangent is not None]
    float_outputs = [
        index for index, value in enumerate(body.returns) if is_float(value.type.dtype)
    ]
    if not float_outputs:
        return outputs, [None] * len(outputs)

    def tangent_body(*arguments):
        supplied = iter(arguments[len(body.args) :])
        body_tangents = [
            next(supplied) if index in moving else None for index in range(len(body.args))
        ]
        _, output_tangents = jvp_block(body, arguments[: len(body.args)], body_tangents)
        return [
            instantiate(output_tangents[index], body.returns[index].type) for index in float_outputs
        ]

    arg_types = [argument.type for argument in body.args] + [
        body.args[index].type for index in moving
    ]
    region = trace_region(tangent_body, arg_types, [False] * len(arg_types), name="manual_jvp")
    in_shardings = op.attrs["in_shardings"]
    results = _bind_manual(
        op,
        list(primals) + [tangents[index] for index in moving],
        in_shardings + tuple(in_shardings[index] for index in moving),
        [op.attrs["out_shardings"][index] for index in float_outputs],
        region,
    )
    output_tangents = [None] * len(outputs)
    for index, tangent in zip(float_outputs, results):
        output_tangents[index] = tangent
    return outputs, output_tangents


def _axis_names(sharding: TensorSharding, manual_axes) -> frozenset[str]:
    return frozenset(
        axis.name for dim in manual_part(sharding, manual_axes).dims for axis in dim.axes
    )


def _varying(op) -> VaryingAxes:
    in_shardings, out_shardings = op.attrs["in_shardings"], op.attrs["out_shardings"]
    manual_axes, mesh_name = op.attrs["manual_axes"], _mesh_name(op)
    arguments = [_axis_names(sharding, manual_axes) for sharding in in_shardings]
    by_value = varying_axes(op.regions[0], arguments)
    returns = tuple(_axis_names(sharding, manual_axes) for sharding in out_shardings)
    return VaryingAxes(by_value, mesh_name, current_trace().meshes[mesh_name], returns)


@transpose_rules.register("manual_computation")
def _manual_computation_transpose(op, cotangents, operands):
    body = op.regions[0]
    linear = [isinstance(operand, LinearInput) for operand in operands]
    known = [index for index, flag in enumerate(linear) if not flag]
    wanted = [index for index, flag in enumerate(linear) if flag]
    present = [index for index, cotangent in enumerate(cotangents) if cotangent is not None]
    varying = _varying(op)

    def transposed_body(*arguments):
        inputs = [None] * len(body.args)
        for index, value in zip(known, arguments):
            inputs[index] = value
        body_cotangents = [None] * len(body.returns)
        for index, value in zip(present, arguments[len(known) :]):
            body_cotangents[index] = value
        results = backward_pass(body, linear, inputs, body_cotangents, varying)
        return [instantiate(results[index], body.args[index].type) for index in wanted]

    arg_types = [body.args[index].type for index in known] + [
        body.returns[index].type for index in present
    ]
    region = trace_region(
        transposed_body, arg_types, [False] * len(arg_types), name="manual_transpose"
    )
    in_shardings, out_shardings = op.attrs["in_shardings"], op.attrs["out_shardings"]
    results = _bind_manual(
        op,
        [operands[index] for index in known] + [cotangents[index] for index in present],
        [in_shardings[index] for index in known] + [out_shardings[index] for index in present],
        [in_shardings[index] for index in wanted],
        region,
    )
    operand_cotangents = [None] * len(operands)
    for index, cotangent in zip(wanted, results):
        operand_cotangents[index] = cotangent
    return operand_cotangents


# --- partitioning ----------------------------------------------------------------------------


@partition_rules.register("manual_computation")
def _partition_manual(partitioner, op: Op) -> list:
    """Inline a manual computation's body. Its operands are laid out on the manual axes only,
    as the body's local types say; with free axes, the body is partitioned over them
    (manual_free_axes.py)."""
    over_free_axes = partition_over_free_axes(partitioner, op)
    if over_free_axes is not None:
        return over_free_axes
    body, manual_axes = op.regions[0], op.attrs["manual_axes"]
    builder = partitioner.builder
    mapping = {}
    for index, (arg, value, sharding) in enumerate(zip(body.args, op.operands, op.attrs["in_shardings"])):
        target = manual_part(sharding, manual_axes)
        mapping[arg.id] = reshard(builder, partitioner.locals[value.id], target, describe(op, index)).value
    for inner in body.ops:
        operands = [mapping[value.id] for value in inner.operands]
        results = builder.emit(inner.name, operands, dict(inner.attrs), location=inner.location,
                               regions=inner.regions)
        mapping.update({old.id: new for old, new in zip(inner.results, results)})
    return [Local(mapping[value.id], manual_part(sharding, manual_axes), result.type.shape)
            for value, sharding, result in zip(body.returns, op.attrs["out_shardings"], op.results)]


# --- vmap ----------------------------------------------------------------------------------------


def _with_batch_dim(sharding: TensorSharding) -> TensorSharding:
    """``sharding`` with a leading dim that every device holds whole (the batch)."""
    return replace(sharding, dims=(DimSharding((), True),) + sharding.dims)


@batching_rules.register("manual_computation")
def _batch_manual_computation(op, operands, dims, size):
    """A manual_computation over the body batched: batched operands enter with the batch dim
    first, unsharded, and every result leaves batched the same way."""
    body, axis = op.regions[0], current_batch_axis()
    batched = [dim is not None for dim in dims]
    ready = [move_dim(operand, dim, 0) if dim is not None else operand
             for operand, dim in zip(operands, dims)]

    def batched_body(*arguments):
        outputs, output_dims = batch_block(body, arguments, [0 if flag else None for flag in batched], axis)
        return [at_front(output, dim, size) for output, dim in zip(outputs, output_dims)]

    arg_types = [TensorType((size,) + argument.type.shape, argument.type.dtype) if flag else argument.type
                 for argument, flag in zip(body.args, batched)]
    region = trace_region(batched_body, arg_types, [False] * len(arg_types), name="manual_vmap")
    in_shardings = [_with_batch_dim(sharding) if flag else sharding
                    for sharding, flag in zip(op.attrs["in_shardings"], batched)]
    out_shardings = [_with_batch_dim(sharding) for sharding in op.attrs["out_shardings"]]
    results = _bind_manual(op, ready, in_shardings, out_shardings, region)
    return results, [0] * len(results)
