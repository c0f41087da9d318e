"""The mesh axes a traced body is manual over: the AxisEnvironment a shard_map pushes while it
traces its body, vmap's named axes, and the helpers the collectives share to find their axes,
check their arguments and bind their ops over pytrees."""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import optree
from meshjit.ir import MeshAttr, SymbolRef

from .operands import dtype_of
from .trace import Trace, bind, current_trace


# NOTE: the facade's pytree namespace (meshjit.tree_util.NAMESPACE); collectives map over pytrees.
_TREE_NAMESPACE = "meshjit"


@dataclass
class AxisEnvironment:
    """The manual mesh axes of the shard_map body being traced in ``trace``.

    ``invariant_results`` holds the ids of values the user asked to be invariant over the axes
    they were gathered over (``all_gather(..., to="invarying")``), for the varying-axes check.
    ``argument_axes`` holds, per explicit body argument, the axes its in_spec splits it over;
    ``check_vma`` is the shard_map's flag (without it ``pcast`` does nothing, as in JAX).
    """

    trace: Trace | None
    mesh_name: str
    mesh: MeshAttr
    manual_axes: tuple[str, ...]
    invariant_results: set[int] = field(default_factory=set)
    argument_axes: tuple[frozenset[str], ...] = ()
    check_vma: bool = True

    def group_size(self, axes: tuple[str, ...]) -> int:
        return math.prod(self.mesh.axis_size(name) for name in axes)


class _EnvironmentStack(threading.local):
    def __init__(self):
        self.environments: list[AxisEnvironment] = []


_stack = _EnvironmentStack()


def innermost_environment() -> AxisEnvironment | None:
    """The environment of the shard_map body being traced most recently, if any."""
    return _stack.environments[-1] if _stack.environments else None


def in_body(environment: AxisEnvironment | None, trace: Trace | None) -> bool:
    """Whether ``trace`` records ``environment``'s body or a region nested in it."""
    while environment is not None and trace is not None:
        if trace is environment.trace:
            return True
        trace = trace.parent
    return False


@contextmanager
def bound_axes(environment: AxisEnvironment) -> Iterator[AxisEnvironment]:
    """Make ``environment``'s manual axes nameable by collectives while a body is traced."""
    _stack.environments.append(environment)
    try:
        yield environment
    finally:
        _stack.environments.pop()


def axis_names_of(axis_name, function: str) -> tuple[str, ...]:
    names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"{function}: axis names are mesh axis name strings, got {name!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"{function}: axis_name {axis_name!r} repeats an axis")
    return names


def bound(axis_name, function: str) -> tuple[AxisEnvironment, tuple[str, ...]]:
    """The environment that binds every axis in ``axis_name``, or a NameError naming the axis."""
    names = axis_names_of(axis_name, function)
    if not names:
        raise ValueError(f"{function}: axis_name must name at least one mesh axis, got {axis_name!r}")
    environment = innermost_environment()
    inside = in_body(environment, current_trace())
    for name in names:
        if inside and name in environment.manual_axes:
            continue
        where = (f"the enclosing shard_map is manual over {list(environment.manual_axes)}" if inside
                 else "it was called outside the body of a meshjit.shard_map")
        raise NameError(f"unbound axis name: {name!r}. {function} takes the mesh axes a "
                        f"shard_map body is manual over, but {where}")
    return environment, names


class _NamedAxes:
    """``vmap.named_axes``, imported on first use (vmap's modules import this one's neighbours)."""

    def __getattr__(self, name):
        from .vmap import named_axes as module

        return getattr(module, name)


named_axes = _NamedAxes()


def vmap_axes(axis_name) -> tuple[list, tuple]:
    """``axis_name`` split into the vmaps in progress it names (innermost binding) and the rest
    (mesh axes of a shard_map body)."""
    from .vmap.transform import named_axis  # NOTE: vmap imports this module's neighbours

    names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
    batched, others = [], []
    for name in names:
        try:
            axis = named_axis(name)
        except TypeError:  # unhashable: not a vmap axis name
            axis = None
        (batched if axis is not None else others).append(axis if axis is not None else name)
    return batched, tuple(others)


def single_vmap_axis(axis_name, function: str):
    """The vmap axis ``axis_name`` names, when it names one (alone; mixing it with mesh axes
    is only possible for the reductions)."""
    batched, others = vmap_axes(axis_name)
    if batched and others:
        raise ValueError(f"{function}: axis_name {axis_name!r} mixes a vmap axis with mesh axes; "
                         f"call {function} once per kind of axis")
    if len(batched) > 1:
        raise ValueError(f"{function}: axis_name {axis_name!r} names several vmap axes; call it once per axis")
    return batched[0] if batched else None


def no_groups(axis_index_groups, function: str) -> None:
    if axis_index_groups is not None:
        raise ValueError(f"{function}: axis_index_groups is not supported for {function}; split the mesh axis "
                         f"into two named axes and use the one that forms the groups")


def bind_collective(name: str, leaf, environment: AxisEnvironment, attrs: dict):
    attrs = {"mesh": SymbolRef(environment.mesh_name), **attrs}
    return bind(name, [leaf], attrs, weak_type=dtype_of(leaf).weak)[0]


def tree_map(function, tree):
    # NOTE: flatten and rebuild rather than optree.tree_map, so that no frame outside meshjit
    # sits between the user's call and bind (ops record the user's source line).
    leaves, treedef = optree.tree_flatten(tree, namespace=_TREE_NAMESPACE)
    return optree.tree_unflatten(treedef, [function(leaf) for leaf in leaves])
