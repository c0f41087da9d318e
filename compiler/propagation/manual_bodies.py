"""What a partial-manual body puts on its results' open dims, for the program around it.

A manual_computation whose body leaves some mesh axes free is partitioned over them like any
program (partitioning/manual_free_axes.py). Propagation does not cross its boundary, so a
result dim its out_sharding leaves open (``{?}``) got no free axis from the body, and the body's
result was gathered to whole along them to leave (XLA gives such dims the body's sharding).
After propagation, each such body is propagated on its own over the free axes, from the layouts
its operands arrive in, its results left unspecified; the free axes it puts on an open result dim
are written into the out_sharding (still open), and the program is propagated again.
"""

from __future__ import annotations

from dataclasses import replace

from meshjit.ir import Block, DimSharding, Func, Module, Op, TensorSharding


def free_axes(mesh, manual_axes) -> list[str]:
    return [name for name in mesh.axis_names if name not in manual_axes and mesh.axis_size(name) > 1]


def free_part(sharding: TensorSharding, manual_axes, local_shape, mesh) -> TensorSharding:
    """Per dim, the free axes after the dim's manual ones, as far as they divide the body's
    (manual-local) size; a free axis before a manual one cannot be kept inside the body."""
    dims = []
    for dim, size in zip(sharding.dims, local_shape):
        kept, shards = [], 1
        seen_free = False
        for axis in dim.axes:
            if axis.name in manual_axes:
                if seen_free:
                    kept = []
                    break
                continue
            seen_free = True
            shards *= axis.resolved_size(mesh)
            if axis.is_sub_axis or size % shards:
                break
            kept.append(axis)
        dims.append(DimSharding(tuple(kept)))
    return TensorSharding(sharding.mesh_name, tuple(dims))


def with_body_result_axes(module: Module, shardings: dict, analyze) -> Module | None:
    """``module`` with the free axes partial-manual bodies put on open result dims written into
    their out_shardings (``shardings``: the propagated layouts by value id; ``analyze``:
    propagation of a module), or None when no out_sharding changes."""
    mesh_name = next(iter(dict(module.meshes)), None)
    if mesh_name is None or len(module.meshes) != 1:
        return None
    mesh = module.mesh(mesh_name)
    func = module.main
    changed = False
    ops = []
    for op in func.body.ops:
        if op.name == "manual_computation" and free_axes(mesh, op.attrs["manual_axes"]):
            refined = _refined(op, shardings, mesh_name, mesh, analyze)
            changed |= refined is not op
            op = refined
        ops.append(op)
    if not changed:
        return None
    body = Block(func.body.args, tuple(ops), func.body.returns, func.body.arg_shardings)
    new_func = replace(func, body=body)
    return replace(module, funcs=tuple(new_func if other is func else other for other in module.funcs))


def _refined(op: Op, shardings: dict, mesh_name: str, mesh, analyze) -> Op:
    manual_axes = op.attrs["manual_axes"]
    outs = op.attrs["out_shardings"]
    if all(dim.is_closed for sharding in outs for dim in sharding.dims):
        return op
    body = op.regions[0]
    operand_free = tuple(free_part(shardings[value.id], manual_axes, arg.type.shape, mesh)
                         for arg, value in zip(body.args, op.operands))
    sub_module = Module(((mesh_name, mesh),), (Func("main", Block(body.args, body.ops, body.returns), operand_free,
                                                    (None,) * len(body.returns)),))
    returned = analyze(sub_module).result_shardings
    new_outs = []
    for out, inner, result in zip(outs, returned, op.results):
        held = {axis.name for dim in shardings[result.id].dims for axis in dim.axes} | {
            axis.name for axis in out.used_axes()}
        dims = []
        for dim, body_dim in zip(out.dims, inner.dims if inner is not None else out.dims):
            added = tuple(axis for axis in body_dim.axes if axis.name not in manual_axes and axis.name not in held)
            if dim.is_closed or not added or dim.axes and dim.axes[-1].name not in manual_axes:
                dims.append(dim)
                continue
            held |= {axis.name for axis in added}
            dims.append(DimSharding(tuple(dim.axes) + added, is_closed=False))
        new_outs.append(replace(out, dims=tuple(dims)))
    if new_outs == list(outs):
        return op
    return replace(op, attrs=op.attrs.updated(out_shardings=tuple(new_outs)))
