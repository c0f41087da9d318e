"""meshjit.shard_map: map a function over the shards of its arguments on a mesh (jax.shard_map).

This file checks arguments and handles pytrees, specs and meshes; compiler/frontend/shard_map.py traces
the body into a ``manual_computation`` op and runs the check_vma analysis. Called on concrete
arrays (outside jit), a shard_map runs as a jitted program of that one op.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable

import numpy as np
import optree

from meshjit.compiler.frontend.operands import canonical_numpy
from meshjit.compiler.frontend.shard_map import DimAxes, trace_body
from meshjit.compiler.frontend.shard_map_eager import EagerCall
from meshjit.compiler.frontend.trace import Tracer, current_trace, operand_sharding_type
from meshjit.runtime.array import Array
from meshjit.runtime.errors import DuplicateSpecError
from meshjit.runtime.mesh import AxisType, Mesh, current_mesh
from meshjit.runtime.partition_spec import UNCONSTRAINED, PartitionSpec
from meshjit.runtime.sharding import NamedSharding

from ._shardings import mesh_attr
from ._types import typeof
from .jit_api import Jitted
from .tree_util import NAMESPACE
from .tree_util import _flatten as flatten_tree


class _Infer:
    """The default of ``in_specs``: infer each spec from its argument's sharding."""

    def __repr__(self) -> str:
        return "Infer"


class _Static:
    """Marks an argument whose in_spec is None: passed to the function as it is, not traced."""

    def __repr__(self) -> str:
        return "None (static)"


Infer = _Infer()
_STATIC = _Static()


def _is_spec_leaf(node) -> bool:
    return node is None or isinstance(node, (PartitionSpec, _Static))


def shard_map(f: Callable | None = None, /, *, out_specs, in_specs=Infer, mesh: Mesh | None = None,
              axis_names=frozenset(), check_vma: bool = True):
    """Map ``f`` over shards of its arguments: each device runs ``f`` on its own shards, and the
    outputs' shards are concatenated as ``out_specs`` says (seed 003, jax.shard_map).

    ``in_specs`` is a pytree prefix of the positional arguments with a PartitionSpec (or None:
    a static argument) per leaf, inferred from Arrays' shardings when every mesh axis is
    Explicit. ``mesh`` defaults to the one from ``meshjit.sharding.set_mesh``. ``axis_names``
    makes ``f`` manual over those axes only. ``check_vma`` checks that outputs left
    unsharded over an axis are the same on every device along it. Without ``f``, a decorator.
    """
    if f is None:
        return functools.partial(shard_map, out_specs=out_specs, in_specs=in_specs, mesh=mesh,
                                 axis_names=axis_names, check_vma=check_vma)
    if not callable(f):
        raise TypeError(f"shard_map expects a callable, got {type(f).__name__}: {f!r}")
    if mesh is not None and not isinstance(mesh, Mesh):
        raise TypeError(f"shard_map mesh must be a meshjit.sharding.Mesh, got {type(mesh).__name__}: {mesh!r}")
    if not isinstance(check_vma, bool):
        raise TypeError(f"shard_map check_vma must be a bool, got {check_vma!r}")
    names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
    if not all(isinstance(name, str) for name in names):
        raise TypeError(f"shard_map axis_names must be mesh axis name strings, got {axis_names!r}")
    mapped = _ShardMapped(f, mesh, in_specs, out_specs, frozenset(names), check_vma)

    # NOTE: a plain function, so wrappers that copy their target's __dict__ (functools.wraps,
    # jit) see f's attributes, not this object's state.
    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        return mapped(*args, **kwargs)

    return wrapped


