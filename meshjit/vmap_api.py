"""meshjit.vmap: JAX's vmap over pytrees (``in_axes``/``out_axes`` prefixes, negative axes,
``axis_name`` for collectives over the mapped axis, ``axis_size``, ``spmd_axis_name``), on the
IR transformation in ``meshjit.compiler.frontend.vmap``. Called on concrete arrays it runs as one
jitted program, like the autodiff transformations.
"""

from __future__ import annotations

import functools
import inspect
import operator
from collections.abc import Callable

import numpy as np
import optree

from meshjit.compiler.frontend import vmap as _vmap
from meshjit.compiler.frontend.operands import is_array_like, shape_of
from meshjit.compiler.frontend.trace import Tracer, is_concrete_array
from meshjit.runtime.mesh import current_mesh
from meshjit.runtime.partition_spec import PartitionSpec

from meshjit.compiler.frontend.refs import vmapped_body

from ._jit_refs import has_refs, vmap_with_refs
from .ad_api import _run
from .constraint_api import with_sharding_constraint
from ._pytreedef import PyTreeDef
from .tree_util import NAMESPACE
from .tree_util import _flatten as flatten_tree, _structure as structure_spec

_AXES_MESSAGE = ("vmap {which} must be an int, None, or a tuple of entries corresponding to the "
                 "{what}, but got {axes}.")


def _is_axis_leaf(value) -> bool:
    return value is None or (isinstance(value, int) and not isinstance(value, bool))


def _check_axes_tree(axes, which: str, what: str) -> None:
    for leaf in optree.tree_leaves(axes, is_leaf=_is_axis_leaf, none_is_leaf=True, namespace=NAMESPACE):
        if not _is_axis_leaf(leaf):
            raise TypeError(_AXES_MESSAGE.format(which=which, what=what, axes=axes))


def _broadcast_axes(axes, tree, which: str) -> list:
    """One axis (or None) per leaf of ``tree`` from the pytree prefix ``axes``."""
    prefix = structure_spec(axes, is_leaf=_is_axis_leaf, none_is_leaf=True)
    try:
        subtrees = prefix.flatten_up_to(tree)
    except ValueError as error:
        raise ValueError(f"vmap {which} specification must be a tree prefix of the corresponding "
                         f"value, got specification {axes} for value tree "
                         f"{PyTreeDef(structure_spec(tree))}: {error}") from None
    leaf_axes = optree.tree_leaves(axes, is_leaf=_is_axis_leaf, none_is_leaf=True, namespace=NAMESPACE)
    result = []
    for axis, subtree in zip(leaf_axes, subtrees):
        result += [axis] * structure_spec(subtree).num_leaves
    return result


def _normalised(axis: int | None, rank: int, shape, which: str) -> int | None:
    if axis is None:
        return None
    if not -rank <= axis < rank:
        raise ValueError(
            f"vmap was requested to map its argument along axis {axis}, which implies that its rank "
            f"should be at least {axis + 1 if axis >= 0 else -axis}, but is only {rank} (its shape is "
            f"{tuple(shape)})" if which == "in_axes" else
            f"vmap out_axes entry {axis} is out of range for an output of rank {rank}")
    return axis % rank


def _batch_size(leaves, dims, axis_size, names=None) -> int:
    sizes = {shape_of(leaf)[dim] for leaf, dim in zip(leaves, dims) if dim is not None}
    if axis_size is not None:
        sizes.add(axis_size)
    if not sizes:
        raise ValueError("vmap must have at least one non-None value in in_axes or axis_size must be specified")
    if len(sizes) > 1:
        names = names or [f"argument {index}" for index in range(len(leaves))]
        lines = [f"  * the `axis_size` argument was {axis_size}"] if axis_size is not None else []
        lines += [
            f"  * one axis had size {shape_of(leaf)[dim]}: axis {dim} of {name} of type "
            f"{np.dtype(leaf.dtype).name if hasattr(leaf, 'dtype') else type(leaf).__name__}{list(shape_of(leaf))}"
            for leaf, dim, name in zip(leaves, dims, names) if dim is not None]
        raise ValueError("vmap got inconsistent sizes for array axes to be mapped:\n" + ";\n".join(lines))
    return sizes.pop()


