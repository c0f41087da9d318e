"""JVP and transpose rules of sharding_constraint, manual_computation (shard_map's op) and the
per-device collectives that appear in its body.

- sharding_constraint is the identity on values; its tangent and cotangent get the same layout.
- manual_computation's JVP is a second manual_computation whose body is the JVP of the first's
  (it takes the primal operands and the tangents, and returns the tangents); its transpose is a
  manual_computation whose body is the backward pass of that body. The body's forward part is
  recomputed inside the backward one rather than saved, as ``jax.checkpoint`` would.
- The collectives transpose into one another: all_gather <-> reduce_scatter (psum_scatter),
  all_to_all into the all_to_all with split and concat dims swapped, collective_permute into
  the inverse permutation, and a sum all_reduce (psum) into a copy of its invariant cotangent;
  pvary into a copy as well, which the backward pass then sums over pvary's axes.
  Device-varying cotangents of invariant values are summed by the backward pass
  (``transpose.VaryingAxes``), which is what makes these transposes exact under check_vma.
"""

from __future__ import annotations

from meshjit.ir import TensorSharding
from meshjit.ir.shape_rules_spmd import manual_part

from .. import lax_ops as lax
from ..shard_map import varying_axes
from ..trace import bind, current_trace, trace_region
from .evaluate import emit
from .jvp import jvp_block, linear_jvp
from .registries import (
    LinearInput,
    instantiate,
    is_float,
    jvp_rules,
    single,
    transpose_rules,
    type_of,
)
from .transpose import VaryingAxes, backward_pass

jvp_rules.register("sharding_constraint", "all_gather", "all_to_all", "collective_permute", "pvary")(
    linear_jvp
)


@transpose_rules.register("sharding_constraint")
def _sharding_constraint_transpose(op, cotangents, operands):
    return [single("sharding_constraint", [cotangents[0]], op.attrs)]


# --- collectives -----------------------------------------------------------------------------


def _sum_attrs(op) -> dict:
    return {"mesh": op.attrs["mesh"], "axes": op.attrs["axes"], "reduction": "sum"}


@jvp_rules.register("all_reduce", "reduce_scatter")
def _reduction_collective(op, primals, tangents):
    """Sums are linear; a max or min takes the tangent averaged over the devices attaining it."""
    if op.attrs["reduction"] == "sum":
        return linear_jvp(op, primals, tangents)
    outputs = emit(op, primals)
    extreme = outputs[0]
    if op.name == "reduce_scatter":
        extreme = single(
            "all_gather",
            [extreme],
            {"mesh": op.attrs["mesh"], "axes": op.attrs["axes"], "dim": op.attrs["dim"]},
        )
    weights = lax.convert_element_type(lax.eq(primals[0], extreme), type_of(primals[0]).dtype)
    attrs = _sum_attrs(op) | ({"dim": op.attrs["dim"]} if op.name == "reduce_scatter" else {})
    chosen = single(op.name, [lax.mul(tangents[0], weights)], attrs)
    count = single(op.name, [weights], attrs)
    return outputs, [lax.div(chosen, count)]


@transpose_rules.register("all_reduce")
def _all_reduce_transpose(op, cotangents, operands):
    _require_sum(op)
    return [cotangents[0]]


@transpose_rules.register("pvary")
def _pvary_transpose(op, cotangents, operands):
    # NOTE: JAX's transpose of pvary is psum over its axes; here the backward pass does that
    # sum, since pvary's cotangent varies along axes its operand does not (VaryingAxes.excess).
    return [cotangents[0]]


@transpose_rules.register("reduce_scatter")
def _reduce_scatter_transpose(op, cotangents, operands):
    _require_sum(op)
    attrs = {"mesh": op.attrs["mesh"], "axes": op.attrs["axes"], "dim": op.attrs["dim"]}
    return [single("all_gather", [cotangents[0]], attrs)]


@transpose_rules.register("all_gather")
def _all_gather_transpose(op, cotangents, operands):
    return [single("reduce_scatter", [cotangents[0]], _sum_attrs(op) | {"dim": op.attrs["dim"]})]


@transpose_rules.register("all_to_all")
def _all_to_all_transpose(op, cotangents, operands):
    attrs = {
        "mesh": op.attrs["mesh"],
        "axes": op.attrs["axes"],
        "split_dim": op.attrs["concat_dim"],
        "concat_dim": op.attrs["split_dim"],
    }
    return [single("all_to_all", [cotangents[0]], attrs)]


@transpose_rules.register("collective_permute")
def _collective_permute_transpose(op, cotangents, operands):
    pairs = tuple((target, source) for source, target in op.attrs["pairs"])
    attrs = {"mesh": op.attrs["mesh"], "axes": op.attrs["axes"], "pairs": pairs}
    return [single("collective_permute", [cotangents[0]], attrs)]


def _require_sum(op) -> None:
    if op.attrs["reduction"] != "sum":
        raise AssertionError(
            f"autodiff internal error: a {op.attrs['reduction']} {op.name} is not linear"
        )


# --- manual_computation ----------------------------------------------------------------------


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