class _ShardMapped:
    """What ``shard_map`` maps: the function, its specs and mesh; called with f's positional
    arguments, it traces (inside jit) or runs (outside) one manual computation."""

    def __init__(self, fun: Callable, mesh, in_specs, out_specs, axis_names: frozenset, check_vma: bool):
        self._fun = fun
        self._mesh = mesh
        self._in_specs = in_specs
        self._out_specs = out_specs
        self._axis_names = axis_names
        self._check_vma = check_vma
        self._jitted: dict = {}
        self._name = getattr(fun, "__name__", type(fun).__name__)
        try:
            self._parameters = list(inspect.signature(fun).parameters)
        except (TypeError, ValueError):
            self._parameters = []

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise TypeError(f"shard_map of {self._name} takes positional arguments only, got keyword "
                            f"arguments {sorted(kwargs)}")
        mesh = self._resolve_mesh()
        manual = self._manual_axes(mesh)
        in_specs = _infer_in_specs(args, mesh, manual) if self._in_specs is Infer else self._in_specs
        leaves, treedef, spec_leaves, paths = self._broadcast_in_specs(in_specs, args)
        for leaf, spec, path in zip(leaves, spec_leaves, paths):
            if spec is not _STATIC:
                _operand(leaf, path)
        _check_specs_match_types(leaves, spec_leaves, mesh, manual)
        if current_trace() is None and not any(isinstance(leaf, Tracer) for leaf in leaves):
            return self._run_eagerly(mesh, manual, leaves, treedef, spec_leaves, paths)
        return self._trace(mesh, manual, leaves, treedef, spec_leaves, paths)

    # -- arguments ----------------------------------------------------------------------------
    def _resolve_mesh(self) -> Mesh:
        mesh = self._mesh if self._mesh is not None else current_mesh()
        if mesh is None or mesh.empty:
            raise ValueError(f"shard_map of {self._name} needs a mesh: pass mesh=... or set one with "
                             f"meshjit.sharding.set_mesh(mesh)")
        return mesh

    def _manual_axes(self, mesh: Mesh) -> tuple[str, ...]:
        unknown = sorted(self._axis_names - set(mesh.axis_names))
        if unknown:
            raise ValueError(f"shard_map axis_names={sorted(self._axis_names)} must be a subset of the mesh's "
                             f"axis names {list(mesh.axis_names)}; {unknown} are not mesh axes")
        return tuple(name for name in mesh.axis_names if not self._axis_names or name in self._axis_names)

    def _broadcast_in_specs(self, in_specs, args):
        """Flat argument leaves with one spec (or ``_STATIC``) each, and readable leaf paths."""
        marked = optree.tree_map(lambda spec: _STATIC if spec is None else spec, in_specs,
                                 is_leaf=_is_spec_leaf, none_is_leaf=True, namespace=NAMESPACE)
        try:
            expanded = optree.tree_broadcast_prefix(marked, tuple(args), is_leaf=_is_spec_leaf, namespace=NAMESPACE)
        except ValueError as error:
            raise ValueError(f"shard_map in_specs must be a pytree prefix of the positional arguments of "
                             f"{self._name}: {error}") from None
        spec_leaves = optree.tree_leaves(expanded, is_leaf=_is_spec_leaf, namespace=NAMESPACE)
        leaves, treedef = flatten_tree(tuple(args))
        paths = [self._describe_argument(path) for path in optree.tree_paths(tuple(args), namespace=NAMESPACE)]
        return leaves, treedef, spec_leaves, paths

    def _describe_argument(self, path) -> str:
        text = "args" + "".join(f"[{entry!r}]" for entry in path)
        position = path[0]
        if position < len(self._parameters):
            text += f" (parameter {self._parameters[position]!r} of {self._name})"
        return text

    # -- running ------------------------------------------------------------------------------
    def _run_eagerly(self, mesh, manual, leaves, treedef, spec_leaves, paths):
        """Run as a jitted program over the dynamic leaves; static leaves are baked into it."""
        dynamic = [index for index, spec in enumerate(spec_leaves) if spec is not _STATIC]
        concrete = [[leaves[index] for index in dynamic]]

        def run(*dynamic_leaves):
            full = list(leaves)
            for index, leaf in zip(dynamic, dynamic_leaves):
                full[index] = leaf
            # NOTE: the call being traced is the one whose leaves are in concrete[0]
            values = {tracer.value.id: np.asarray(value) for tracer, value in zip(dynamic_leaves, concrete[0])}
            call = EagerCall(values, np.vectorize(str, otypes=[object])(mesh.devices), tuple(mesh.axis_names))
            return self._trace(mesh, manual, full, treedef, spec_leaves, paths, eager_call=call)

        run.__name__ = run.__qualname__ = self._name  # the program's name in dumps and errors
        statics = tuple(leaf for index, leaf in enumerate(leaves) if index not in dynamic)
        key = (mesh, manual, treedef, tuple(spec_leaves), statics)
        try:
            jitted = self._jitted.setdefault(key, Jitted(run))
        except TypeError:  # an unhashable static argument: no reuse across calls
            jitted = Jitted(run)
        return jitted(*(leaves[index] for index in dynamic))

    def _trace(self, mesh, manual, leaves, treedef, spec_leaves, paths, eager_call=None):
        attr = mesh_attr(mesh)
        dynamic = [index for index, spec in enumerate(spec_leaves) if spec is not _STATIC]
        operands = [_operand(leaves[index], paths[index]) for index in dynamic]
        in_dims = [_in_dims(spec_leaves[index], tuple(operand.shape), mesh, manual, paths[index])
                   for index, operand in zip(dynamic, operands)]
        # NOTE: an unreduced in_spec hands the body each device's partial sum (JAX's {U:axes} type)
        in_unreduced = [frozenset(spec_leaves[index].unreduced) for index in dynamic]
        out_treedefs = []

        def flat_fun(*tracers):
            full = list(leaves)
            for index, tracer in zip(dynamic, tracers):
                full[index] = tracer
            outputs = self._fun(*optree.tree_unflatten(treedef, full))
            out_leaves, out_treedef = flatten_tree(outputs)
            out_treedefs.append(out_treedef)
            return [self._output(leaf, index) for index, leaf in enumerate(out_leaves)]

        abstract = mesh.abstract_mesh.update_axis_types({manual: AxisType.Manual})
        body = trace_body(flat_fun, operands, in_dims, attr, manual, name=self._name, check_vma=self._check_vma,
                          abstract_mesh=abstract, eager_call=eager_call, in_unreduced=in_unreduced)
        out_treedef = out_treedefs[0]
        out_spec_leaves, out_paths = self._broadcast_out_specs(out_treedef)
        out_dims = [_out_dims(spec, local, mesh, manual, path)
                    for spec, local, path in zip(out_spec_leaves, body.output_types, out_paths)]
        out_unreduced = [frozenset(getattr(spec, "unreduced", ())) for spec in out_spec_leaves]
        results = body.finish(out_dims, check_vma=self._check_vma, out_unreduced=out_unreduced,
                              report=lambda failures: _replication_message(self._name, mesh, out_spec_leaves,
                                                                           out_paths, failures))
        _keep_spec_lengths(results, out_spec_leaves)
        return optree.tree_unflatten(out_treedef, results)

    def _output(self, leaf, index: int):
        if isinstance(leaf, (Tracer, Array)):
            return leaf
        try:
            return canonical_numpy(leaf)
        except TypeError:
            raise TypeError(f"shard_map of {self._name} returned output {index} of type "
                            f"{type(leaf).__name__}, which is not an array") from None

    def _broadcast_out_specs(self, out_treedef):
        skeleton = optree.tree_unflatten(out_treedef, list(range(out_treedef.num_leaves)))
        try:
            expanded = optree.tree_broadcast_prefix(self._out_specs, skeleton, is_leaf=_is_spec_leaf,
                                                    namespace=NAMESPACE)
        except ValueError as error:
            raise ValueError(f"shard_map out_specs must be a pytree prefix of the outputs of "
                             f"{self._name}: {error}") from None
        specs = optree.tree_leaves(expanded, is_leaf=_is_spec_leaf, namespace=NAMESPACE)
        paths = ["".join(f"[{entry!r}]" for entry in path)
                 for path in optree.tree_paths(skeleton, namespace=NAMESPACE)]
        return specs, paths