def _leaf_names(fun: Callable, args: tuple, kwargs: dict) -> list[str]:
    """Each argument leaf as JAX's vmap errors name it: ``argument x['a']`` for a named
    positional parameter, ``kwargs['y']`` for a keyword, ``args[2]`` otherwise."""
    try:
        parameters = [parameter for parameter in inspect.signature(fun).parameters.values()
                      if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        parameters = []
    paths = optree.tree_paths((args, kwargs), namespace=NAMESPACE)
    names = []
    for path in paths:
        rest = "".join(f"[{key!r}]" for key in path[2:])
        if path[0] == 1:
            names.append(f"kwargs[{path[1]!r}]{rest}")
        elif path[1] < len(parameters):
            names.append(f"argument {parameters[path[1]].name}{rest}")
        else:
            names.append(f"args[{path[1]}]{rest}")
    return names


def _spmd_axes(spmd_axis_name) -> tuple[str, ...]:
    if spmd_axis_name is None:
        return ()
    names = tuple(spmd_axis_name) if isinstance(spmd_axis_name, (tuple, list)) else (spmd_axis_name,)
    if not all(isinstance(name, str) for name in names):
        raise TypeError(f"vmap spmd_axis_name must be a mesh axis name or a tuple of them, got {spmd_axis_name!r}")
    return names


def _constrain_batch_dim(value, dim: int, spmd_axes: tuple[str, ...]):
    """``value`` with its batch dim ``dim`` sharded over ``spmd_axes`` (when a mesh is set)."""
    mesh = current_mesh()
    if not spmd_axes or mesh is None or not mesh.axis_names:
        return value
    missing = [name for name in spmd_axes if name not in mesh.axis_names]
    if missing:
        raise ValueError(f"vmap spmd_axis_name {missing} are not axes of the mesh {mesh.axis_names}")
    entries = [PartitionSpec.UNCONSTRAINED] * len(shape_of(value))
    entries[dim] = spmd_axes if len(spmd_axes) > 1 else spmd_axes[0]
    return with_sharding_constraint(value, PartitionSpec(*entries))


def vmap(fun: Callable, in_axes=0, out_axes=0, axis_name=None, axis_size=None, spmd_axis_name=None):
    """``fun`` mapped over a leading (or ``in_axes``) dim of its arguments, as ``jax.vmap``."""
    if not callable(fun):
        raise TypeError(f"vmap expects a callable, got {type(fun).__name__}: {fun!r}")
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    _check_axes_tree(in_axes, "in_axes", "positional arguments passed to the function")
    _check_axes_tree(out_axes, "out_axes", "outputs of the function")
    if axis_size is not None:
        axis_size = operator.index(axis_size)
    spmd_axes = _spmd_axes(spmd_axis_name)

    @functools.wraps(fun)
    def vmapped(*args, **kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(f"vmap in_axes must be an int, None, or a tuple of entries corresponding to "
                             f"the positional arguments passed to the function, but got len(in_axes)="
                             f"{len(in_axes)}, len(args)={len(args)}")
        if has_refs((args, kwargs)):
            options = {"axis_name": axis_name, "axis_size": axis_size, "spmd_axis_name": spmd_axis_name}
            axes = _broadcast_axes(in_axes, args, "in_axes")
            return vmap_with_refs(vmap, fun, in_axes, out_axes, axes, options, args, kwargs)
        leaves, treedef = flatten_tree((args, kwargs))
        arg_count = structure_spec(args).num_leaves
        axes = _broadcast_axes(in_axes, args, "in_axes") + [0] * (len(leaves) - arg_count)
        for leaf, axis in zip(leaves, axes):
            if axis is not None and not is_array_like(leaf):
                raise TypeError(f"vmap: mapped arguments must be arrays, got {type(leaf).__name__}: {leaf!r}")
        dims = [_normalised(axis, len(shape_of(leaf)), shape_of(leaf), "in_axes") if axis is not None else None
                for leaf, axis in zip(leaves, axes)]
        size = _batch_size(leaves, dims, axis_size, _leaf_names(fun, args, kwargs))
        dynamic = [index for index, leaf in enumerate(leaves) if is_array_like(leaf)]
        boxes: dict = {}

        def flat_fun(*values):
            full = list(leaves)
            for index, value in zip(dynamic, values):
                full[index] = value
            call_args, call_kwargs = optree.tree_unflatten(treedef, full)
            with vmapped_body():
                output_leaves, boxes["out"] = flatten_tree(fun(*call_args, **call_kwargs))
            boxes["raw"] = output_leaves
            return output_leaves

        def compute(*values):
            values = [_constrain_batch_dim(value, dims[index], spmd_axes) if dims[index] is not None else value
                      for index, value in zip(dynamic, values)]
            outputs, out_dims = _vmap.vmap_flat(flat_fun, values, [dims[index] for index in dynamic], size,
                                                axis_name=axis_name, spmd_axes=spmd_axes)
            boxes["targets"] = _broadcast_axes(out_axes, optree.tree_unflatten(boxes["out"], outputs), "out_axes")
            return [_place(output, dim, target, size, spmd_axes)
                    for output, dim, target in zip(outputs, out_dims, boxes["targets"])]

        results = _run(compute, [leaves[index] for index in dynamic], f"vmap_of_{getattr(fun, '__name__', 'fun')}")
        # NOTE: as JAX, an unmapped output the function did not compute (a Python or numpy
        # value) comes back as it is
        results = [raw if target is None and not isinstance(raw, Tracer) and not is_concrete_array(raw) else result
                   for result, raw, target in zip(results, boxes["raw"], boxes["targets"])]
        return optree.tree_unflatten(boxes["out"], results)

    return vmapped


def _place(output, dim, target, size: int, spmd_axes):
    """A batched output with its batch dim at ``target`` (``None``: not mapped)."""
    if target is None:
        if dim is not None:
            raise ValueError(f"at vmap out_axes, got axis spec None but output was batched on axis {dim}")
        return output
    rank = len(shape_of(output)) + (1 if dim is None else 0)
    target = _normalised(target, rank, (), "out_axes")
    placed = _vmap.move_dim(_vmap.at_front(output, dim, size), 0, target)
    return _constrain_batch_dim(placed, target, spmd_axes)
