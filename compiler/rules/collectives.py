"""The compiler's rules for the per-device collectives: they appear only after partitioning (no
sharding rule; the executor runs them) and inside shard_map bodies, where autodiff needs their
JVPs and transposes (all_gather <-> reduce_scatter, all_to_all and collective_permute invert).
``pvary`` (from ``lax.pcast(..., to="varying")``) is the identity on each device: its kernel
returns its operand, and its transpose is a copy that the backward pass sums over its axes.
"""

from __future__ import annotations

from ..sharding.factor_rules import joined, letters
from ..frontend import lax_ops as lax
from ..frontend.autodiff.evaluate import emit
from ..frontend.autodiff.jvp import linear_jvp, no_tangent
from ..frontend.autodiff.registries import single, type_of
from ..frontend.vmap.batching import batch_elementwise, shift_attrs
from ..tables import (
    batching_rules,
    collective_steps,
    factor_rule,
    jvp_rules,
    kernel_rules,
    manual_body_rules,
    transpose_rules,
    varying_over_axes,
)


def require_sum(op) -> None:
    if op.attrs["reduction"] != "sum":
        raise AssertionError(
            f"autodiff internal error: a {op.attrs['reduction']} {op.name} is not linear"
        )


# --- lowering and varying axes ----------------------------------------------------------------

# NOTE: lowering emits these as runtime collective steps of the same kind (axis_index and
# partition_id are steps of their own; pvary is a kernel).
collective_steps.update(("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "collective_permute"))
# NOTE: the results of these vary along the op's ``axes`` (JAX's vma); all_reduce's are
# invariant along them and axis_index's vary along its one axis (frontend/op_types.py).
varying_over_axes.update(("all_gather", "reduce_scatter", "all_to_all", "collective_permute", "pvary"))


# --- autodiff ------------------------------------------------------------------------------------

jvp_rules.register("axis_index", "partition_id")(no_tangent)


jvp_rules.register("all_gather", "all_to_all", "collective_permute", "pvary")(linear_jvp)


# --- collectives ---------------------------------------------------------------------------------


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
    require_sum(op)
    return [cotangents[0]]


@transpose_rules.register("reduce_scatter")
def _reduce_scatter_transpose(op, cotangents, operands):
    require_sum(op)
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


# --- pvary ---------------------------------------------------------------------------------------


@transpose_rules.register("pvary")
def _pvary_transpose(op, cotangents, operands):
    # NOTE: JAX's transpose of pvary is psum over its axes; here the backward pass does that
    # sum, since pvary's cotangent varies along axes its operand does not (VaryingAxes.excess).
    return [cotangents[0]]


# NOTE: pvary only marks a value as varying for shard_map's check; each device keeps its value.
@kernel_rules.register("pvary")
def _pvary_kernel(op, lead: int):
    return lambda operand: (operand,)


# --- along the free axes of a partial-manual body ------------------------------------------------
# A collective over manual axes runs on every shard along the free axes: dims it keeps pass
# through; the dims it gathers, scatters or exchanges need the whole dim on each device.


@manual_body_rules.register("all_reduce", "collective_permute", "pvary")
def _same_shape_body_rule(op):
    names = joined(letters(op.result.type.rank))
    return factor_rule(op, f"{names} -> {names}")


@manual_body_rules.register("all_gather", "reduce_scatter", "all_to_all")
def _reshaping_body_rule(op):
    rank = op.result.type.rank
    moved = {op.attrs[key] for key in ("dim", "split_dim", "concat_dim") if key in op.attrs}
    operand = [f"o{dim}" if dim in moved else f"d{dim}" for dim in range(rank)]
    result = [f"r{dim}" if dim in moved else f"d{dim}" for dim in range(rank)]
    kinds = {name: "replication" for name in operand + result if name[0] in "or"}
    return factor_rule(op, f"{joined(operand)} -> {joined(result)}", kinds)


@manual_body_rules.register("axis_index", "partition_id")
def _index_body_rule(op):
    return factor_rule(op, "-> []")
# --- vmap inside a shard_map body: the batch dim leads, the collectives' dims shift past it -------

batching_rules.register("all_reduce", "collective_permute", "pvary")(batch_elementwise)
batching_rules.register("all_gather", "reduce_scatter")(shift_attrs("dim"))
batching_rules.register("all_to_all")(shift_attrs("split_dim", "concat_dim"))