def _keep_spec_lengths(results, specs) -> None:
    """As JAX's, a result's PartitionSpec lists as many dims as its out_spec (``P('a', None)``
    stays two entries long)."""
    for result, spec in zip(results, specs):
        known = result.trace.types.get(result.value.id) if isinstance(result, Tracer) else None
        if known is not None and isinstance(spec, PartitionSpec):
            result.trace.types[result.value.id] = dataclasses.replace(known, spec_length=len(spec))


def _replication_message(name: str, mesh: Mesh, specs, paths, failures) -> str:
    """JAX 0.10's check_vma error: for each failing output, the axes its out_spec leaves out
    (so promises it is replicated over) and the axes it may vary along, in mesh order."""
    def ordered(names) -> str:
        return ",".join(axis for axis in mesh.axis_names if axis in names)

    messages = []
    for index, unmentioned, varying in failures:
        spec, key = specs[index], paths[index]
        if len(unmentioned) > 1:
            mentioned = {axis for entry in spec.partitions if entry is not None and entry is not UNCONSTRAINED
                         for axis in (entry if isinstance(entry, tuple) else (entry,))}
            messages.append(
                f"* out_specs{key} is {spec} which implies that the corresponding output value is only varying "
                f"across mesh axes {{{ordered(mentioned)}}} and not {{{ordered(set(unmentioned) & varying)}}}, but it "
                f"was inferred to be possibly varying over {{{ordered(varying)}}}")
        else:
            messages.append(
                f"* out_specs{key} is {spec} which implies that the corresponding output value is replicated across "
                f"mesh axis '{unmentioned[0]}', but could not infer replication over any axes")
    if len(messages) == 1:
        messages = [messages[0][2:]]
    return (f"shard_map applied to the function '{name}' was given out_specs which require replication which "
            f"can't be statically inferred given the mesh:\n\nThe mesh given has shape {tuple(mesh.axis_sizes)} "
            f"with corresponding axis names {tuple(mesh.axis_names)}.\n\n" + "\n\n".join(messages) + "\n\n"
            "Check if these output values are meant to be replicated over those mesh axes. If not, consider "
            "revising the corresponding out_specs entries. If so, consider disabling the check by passing the "
            "check_vma=False argument to `jax.shard_map`.")


