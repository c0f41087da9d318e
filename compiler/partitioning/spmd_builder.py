"""Emitting per-device ops while partitioning: fresh local values, shard offsets and masks."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from meshjit.ir import DenseAttr, MeshAttr, Op, SymbolRef, TensorSharding, TensorType, Value
from meshjit.ir.dtypes import kind_of, to_numpy
from meshjit.ir.shape_rules import infer_result_types


@dataclass
class Local:
    """A global value's per-device form: the local value and the sharding it is laid out in
    (dims' axes, plus unreduced axes when it holds partial results)."""

    value: Value
    sharding: TensorSharding
    global_shape: tuple[int, ...]

    @property
    def unreduced(self):
        return self.sharding.unreduced


class SpmdBuilder:
    """Collects the per-device ops of one function.

    Padding that makes uneven shards equal in size holds no data, so any value is correct
    there; ``poison_padding`` fills it with NaN (floats) or a large value (ints) instead of
    zeros, so that tests see padding that leaks into a result.
    """

    def __init__(self, mesh_name: str, mesh: MeshAttr, *, poison_padding: bool = False):
        self.mesh_name = mesh_name
        self.mesh = mesh
        self.poison_padding = poison_padding
        self.ops: list[Op] = []
        self.collective_reasons: dict[int, str] = {}
        # NOTE: reshards that had to gather a dim whole to re-split it, described for a warning
        self.rematerializations: list[str] = []
        self._axis_index_cache: dict[str, Value] = {}

    def padding_value(self, dtype: str) -> Value:
        """The scalar new padding is filled with."""
        if not self.poison_padding:
            return self.scalar(0, dtype)
        numpy_dtype = to_numpy(dtype)
        if kind_of(numpy_dtype) == "f":
            return self.scalar(np.nan, dtype)
        return self.scalar(True if numpy_dtype.kind == "b" else 1_000_003, dtype)

    def emit(self, name: str, operands, attrs=None, *, location=None, reason: str | None = None,
             regions=()) -> list[Value]:
        attrs = dict(attrs or {})
        operand_values = tuple(operands)
        types = infer_result_types(name, tuple(value.type for value in operand_values), attrs,
                                   tuple(regions), meshes={self.mesh_name: self.mesh})
        results = tuple(Value.fresh(result_type) for result_type in types)
        self.ops.append(Op(name, operand_values, results, attrs, tuple(regions), location=location))
        if reason is not None:
            self.collective_reasons[results[0].id] = reason
        return list(results)

    def emit1(self, name: str, operands, attrs=None, **options) -> Value:
        return self.emit(name, operands, attrs, **options)[0]

    def constant(self, array, dtype: str) -> Value:
        value = np.asarray(array, dtype=to_numpy(dtype))
        return self.emit1("constant", [], {"value": DenseAttr.from_array(value)})

    def scalar(self, number, dtype: str) -> Value:
        return self.constant(np.asarray(number), dtype)

    def broadcast_scalar(self, scalar: Value, shape) -> Value:
        return self.emit1("broadcast_in_dim", [scalar], {"shape": tuple(shape), "broadcast_dimensions": ()})

    def axis_index(self, axis) -> Value:
        """The device's index along a mesh axis or sub-axis, as an i32 scalar (cached)."""
        text = axis.name if axis.size is None else f"{axis.name}:({axis.pre_size}){axis.size}"
        cached = self._axis_index_cache.get(text)
        if cached is not None:
            return cached
        index = self.emit1("axis_index", [], {"mesh": SymbolRef(self.mesh_name), "axis": axis.name})
        if axis.size is not None:
            full = self.mesh.axis_size(axis.name)
            post = full // (axis.pre_size * axis.size)
            index = self.emit1("div", [index, self.scalar(post, "i32")])
            index = self.emit1("rem", [index, self.scalar(axis.size, "i32")])
        self._axis_index_cache[text] = index
        return index

    def shard_position(self, axes) -> Value:
        """Mixed-radix index of this device's shard over ``axes`` (major first), as i32."""
        if not axes:
            return self.scalar(0, "i32")
        position = self.axis_index(axes[0])
        for axis in axes[1:]:
            size = axis.resolved_size(self.mesh)
            scaled = self.emit1("mul", [position, self.scalar(size, "i32")])
            position = self.emit1("add", [scaled, self.axis_index(axis)])
        return position

    def shard_count(self, axes) -> int:
        """How many shards a dim split over ``axes`` has."""
        return math.prod(axis.resolved_size(self.mesh) for axis in axes)

    def shard_offset(self, axes, local_size: int) -> Value:
        """Where this device's shard starts along a dim split over ``axes``."""
        position = self.shard_position(axes)
        return self.emit1("mul", [position, self.scalar(local_size, "i32")])

    def mask_padding(self, value: Value, dim: int, global_size: int, axes, fill) -> Value:
        """Replace the padding past ``global_size`` in a dim split over ``axes`` by ``fill``."""
        local_type = value.type
        local_size = local_type.shape[dim]
        if local_size * math.prod(axis.resolved_size(self.mesh) for axis in axes) == global_size:
            return value
        iota = self.emit1("iota", [], {"dtype": "i32", "shape": local_type.shape, "dimension": dim})
        offset = self.broadcast_scalar(self.shard_offset(axes, local_size), local_type.shape)
        positions = self.emit1("add", [iota, offset])
        limit = self.broadcast_scalar(self.scalar(global_size, "i32"), local_type.shape)
        inside = self.emit1("compare", [positions, limit], {"direction": "lt"})
        filler = self.broadcast_scalar(self.scalar(fill, local_type.dtype), local_type.shape)
        return self.emit1("select", [inside, value, filler])


def local_type(global_type: TensorType, sharding: TensorSharding, mesh: MeshAttr) -> TensorType:
    return TensorType(sharding.local_shape(global_type.shape, mesh), global_type.dtype)


def replicated(mesh_name: str, rank: int) -> TensorSharding:
    return TensorSharding.replicated_over(mesh_name, rank)


def describe(op: Op, operand: int | None = None) -> str:
    """How collective reasons and warnings name an op (or one of its operands) and its line."""
    where = f" at {op.location}" if op.location else ""
    return f"operand {operand} of {op.name}{where}" if operand is not None else f"{op.name}{where}"


def reduction_identity(reduction: str, dtype: str):
    """The value that leaves ``reduction`` unchanged in ``dtype``, used to mask the padding of
    uneven shards: 0 for sums, the lowest value for max and the highest for min."""
    if reduction == "sum":
        return 0
    numpy_dtype = to_numpy(dtype)
    if kind_of(numpy_dtype) == "f":
        return float("-inf") if reduction == "max" else float("inf")
    info = np.iinfo(numpy_dtype)
    return int(info.min) if reduction == "max" else int(info.max)
