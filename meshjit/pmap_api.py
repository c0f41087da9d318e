"""meshjit.pmap: JAX's pmap, built as JAX 0.10 builds it, on shard_map over a 1-D mesh of the
devices: each device takes one slice of the mapped axis (``in_axes``), runs the function with
the collectives of ``axis_name`` at hand, and the results are stacked along ``out_axes``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import optree

from meshjit.compiler.frontend.operands import is_array_like, shape_of
from meshjit.runtime.devices import devices as all_devices
from meshjit.runtime.mesh import Mesh
from meshjit.runtime.partition_spec import PartitionSpec

from . import numpy as jnp
from .jit_api import Jitted
from .shard_map_api import shard_map
from .tree_util import NAMESPACE
from .tree_util import _flatten as flatten_tree, _structure as structure_spec
from .vmap_api import _batch_size, _broadcast_axes, _check_axes_tree, _is_axis_leaf, _normalised

_UNNAMED = "_pmap_axis"  # the mesh axis of a pmap without axis_name (no collective can name it)


def _static_numbers(numbers, argument: str) -> tuple[int, ...]:
    numbers = (numbers,) if isinstance(numbers, int) else tuple(numbers)
    for number in numbers:
        if not isinstance(number, int) or isinstance(number, bool):
            raise TypeError(f"pmap {argument} must be ints, got {number!r}")
    return numbers


def pmap(fun: Callable, axis_name=None, *, in_axes=0, out_axes=0, static_broadcasted_argnums=(),
         devices=None, backend=None, axis_size=None, donate_argnums=(), global_arg_shapes=None):
    """``fun`` run once per device on one slice of the mapped axis of its arguments, as
    ``jax.pmap`` (JAX 0.10 runs it as a shard_map over a 1-D mesh of the devices)."""
    if not callable(fun):
        raise TypeError(f"pmap expects a callable, got {type(fun).__name__}: {fun!r}")
    if axis_name is not None and not isinstance(axis_name, str):
        raise TypeError(f"pmap axis_name must be a string in meshjit (it names a mesh axis), got {axis_name!r}")
    if backend not in (None, "cpu"):
        raise ValueError(f"pmap backend must be 'cpu' or None (meshjit's devices are CPUs), got {backend!r}")
    if global_arg_shapes is not None:
        raise ValueError("pmap global_arg_shapes was removed from JAX; pass arrays of the global shape")
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    _check_axes_tree(in_axes, "in_axes", "positional arguments passed to the function")
    _check_axes_tree(out_axes, "out_axes", "outputs of the function")
    static = _static_numbers(static_broadcasted_argnums, "static_broadcasted_argnums")
    donated = _static_numbers(donate_argnums, "donate_argnums")
    name = axis_name or _UNNAMED
    programs: dict = {}

    @functools.wraps(fun)
    def pmapped(*args, **kwargs):
        positions = {number % len(args) for number in static if -len(args) <= number < len(args)}
        dynamic_args = tuple(arg for index, arg in enumerate(args) if index not in positions)
        static_values = tuple((index, args[index]) for index in sorted(positions))
        axes_prefix = in_axes
        if isinstance(in_axes, tuple):
            if len(in_axes) != len(args):
                raise ValueError(f"pmap in_axes must be an int, None, or a tuple of entries corresponding "
                                 f"to the positional arguments passed to the function, but got "
                                 f"len(in_axes)={len(in_axes)}, len(args)={len(args)}")
            axes_prefix = tuple(axis for index, axis in enumerate(in_axes) if index not in positions)
        leaves, treedef = flatten_tree((dynamic_args, kwargs))
        arg_count = structure_spec(dynamic_args).num_leaves
        axes = _broadcast_axes(axes_prefix, dynamic_args, "in_axes") + [0] * (len(leaves) - arg_count)
        dims = [_normalised(axis, len(shape_of(leaf)), shape_of(leaf), "in_axes")
                if axis is not None and is_array_like(leaf) else None for leaf, axis in zip(leaves, axes)]
        size = _batch_size(leaves, dims, axis_size)
        mesh_devices = _devices(devices, size)
        key = (treedef, tuple(dims), static_values, tuple(device.id for device in mesh_devices))
        program = programs.get(key)
        if program is None:
            program = programs[key] = _program(fun, name, treedef, dims, static_values, mesh_devices,
                                               out_axes, donated, positions, len(args))
        return program(*leaves)

    return pmapped


def _devices(devices, size: int) -> list:
    if devices is None:
        available = all_devices()
        if size > len(available):
            raise ValueError(f"compiling computation that requires {size} logical devices, but only "
                             f"{len(available)} XLA devices are available (num_replicas={size})")
        return list(available[:size])
    devices = list(devices)
    if len(devices) != size:
        raise ValueError(f"pmap got {len(devices)} devices but the mapped axis has size {size}; "
                         f"give as many devices as the axis has entries")
    return devices


def _program(fun, name, treedef, dims, static_values, mesh_devices, out_axes, donated, positions, count):
    """The jitted shard_map running ``fun`` for one signature of the pmapped call: the mapped
    dims go first outside the shard_map, so each device's block holds one slice at dim 0."""
    mesh = Mesh(np.array(mesh_devices), (name,))
    boxes: dict = {}

    def body(*blocks):
        values = [block if dim is None else block[0] for block, dim in zip(blocks, dims)]
        dynamic_args, kwargs = optree.tree_unflatten(treedef, values)
        iterator = iter(dynamic_args)
        statics = dict(static_values)
        call_args = [statics[index] if index in positions else next(iterator) for index in range(count)]
        output = fun(*call_args, **kwargs)
        outputs, boxes["out"] = flatten_tree(output)
        boxes["targets"] = _broadcast_axes(out_axes, output, "out_axes")
        stacked = [leaf if target is None else jnp.expand_dims(leaf, 0)
                   for leaf, target in zip(outputs, boxes["targets"])]
        return optree.tree_unflatten(boxes["out"], stacked)

    out_specs = optree.tree_map(lambda axis: PartitionSpec() if axis is None else PartitionSpec(name), out_axes,
                                is_leaf=_is_axis_leaf, none_is_leaf=True, namespace=NAMESPACE)
    in_specs = tuple(PartitionSpec() if dim is None else PartitionSpec(name) for dim in dims)
    mapped = shard_map(body, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False)

    def run(*leaves):
        moved = [leaf if dim is None else jnp.moveaxis(leaf, dim, 0) for leaf, dim in zip(leaves, dims)]
        outputs = optree.tree_leaves(mapped(*moved), namespace=NAMESPACE)
        placed = [output if target is None else
                  jnp.moveaxis(output, 0, _normalised(target, len(shape_of(output)), (), "out_axes"))
                  for output, target in zip(outputs, boxes["targets"])]
        return optree.tree_unflatten(boxes["out"], placed)

    # NOTE: donation is a memory hint, kept per leaf of the donated positional arguments
    return Jitted(run, donate_argnums=tuple(index for index in range(len(dims)) if index in donated))


__all__ = ["pmap"]