def _infer_in_specs(args, mesh: Mesh, manual=None):
    """Each argument's spec from its type: an Array's NamedSharding on ``mesh``, a traced
    value's sharding type (over the ``manual`` axes), else P()."""
    if not mesh.are_all_axes_explicit:
        kinds = ", ".join(f"{name}: {kind.name}" for name, kind in zip(mesh.axis_names, mesh.axis_types))
        raise TypeError(f"shard_map in_specs must be a pytree of PartitionSpecs; it can be left out (inferred "
                        f"from the arguments) only when every mesh axis is {AxisType.Explicit.name}, but the "
                        f"mesh has axis types ({kinds})")

    keep = set(mesh.axis_names if manual is None else manual)

    def infer(leaf):
        if isinstance(leaf, Tracer):
            entries = leaf.sharding_type.entries()
            return PartitionSpec(*(_kept(entry, keep) for entry in entries))
        sharding = leaf.sharding if isinstance(leaf, Array) and leaf.committed else None
        if isinstance(sharding, NamedSharding) and sharding.mesh.shape_tuple == mesh.shape_tuple:
            return PartitionSpec(*(_kept(entry, keep) for entry in sharding.spec.partitions))
        return PartitionSpec()

    return optree.tree_map(infer, tuple(args), namespace=NAMESPACE)


def _kept(entry, keep):
    axes = () if entry is None else (entry,) if isinstance(entry, str) else entry
    kept = tuple(axis for axis in axes if axis in keep)
    return None if not kept else kept[0] if len(kept) == 1 else kept


