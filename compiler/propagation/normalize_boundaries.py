"""The normalize_boundaries pass: the argument and result shardings propagation chose become
layouts Arrays can hold (whole mesh axes that divide the dim, partial sums over whole axes),
before partitioning."""

from __future__ import annotations

from dataclasses import replace

from meshjit.ir import DimSharding, Module, TensorSharding


def _boundary_sharding(sharding: TensorSharding | None, shape, mesh) -> TensorSharding | None:
    """A layout Arrays can hold: whole mesh axes only, each dim keeping the major axes whose
    product divides it (sub-axes, and axes that would pad the dim, dropped with what follows).

    NOTE: user in_shardings and out_shardings were checked to divide when traced, so only
    layouts propagation chose for uncommitted arguments and results are cut here."""
    if sharding is None:
        return None
    dims = []
    for size, dim in zip(shape, sharding.dims):
        axes, shards = [], 1
        for axis in dim.axes:
            shards *= mesh.axis_size(axis.name)
            if axis.size is not None or size % shards:
                break
            axes.append(axis)
        dims.append(DimSharding(tuple(axes), dim.is_closed, dim.priority))
    # NOTE: Arrays hold partial sums over whole axes (runtime/unreduced.py), no max or min
    unreduced = sharding.unreduced if sharding.reduction == "sum" and not any(
        axis.is_sub_axis for axis in sharding.unreduced) else ()
    return TensorSharding(sharding.mesh_name, tuple(dims), sharding.replicated, unreduced)


def normalize_boundaries(module: Module) -> Module:
    """``module`` with its entry function's boundary shardings cut to layouts Arrays can hold."""
    func = module.main

    def boundary(sharding, value):
        mesh = module.mesh(sharding.mesh_name) if sharding is not None else None
        return _boundary_sharding(sharding, value.type.shape, mesh)

    new_func = replace(func, arg_shardings=tuple(boundary(s, v) for s, v in zip(func.arg_shardings, func.args)),
                       result_shardings=tuple(boundary(s, v) for s, v in zip(func.result_shardings, func.returns)))
    return replace(module, funcs=(new_func,))
