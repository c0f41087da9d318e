"""meshjit.experimental.pjit: JAX ≤ 0.3's pjit, as meshjit.jit under the ``with mesh:`` mesh.

PartitionSpecs in ``in_axis_resources`` / ``out_axis_resources`` name axes of the mesh of the
enclosing ``with mesh:`` (or ``maps.mesh``); None means replicated. GlobalDeviceArray inputs run
as their Arrays; outputs are GlobalDeviceArrays when ``jax_parallel_functions_output_gda`` is on.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import optree

from meshjit.ir.config import config
from meshjit.runtime.array import Array
from meshjit.runtime.global_device_array import GlobalDeviceArray
from meshjit.runtime.mesh import Mesh, resource_mesh
from meshjit.runtime.partition_spec import PartitionSpec as PartitionSpec
from meshjit.runtime.sharding import NamedSharding
from meshjit.runtime.transfer import device_put

from ..jit_api import Jitted, Lowered
from ..constraint_api import with_sharding_constraint as _with_sharding_constraint
from ..tree_util import NAMESPACE


class _Marker:
    def __init__(self, name: str):
        self._name = name

    def __repr__(self) -> str:
        return self._name


FROM_GDA = _Marker("FROM_GDA")  # take an input's layout from the GlobalDeviceArray passed there
_UNSPECIFIED = _Marker("UNSPECIFIED")  # the default: inputs keep their layout, outputs are propagated


def _is_resource_leaf(node) -> bool:
    return node is None or isinstance(node, (PartitionSpec, _Marker))


def _leaves(resources) -> list:
    return optree.tree_leaves(resources, is_leaf=_is_resource_leaf, none_is_leaf=True,
                              namespace=NAMESPACE)


def _check_resources(resources, argument: str):
    if isinstance(resources, list):
        resources = tuple(resources)  # NOTE: JAX reads a top-level list as the per-argument tuple
    for leaf in _leaves(resources):
        if not _is_resource_leaf(leaf):
            raise TypeError(
                f"pjit {argument} entries must be PartitionSpecs, None (replicated) or FROM_GDA, got "
                f"{type(leaf).__name__}: {leaf!r}"
            )
    return resources


def _needs_mesh(resources) -> bool:
    return any(leaf is None or isinstance(leaf, PartitionSpec) for leaf in _leaves(resources))


def _named_sharding(spec, mesh: Mesh, argument: str) -> NamedSharding | None:
    """The jit sharding of one resource leaf: None (replicated) and specs bind to ``mesh``."""
    if isinstance(spec, _Marker):
        return None
    try:
        return NamedSharding(mesh, PartitionSpec() if spec is None else spec)
    except ValueError as error:
        raise ValueError(f"pjit {argument}: {error}") from None


def _trimmed(spec: PartitionSpec) -> tuple:
    """The mesh axes of each dim, without trailing unsplit dims: equal layouts compare equal."""
    entries = [spec.axis_names_of(dim) for dim in range(len(spec))]
    while entries and not entries[-1]:
        entries.pop()
    return tuple(entries)


def _unwrap(tree):
    return optree.tree_map(lambda leaf: leaf.to_array() if isinstance(leaf, GlobalDeviceArray) else leaf,
                           tree, none_is_leaf=True, namespace=NAMESPACE)


class Pjitted:
    """The callable ``pjit`` returns: one meshjit.jit per mesh it is called under."""

    def __init__(self, fun: Callable, in_axis_resources, out_axis_resources, static_argnums,
                 donate_argnums):
        if not callable(fun):
            raise TypeError(f"pjit expects a callable, got {type(fun).__name__}: {fun!r}")
        self._fun = fun
        self._in_resources = _check_resources(in_axis_resources, "in_axis_resources")
        self._out_resources = _check_resources(out_axis_resources, "out_axis_resources")
        if isinstance(static_argnums, int):
            static_argnums = (static_argnums,)
        self._static_argnums = tuple(static_argnums or ())
        self._donate_argnums = donate_argnums
        self._jitted: dict[Mesh | None, Jitted] = {}
        functools.update_wrapper(self, fun)

    def __call__(self, *args, **kwargs):
        mesh = self._mesh_for(args)
        outputs = self._jitted_for(mesh)(*_unwrap(args), **_unwrap(kwargs))
        if not config.read("jax_parallel_functions_output_gda"):
            return outputs
        return optree.tree_map(lambda leaf: _as_gda(leaf, mesh) if isinstance(leaf, Array) else leaf,
                               outputs, none_is_leaf=True, namespace=NAMESPACE)

    def lower(self, *args, **kwargs) -> Lowered:
        mesh = self._mesh_for(args)
        return self._jitted_for(mesh).lower(*_unwrap(args), **_unwrap(kwargs))

    def _mesh_for(self, args) -> Mesh | None:
        """The mesh of this call, after checking the arguments against the resources."""
        mesh = resource_mesh()
        if mesh is not None and mesh.empty:
            mesh = None
        if mesh is None and (_needs_mesh(self._in_resources) or _needs_mesh(self._out_resources)):
            raise RuntimeError(
                f"pjit of {self.__name__} was called outside a mesh context, but its in_axis_resources "
                f"{self._in_resources!r} / out_axis_resources {self._out_resources!r} name mesh "
                f"axes; call it inside `with mesh:` or `with meshjit.experimental.maps.mesh(devices, "
                f"axis_names):`"
            )
        self._check_arguments(args, mesh)
        return mesh

    def _check_arguments(self, args, mesh: Mesh | None) -> None:
        count = len(args)
        static = {index % count for index in self._static_argnums if -count <= index < count}
        dynamic = tuple(arg for index, arg in enumerate(args) if index not in static)
        resources = self._in_resources
        if isinstance(resources, tuple) and len(resources) != len(dynamic):
            raise ValueError(
                f"pjit in_axis_resources has {len(resources)} entries, but {self.__name__} was called "
                f"with {len(dynamic)} positional non-static arguments; give one entry per argument"
            )
        if not isinstance(resources, tuple):
            resources = (resources,) * len(dynamic)
        try:
            per_leaf = optree.tree_broadcast_prefix(resources, dynamic, is_leaf=_is_resource_leaf,
                                                    none_is_leaf=True, namespace=NAMESPACE)
        except ValueError as error:
            raise ValueError(
                f"pjit in_axis_resources must be a pytree prefix of the arguments: {error}") from None
        paths = optree.tree_paths(dynamic, none_is_leaf=True, namespace=NAMESPACE)
        leaves = optree.tree_leaves(dynamic, none_is_leaf=True, namespace=NAMESPACE)
        for path, leaf, spec in zip(paths, leaves, _leaves(per_leaf)):
            _check_argument(leaf, spec, mesh, "args" + "".join(f"[{entry!r}]" for entry in path))

    def _jitted_for(self, mesh: Mesh | None) -> Jitted:
        jitted = self._jitted.get(mesh)
        if jitted is None:
            jitted = self._jitted[mesh] = Jitted(
                self._fun,
                in_shardings=_jit_shardings(self._in_resources, mesh, "in_axis_resources"),
                out_shardings=_jit_shardings(self._out_resources, mesh, "out_axis_resources"),
                static_argnums=self._static_argnums, donate_argnums=self._donate_argnums)
        return jitted


def _jit_shardings(resources, mesh: Mesh | None, argument: str):
    """The resources as meshjit.jit shardings: specs bound to ``mesh``, markers left to jit."""
    if resources is _UNSPECIFIED:
        return None
    return optree.tree_map(lambda spec: _named_sharding(spec, mesh, argument), resources,
                           is_leaf=_is_resource_leaf, none_is_leaf=True, namespace=NAMESPACE)


def _check_argument(leaf, spec, mesh: Mesh | None, path: str) -> None:
    if isinstance(leaf, GlobalDeviceArray):
        if mesh is not None and leaf.mesh != mesh:
            raise ValueError(
                f"pjit argument {path} is a GlobalDeviceArray on {leaf.mesh!r}, but the mesh of the "
                f"enclosing `with mesh:` is {mesh!r}; they must be the same mesh"
            )
        given = PartitionSpec() if spec is None else spec
        if isinstance(given, PartitionSpec) and _trimmed(given) != _trimmed(leaf.mesh_axes):
            raise ValueError(
                f"pjit in_axis_resources for argument {path} is {spec!r}, but the GlobalDeviceArray "
                f"passed there has mesh_axes {leaf.mesh_axes!r}; pass FROM_GDA or the GDA's mesh_axes"
            )
        return
    if spec is FROM_GDA and not isinstance(leaf, Array):
        raise ValueError(
            f"pjit in_axis_resources for argument {path} is FROM_GDA, but a {type(leaf).__name__} was "
            f"passed there; FROM_GDA needs a GlobalDeviceArray (or a meshjit.Array)"
        )
    if isinstance(spec, PartitionSpec):
        rank = leaf.ndim if hasattr(leaf, "ndim") else np.ndim(leaf)
        if len(spec) > rank:
            raise ValueError(
                f"pjit in_axis_resources for argument {path} is {spec!r}, which has {len(spec)} "
                f"entries, but the argument has rank {rank}"
            )


def _as_gda(array: Array, mesh: Mesh | None) -> GlobalDeviceArray:
    """A pjit output as a GDA; outputs not laid out over a mesh are replicated over ``mesh`` (or
    over a one-device mesh of their device)."""
    if isinstance(array.sharding, NamedSharding):
        return GlobalDeviceArray.from_array(array)
    if mesh is None:
        grid = np.empty(1, dtype=object)
        grid[0] = next(iter(array.sharding.device_set))
        mesh = Mesh(grid, ("_device",))
    return GlobalDeviceArray.from_array(device_put(array, NamedSharding(mesh, PartitionSpec())))


def pjit(fun: Callable, in_axis_resources=_UNSPECIFIED, out_axis_resources=_UNSPECIFIED,
         static_argnums=(), donate_argnums=()) -> Pjitted:
    """Compile ``fun`` with its inputs and outputs laid out over the ``with mesh:`` mesh.

    ``in_axis_resources`` is a PartitionSpec, None (replicated) or FROM_GDA, or a tuple with one
    such pytree prefix per positional non-static argument; ``out_axis_resources`` is a pytree
    prefix of the outputs. Left out, inputs keep their own layout and outputs are propagated.
    """
    return Pjitted(fun, in_axis_resources, out_axis_resources, static_argnums, donate_argnums)


def with_sharding_constraint(x, axis_resources):
    """Ask for ``x`` (a pytree) to be laid out as ``axis_resources`` over the ``with mesh:`` mesh."""
    mesh = resource_mesh()
    if mesh is None or mesh.empty:
        raise RuntimeError("pjit's with_sharding_constraint needs a mesh; call it inside `with mesh:`")
    resources = _check_resources(axis_resources, "with_sharding_constraint axis_resources")
    return _with_sharding_constraint(x, _jit_shardings(resources, mesh, "with_sharding_constraint axis_resources"))