def _check_specs_match_types(leaves, spec_leaves, mesh: Mesh, manual) -> None:
    """Over a mesh whose axes are all Explicit and all manual here, an argument's in_spec must be
    its type's sharding (JAX): shard_map does not reshard, ``reshard`` does."""
    if set(manual) != set(mesh.axis_names) or not mesh.are_all_axes_explicit:
        return
    for leaf, spec in zip(leaves, spec_leaves):
        if not isinstance(spec, PartitionSpec):
            continue
        rank = len(getattr(leaf, "shape", ()))
        have = operand_sharding_type(leaf)
        wanted = PartitionSpec(*spec.partitions, *([None] * (rank - len(spec))), unreduced=spec.unreduced,
                               reduced=spec.reduced)
        actual = PartitionSpec(*have.entries(), unreduced=have.unreduced, reduced=have.reduced)
        if actual != wanted:
            raise ValueError(
                f"in_specs passed to shard_map: {wanted} does not match the specs of the input: {actual} for arg: "
                f"{typeof(leaf)}. `in_specs` is an optional argument so you can omit specifying it and shard_map "
                f"will infer the in_specs from the arguments. If you want to reshard your inputs, you can use "
                f"`jax.reshard` on the arguments and then pass those args to shard_map.")


def _operand(leaf, path: str):
    if isinstance(leaf, (Tracer, Array)):
        return leaf
    try:
        return canonical_numpy(leaf)
    except TypeError:
        raise TypeError(f"shard_map argument {path} of type {type(leaf).__name__} is not an array; give it "
                        f"the in_spec None to pass it as a static argument") from None


def _spec_axes(spec, rank: int, mesh: Mesh, manual, kind: str, what: str) -> DimAxes:
    """``spec`` (an entry of ``kind``, "in_specs" or "out_specs", for ``what``) as per-dim mesh
    axes for a value of ``rank`` dims, checked against the manual axes of ``mesh``."""
    if not isinstance(spec, PartitionSpec):
        raise TypeError(f"shard_map {kind} must be a pytree of PartitionSpecs, but the entry for {what} is "
                        f"{spec!r} of type {type(spec).__name__}")
    if any(entry is UNCONSTRAINED for entry in spec.partitions):
        raise ValueError(f"shard_map {kind} entry {spec} for {what} uses P.UNCONSTRAINED; shard_map specs "
                         f"name manual mesh axes only")
    for name in [*spec.used_axes(), *sorted(spec.unreduced)]:
        if name not in manual:
            place = "not an axis of the mesh" if name not in mesh.axis_names else "not a manual axis"
            raise ValueError(f"shard_map {kind} entry {spec} for {what} refers to {name!r}, which is {place}; "
                             f"the manual axes are {list(manual)}")
    used = [*spec.used_axes(), *spec.unreduced]
    repeated = sorted({name for name in used if used.count(name) > 1})
    if repeated:
        raise DuplicateSpecError(f"shard_map {kind} entry {spec} for {what} maps mesh axes {repeated} to more "
                                 f"than one dim; a mesh axis splits at most one dim")
    if len(spec) > rank:
        raise ValueError(f"shard_map {kind} entry {spec} for {what} has {len(spec)} entries, but the value "
                         f"has rank {rank}; a spec may not be longer than the value's rank")
    return tuple(spec.axis_names_of(dim) for dim in range(rank))


def _in_dims(spec, shape, mesh: Mesh, manual, path: str) -> DimAxes:
    dims = _spec_axes(spec, len(shape), mesh, manual, "in_specs", path)
    for dim, axes in enumerate(dims):
        count = 1
        for name in axes:
            count *= mesh.shape[name]
        if shape[dim] % count:
            raise ValueError(f"shard_map in_specs entry {spec} for {path} of shape {shape} splits dim {dim} "
                             f"(size {shape[dim]}) over mesh axes {list(axes)} ({count} devices), which "
                             f"does not divide it evenly")
    return dims


def _out_dims(spec, local, mesh: Mesh, manual, path: str) -> DimAxes:
    what = f"output{path or ' 0'} (per-device type {local})"
    return _spec_axes(spec, len(local.shape), mesh, manual, "out_specs", what)
