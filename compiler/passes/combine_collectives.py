"""Collective rewrites on per-device modules.

- ``all_reduce`` whose only user slices out this device's shard of one dim (a dynamic_slice at
  the shard offset over the same axes) becomes one ``reduce_scatter``: each device receives only
  its part of the sum, sending half the bytes of an all-reduce.
- Chained collectives of one kind merge: ``all_reduce(all_reduce(v, A), B)`` is
  ``all_reduce(v, A + B)``; ``all_gather`` over A then B on one dim is one gather over B + A.
"""

from __future__ import annotations

import math
from dataclasses import replace

from meshjit.ir import Module, Op, Value

from .rewrite_util import definitions, rename_operands, use_counts, with_ops


def _scalar_constant(value: Value, defs) -> int | None:
    op = defs.get(value.id)
    if op is None or op.name != "constant" or op.result.type.shape:
        return None
    return int(op.attrs["value"].array)


def _shard_position_axes(value: Value, defs) -> list[str] | None:
    """The axes of a ``shard_position`` chain: 0, then ``position * size + axis_index(a)``."""
    if _scalar_constant(value, defs) == 0:
        return []
    op = defs.get(value.id)
    if op is None or op.name != "add":
        return None
    scaled, index = (defs.get(operand.id) for operand in op.operands)
    if index is None or index.name != "axis_index" or scaled is None or scaled.name != "mul":
        return None
    inner = _shard_position_axes(scaled.operands[0], defs)
    return None if inner is None else inner + [index.attrs["axis"]]


def _shard_offset(value: Value, defs) -> tuple[list[str], int] | None:
    op = defs.get(value.id)
    if op is None or op.name != "mul":
        return None
    chunk = _scalar_constant(op.operands[1], defs)
    axes = _shard_position_axes(op.operands[0], defs)
    return None if chunk is None or axes is None else (axes, chunk)


def _scatter_dim(slice_op: Op, source: Op, defs, mesh) -> int | None:
    """The dim ``slice_op`` cuts this device's shard from, over exactly ``source``'s axes."""
    starts = slice_op.operands[1:]
    shape = slice_op.operands[0].type.shape
    dims = [dim for dim, start in enumerate(starts) if _scalar_constant(start, defs) != 0]
    if len(dims) != 1:
        return None
    dim = dims[0]
    offset = _shard_offset(starts[dim], defs)
    axes = list(source.attrs["axes"])
    sizes = slice_op.attrs["slice_sizes"]
    if offset is None or offset[0] != axes or offset[1] != sizes[dim]:
        return None
    if sizes[dim] * math.prod(mesh.axis_size(name) for name in axes) != shape[dim]:
        return None
    if any(size != shape[d] for d, size in enumerate(sizes) if d != dim):
        return None
    return dim


def fuse_reduce_scatter(module: Module) -> Module:
    func = module.main
    mesh = module.mesh(func.spmd_mesh)
    defs, uses = definitions(func), use_counts(func)
    renamed: dict[int, Value] = {}
    ops = []
    for op in func.body.ops:
        op = rename_operands(op, renamed)
        source = defs.get(op.operands[0].id) if op.name == "dynamic_slice" else None
        if source is None or source.name != "all_reduce" or uses[source.result.id] != 1:
            ops.append(op)
            continue
        dim = _scatter_dim(op, source, defs, mesh)
        if dim is None:
            ops.append(op)
            continue
        scatter = Op("reduce_scatter", source.operands, op.results,
                     {**source.attrs, "dim": dim}, location=source.location)
        ops.append(scatter)
    used = {operand.id for op in ops for operand in op.operands} | {value.id for value in func.returns}
    kept = [op for op in ops if op.name != "all_reduce" or op.result.id in used]
    return with_ops(module, kept, renamed)


def merge_chained_collectives(module: Module) -> Module:
    func = module.main
    defs, uses = definitions(func), use_counts(func)
    merged: dict[int, Op] = {}
    ops = []
    for op in func.body.ops:
        inner = defs.get(op.operands[0].id) if op.operands else None
        if inner is not None and inner.name == op.name and _mergeable(inner, op) and uses[inner.result.id] == 1:
            inner = merged.get(inner.result.id, inner)
            axes = _merged_axes(inner, op)
            combined = replace(op, operands=inner.operands, attrs=op.attrs.updated(axes=axes))
            merged[op.result.id] = combined
            ops = [existing for existing in ops if all(r.id != inner.result.id for r in existing.results)]
            ops.append(combined)
            continue
        ops.append(op)
    return with_ops(module, ops)


def _mergeable(inner: Op, outer: Op) -> bool:
    if set(inner.attrs.get("axes", ())) & set(outer.attrs.get("axes", ())):
        return False  # NOTE: a collective repeated over the same axes is not one over both
    if inner.name == "all_reduce":
        return inner.attrs["reduction"] == outer.attrs["reduction"]
    if inner.name == "all_gather":
        return inner.attrs["dim"] == outer.attrs["dim"]
    return False


def _merged_axes(inner: Op, outer: Op) -> tuple[str, ...]:
    if inner.name == "all_gather":
        # gathering A (the minor axes) first, then B: B is major in the combined gather
        return tuple(outer.attrs["axes"]) + tuple(inner.attrs["axes"])
    return tuple(inner.attrs["axes"]) + tuple(outer.attrs["axes"])
