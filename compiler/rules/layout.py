"""The compiler's rules for the layout ops: factor mappings (reshape's compound factors; the dims
slice, pad, rev and concatenate change are permutation factors), view-like kernels, and
linear JVPs whose transposes move cotangents back to the operand's layout.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from meshjit.ir import AxisRef, DimSharding, Op, TensorType

from ..sharding.factor_rules import FactorRule, joined, letters
from ..sharding.factor_types import (
    check_unique,
    operand_type_text,
    same_unreduced,
    varying_out_shape,
)
from ..frontend import lax_ops as lax
from ..frontend.autodiff.registries import type_of, zeros
from ..sharding.sharding_types import ShardingTypeError, named_sharding_text
from ..frontend.vmap.batching import at_front, emit_like, shift_attrs, shifted
from ..frontend.vmap.transform import spmd_axes_of_current_batch
from ..partitioning.halo_partition import partition_concatenate, partition_windowed
from ..sharding.partial_sums import EVERY_REDUCTION, PartialRule, partial_sum_rules
from ..sharding.reshape_types import reshape_dims, reshape_error
from ..tables import (
    batching_rules,
    factor_result_dims,
    factor_rule,
    local_attr_rules,
    partition_rules,
    sharding_rules,
    sharding_type_rules,
    typed,
)

# --- sharding ------------------------------------------------------------------------------------


@sharding_rules.register("transpose")
def _transpose(op: Op) -> FactorRule:
    names = letters(op.result.type.rank)
    permutation = op.attrs["permutation"]
    operand = [None] * len(names)
    for result_dim, operand_dim in enumerate(permutation):
        operand[operand_dim] = names[result_dim]
    return factor_rule(op, f"{joined(operand)} -> {joined(names)}")


@sharding_rules.register("broadcast_in_dim")
def _broadcast(op: Op) -> FactorRule:
    result = letters(op.result.type.rank)
    operand_shape = op.operands[0].type.shape
    operand, extra = [], 0
    for operand_dim, result_dim in enumerate(op.attrs["broadcast_dimensions"]):
        if operand_shape[operand_dim] == op.result.type.shape[result_dim]:
            operand.append(result[result_dim])
        else:
            # a size-1 dim stretched to n: its own factor, which never takes axes
            operand.append(f"s{extra}")
            extra += 1
    kinds = {f"s{index}": "replication" for index in range(extra)}
    return factor_rule(op, f"{joined(operand)} -> {joined(result)}", kinds)


class _ReshapeFactors:
    """Common factors of a reshape's two shapes, major to minor (Shardy's compound factors).

    Walk both shapes, taking the gcd of what is left of the current dim on each side as a
    pass-through factor: ``8x4 -> 2x16`` is ``(i j) k -> i (j k)``. Where what is left is
    co-prime (``6x5 -> 5x6``), the shortest run of dims on both sides with equal products gets
    one need-replication factor per dim remainder, and the walk resumes after it, so aligned
    major dims still pass (``Bx6x5 -> Bx5x6`` keeps ``B``). Dims left without factors (size 1)
    get a factor of their own.
    """

    def __init__(self, source, target):
        self.sizes: list[int] = []
        self.kinds: list[str] = []
        self.sides = ([list(source), [[] for _ in source]], [list(target), [[] for _ in target]])
        if 0 in source or 0 in target:
            # NOTE: an empty array holds nothing to keep in place: every dim needs replication
            for side, shape in enumerate((source, target)):
                for dim, size in enumerate(shape):
                    self._add(size, "replication", None if side else dim, dim if side else None)
        else:
            self._walk()
        # NOTE: a size-1 dim is on one side only; sharded (a user may ask for it, unevenly)
        # only its first shard holds the element, so it must be gathered before the reshape:
        # a pass factor would let the other shards' padding through
        for side, (shape, dims) in enumerate(self.sides):
            for dim, factors in enumerate(dims):
                if not factors:
                    self._add(shape[dim], "replication", dim if side == 0 else None, dim if side else None)

    def _add(self, size: int, kind: str, source_dim: int | None, target_dim: int | None) -> None:
        """A new factor of ``size``, appended (as the minor-most so far) to the given dims."""
        for (_, dims), dim in zip(self.sides, (source_dim, target_dim)):
            if dim is not None:
                dims[dim].append(len(self.sizes))
        self.sizes.append(size)
        self.kinds.append(kind)

    def _walk(self) -> None:
        (source_left, _), (target_left, _) = self.sides
        i = j = 0
        while True:
            while i < len(source_left) and source_left[i] == 1:
                i += 1
            while j < len(target_left) and target_left[j] == 1:
                j += 1
            if i == len(source_left) or j == len(target_left):
                return
            common = math.gcd(source_left[i], target_left[j])
            if common == 1:
                i, j = self._unaligned_run(i, j)
                continue
            self._add(common, "pass", i, j)
            source_left[i] //= common
            target_left[j] //= common

    def _unaligned_run(self, i: int, j: int) -> tuple[int, int]:
        """Give dims from ``i`` / ``j`` replication factors until both runs hold equal products;
        returns the dims after the run."""
        (source_left, _), (target_left, _) = self.sides
        source_product = target_product = 1
        while i < len(source_left) or j < len(target_left):
            take_source = j == len(target_left) or (
                i < len(source_left) and source_product <= target_product)
            if take_source:
                source_product *= source_left[i]
                self._add(source_left[i], "replication", i, None)
                source_left[i], i = 1, i + 1
            else:
                target_product *= target_left[j]
                self._add(target_left[j], "replication", None, j)
                target_left[j], j = 1, j + 1
            if source_product == target_product:
                return i, j
        return i, j

    def rule(self) -> FactorRule:
        (_, source_dims), (_, target_dims) = self.sides
        return FactorRule(tuple(self.sizes), tuple(self.kinds),
                          (tuple(tuple(dim) for dim in source_dims),),
                          (tuple(tuple(dim) for dim in target_dims),))


@sharding_rules.register("reshape", "squeeze", "expand_dims")
def _reshape(op: Op) -> FactorRule:
    return _ReshapeFactors(op.operands[0].type.shape, op.result.type.shape).rule()


def _windowed(op: Op, changed_dims) -> FactorRule:
    """Slice/pad/rev: each dim keeps one factor from operand to result. A dim the op changes is
    a permutation factor (sharding it moves data across shard boundaries), sized like the
    operand dim (as in Shardy); extra operands (pad's value) are scalars."""
    names = letters(op.result.type.rank)
    operand_shape = op.operands[0].type.shape
    kinds = {names[dim]: "permutation" for dim in changed_dims}
    sizes = {names[dim]: operand_shape[dim] for dim in changed_dims}
    extra = ", []" * (len(op.operands) - 1)
    return factor_rule(op, f"{joined(names)}{extra} -> {joined(names)}", kinds, sizes)


@sharding_rules.register("slice")
def _slice(op: Op) -> FactorRule:
    shape = op.operands[0].type.shape
    changed = {dim for dim, (start, limit, stride) in enumerate(
        zip(op.attrs["start_indices"], op.attrs["limit_indices"], op.attrs["strides"]))
        if (start, limit, stride) != (0, shape[dim], 1)}
    return _windowed(op, changed)


@sharding_rules.register("pad")
def _pad(op: Op) -> FactorRule:
    changed = {dim for dim, config in enumerate(op.attrs["padding_config"])
               if tuple(config) != (0, 0, 0)}
    return _windowed(op, changed)


@sharding_rules.register("rev")
def _rev(op: Op) -> FactorRule:
    return _windowed(op, set(op.attrs["dimensions"]))


@sharding_rules.register("concatenate")
def _concatenate(op: Op) -> FactorRule:
    # the concatenated dim is one permutation factor of the result's size (as in Shardy)
    names = letters(op.result.type.rank)
    dimension = names[op.attrs["dimension"]]
    tensor = joined(names)
    operands = ", ".join([tensor] * len(op.operands))
    return factor_rule(op, f"{operands} -> {tensor}", {dimension: "permutation"},
                 {dimension: op.result.type.shape[op.attrs["dimension"]]})


@sharding_rules.register("sharding_constraint")
def _sharding_constraint(op: Op) -> FactorRule:
    dims = joined(letters(op.result.type.rank))
    return factor_rule(op, f"{dims} -> {dims}")


# --- sharding types (explicit mode) -------------------------------------------------------------
# Layout ops move data without combining it, so a pending sum (unreduced axes) passes through all
# of them. Reshape follows JAX's rule: besides adding or removing unit dims, only splitting one
# dim (its axes spread over the new dims, major first) or merging adjacent dims (their axes
# concatenated, only when every split one comes before the unsplit ones) infer a sharding.


@sharding_type_rules.register("transpose", "broadcast_in_dim", "rev", "sharding_constraint")
def _moved_type(op: Op, operands, mesh) -> list:
    (operand, *_) = operands
    return typed(mesh, factor_result_dims(op, operands, mesh), operand.unreduced, operand.reduced)


@sharding_type_rules.register("slice", "pad")
def _windowed_type(op: Op, operands, mesh) -> list:
    operand = operands[0]
    value = op.operands[0]
    name = "slicing" if op.name == "slice" else "padding"
    varying_out_shape(name, operand, value.type.shape, value.type.dtype, op.result.type.shape)
    return typed(mesh, [operand.dims], operand.unreduced, operand.reduced)


@sharding_type_rules.register("concatenate")
def _concatenate_type(op: Op, operands, mesh) -> list:
    placed = [operand for operand in operands if not operand.mesh.empty]
    if any(operand.dims != placed[0].dims for operand in placed[1:]):
        raise ShardingTypeError(f"All operands should have the same sharding. Got shardings "
                                f"{', '.join(named_sharding_text(operand) for operand in operands)}")
    first = placed[0] if placed else operands[0]
    return typed(mesh, [first.dims], same_unreduced(op.name, operands), first.reduced)


@sharding_type_rules.register("reshape", "squeeze", "expand_dims")
def _reshape_type(op: Op, operands, mesh) -> list:
    (operand,) = operands
    value = op.operands[0]
    new_sizes = op.result.type.shape
    text = operand_type_text(op, 0, operand)
    dims = reshape_dims(mesh, operand.dims, value.type.shape, new_sizes, lambda: reshape_error(text, new_sizes))
    check_unique(dims)
    return typed(mesh, [dims], operand.unreduced, operand.reduced)


# --- partial sums --------------------------------------------------------------------------------


@partial_sum_rules.register("reshape", "transpose", "broadcast_in_dim", "slice", "squeeze", "expand_dims",
                            "sharding_constraint")
def _data_movement(op: Op) -> PartialRule:
    # moving, copying or dropping elements moves every device's terms alike, for any reduction
    return PartialRule((0,), "one", EVERY_REDUCTION)


# --- local attributes ------------------------------------------------------------------------


def _local_shape_attr(name: str):
    def rewrite(op: Op, local_result_shapes) -> dict:
        return {**op.attrs, name: tuple(local_result_shapes[0])}
    return rewrite


local_attr_rules.register("broadcast_in_dim")(_local_shape_attr("shape"))
local_attr_rules.register("reshape")(_local_shape_attr("new_sizes"))


@local_attr_rules.register("slice")
def _slice_local_attrs(op: Op, local_result_shapes) -> dict:
    # a dim the slice keeps whole but the layout splits ends at the local size
    attrs = dict(op.attrs)
    global_shape = op.result.type.shape
    local = local_result_shapes[0]
    attrs["limit_indices"] = tuple(
        local[dim] if local[dim] != global_shape[dim] else limit
        for dim, limit in enumerate(op.attrs["limit_indices"]))
    return attrs
# --- vmap: the batch dim leads, the attributes' dims shift past it --------------------------------

batching_rules.register("rev", "squeeze", "expand_dims")(shift_attrs("dimensions"))


@batching_rules.register("broadcast_in_dim", "reshape", "transpose", "slice", "sharding_constraint")
def _batch_one_operand(op: Op, operands, dims, size):
    operand = at_front(operands[0], dims[0], size)
    return emit_like(op, [operand], _BATCHED_ATTRS[op.name](op.attrs, size)), [0]


def _batched_sharding(attrs, size):
    # the batch dim is sharded over vmap's spmd_axis_name, else left to propagation
    sharding = attrs["sharding"]
    axes = tuple(AxisRef(name) for name in spmd_axes_of_current_batch())
    lead = DimSharding(axes, True) if axes else DimSharding((), False)
    return {**attrs, "sharding": replace(sharding, dims=(lead,) + sharding.dims)}


_BATCHED_ATTRS = {
    "broadcast_in_dim": lambda attrs, size: {"shape": (size,) + tuple(attrs["shape"]),
                                             "broadcast_dimensions": (0,) + shifted(attrs["broadcast_dimensions"])},
    "reshape": lambda attrs, size: {"new_sizes": (size,) + tuple(attrs["new_sizes"])},
    "transpose": lambda attrs, size: {"permutation": (0,) + shifted(attrs["permutation"])},
    "slice": lambda attrs, size: {"start_indices": (0,) + tuple(attrs["start_indices"]),
                                  "limit_indices": (size,) + tuple(attrs["limit_indices"]),
                                  "strides": (1,) + tuple(attrs["strides"])},
    "sharding_constraint": _batched_sharding,
}


@batching_rules.register("concatenate")
def _batch_concatenate(op: Op, operands, dims, size):
    ready = [at_front(operand, dim, size) for operand, dim in zip(operands, dims)]
    return emit_like(op, ready, {"dimension": op.attrs["dimension"] + 1}), [0]


@batching_rules.register("pad")
def _batch_pad(op: Op, operands, dims, size):
    config = ((0, 0, 0),) + tuple(op.attrs["padding_config"])
    operand = at_front(operands[0], dims[0], size)
    if dims[1] is None:
        return emit_like(op, [operand, operands[1]], {"padding_config": config}), [0]
    # a padding value per example: pad with zeros, then put each example's value where padding is
    value_type = type_of(operands[1])
    padded = emit_like(op, [operand, zeros(TensorType((), value_type.dtype))], {"padding_config": config})[0]
    inside = emit_like(op, [lax.full(type_of(operand).shape, True, "bool"), np.asarray(False)],
                       {"padding_config": config})[0]
    values = lax.broadcast_in_dim(at_front(operands[1], dims[1], size), type_of(padded).shape, (0,))
    return [lax.select(inside, padded, values)], [0]


# --- partitioning: halo exchanges ---------------------------------------------------------------

partition_rules.register("slice", "pad", "rev")(partition_windowed)
partition_rules.register("concatenate")(partition_concatenate)
