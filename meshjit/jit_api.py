"""meshjit.jit: trace a function once per input signature, compile it, and run it on Arrays.

This module is the glue DESIGN.md §1 allows the facade: it turns runtime shardings into IR
attributes, asks the compiler for a program, and runs it on the runtime's arrays.
"""

from __future__ import annotations

import functools
import inspect
import types
import weakref
from collections.abc import Callable

import optree

from meshjit.compiler.frontend.operands import canonical_numpy
from meshjit.compiler.propagation.propagate_shardings import resolve_propagation
from meshjit.compiler.sharding.sharding_types import context_abstract_mesh
from meshjit.compiler.frontend.refs import RefDiscovered, ref_scope
from meshjit.compiler.frontend.trace import Tracer
from meshjit.compiler.frontend.trace_functions import trace_flat
from meshjit.ir.config import config
from meshjit.runtime.array import Array
from meshjit.runtime.sharding import AUTO, SingleDeviceSharding

from ._check import run_checked
from ._jit_refs import call_with_refs, has_refs
from ._jit_arguments import (
    argument_hint,
    argument_label,
    checked_budget,
    ir_arg_sharding,
    path_text,
    search_request,
)
from .constraint_api import with_sharding_constraint
from ._shardings import (
    known_mesh_attrs,
    resolve_spec,
    sharding_type_of,
)
from ._arguments import abstract_argument, is_sharding_leaf, leaf_signature
from ._placement import check_in_shardings, place
from ._stages import Compiled, Lowered, Traced
from .tree_util import NAMESPACE
from .tree_util import _flatten as flatten_tree, _structure as structure_spec


# NOTE: as JAX, jit's caches belong to the function and jit's settings, not to the jit object:
# ``jit(f)`` made twice traces once (and does not read a changed global again).
_caches_by_function: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


# Every Jitted made, so that ``clear_caches`` can empty their compiled programs too.
_live_jitted: weakref.WeakSet = weakref.WeakSet()


def clear_jit_caches() -> None:
    """Forget the traces shared per function and every jit object's compiled programs."""
    _caches_by_function.clear()
    for jitted in list(_live_jitted):
        jitted._traces.clear()
        jitted._cache.clear()
        jitted._fast_cache.clear()
        jitted._flat_calls.clear()


def _shared_traces(fun: Callable, settings: tuple) -> dict:
    """The traces (uncompiled Lowered) of ``fun`` jitted with ``settings``; a fresh cache when
    either cannot be a key (an unhashable setting, a function without weak references)."""
    try:
        per_function = _caches_by_function.setdefault(fun, {})
        return per_function.setdefault(settings, {})
    except TypeError:
        return {}


def _normalise_indices(indices, argument: str) -> tuple[int, ...]:
    if indices is None:
        return ()
    try:
        indices = (indices,) if isinstance(indices, int) else tuple(indices)
    except TypeError:
        raise TypeError(f"jit {argument} must be an int or a sequence of ints, got {indices!r}") from None
    for index in indices:
        if not isinstance(index, int) or isinstance(index, bool):
            raise TypeError(f"jit {argument} must be ints, got {index!r}")
    return indices


def _normalise_names(names, argument: str) -> tuple[str, ...]:
    if names is None:
        return ()
    names = (names,) if isinstance(names, str) else tuple(names)
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"jit {argument} must be strings, got {name!r}")
    return names


class Jitted:
    """The callable ``jit`` returns; traces and compiles once per input signature."""

    # NOTE: under ``disable_jit`` a user's jitted function runs its Python op by op; meshjit's own
    # uses of Jitted (autodiff, random, shard_map, ...) keep compiling, as they need a trace
    follows_disable_jit = False
    # NOTE: False for the jitted function that already threads a call's references (_jit_refs.py):
    # one it does not thread yet is its caller's to add
    threads_refs = True

    def __init__(self, fun: Callable, *, in_shardings=None, out_shardings=None, static_argnums=None,
                 static_argnames=None, donate_argnums=None, propagation="shardy", check=False,
                 memory_budget_bytes=None):
        if not callable(fun):
            raise TypeError(f"jit expects a callable, got {type(fun).__name__}: {fun!r}")
        self._fun = fun
        self._in_shardings = in_shardings
        self._out_shardings = out_shardings
        self._static_argnums = _normalise_indices(static_argnums, "static_argnums")
        self._static_argnames = _normalise_names(static_argnames, "static_argnames")
        self._donate_argnums = _normalise_indices(donate_argnums, "donate_argnums")
        # NOTE: a name is looked up now, so an unknown one fails here, naming the registered ones.
        self._propagation = resolve_propagation(propagation)
        self._check = bool(check)
        self._memory_budget_bytes = checked_budget(memory_budget_bytes)
        try:
            self._signature = inspect.signature(fun)
        except (TypeError, ValueError):
            self._signature = None
        self._add_static_pairs()
        # NOTE: traces are shared by every jit of ``fun`` with these settings (as JAX's cache);
        # compiled programs belong to this object, so a compiler changed in between applies
        self._traces = _shared_traces(
            fun, (in_shardings, out_shardings, self._static_argnums, self._static_argnames, self._donate_argnums,
                  self._propagation, self._check, self._memory_budget_bytes))
        self._cache: dict = {}
        self._fast_cache: dict = {}
        self._flat_calls: dict = {}
        # NOTE: the array references the function closes over, found while tracing, and the
        # jitted functions that thread them (meshjit/_jit_refs.py)
        self._closed_refs: list = []
        self._ref_jits: dict = {}
        _live_jitted.add(self)
        # NOTE: updated=() keeps the wrapped callable's __dict__ (which may hold a `_fun` of its
        # own, e.g. another Jitted) from overwriting this object's attributes
        functools.update_wrapper(self, fun, updated=())
        if not hasattr(self, "__name__"):
            # NOTE: a functools.partial or a callable object has no __name__ of its own
            self.__name__ = getattr(getattr(fun, "func", None), "__name__", type(fun).__name__)

    def __get__(self, instance, owner=None):
        """A jitted function stored on a class is a method: ``instance.method(x)`` passes the
        instance first (with ``static_argnums=0`` it is a static argument, as in JAX)."""
        if instance is None:
            return self
        return types.MethodType(self, instance)

    def _add_static_pairs(self) -> None:
        """Static arguments may be named by position or by name; each implies the other (JAX)."""
        if self._signature is None:
            return
        positional = [name for name, parameter in self._signature.parameters.items()
                      if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD)]
        names = set(self._static_argnames)
        names.update(positional[index] for index in self._static_argnums if -len(positional) <= index < len(positional))
        numbers = set(self._static_argnums)
        numbers.update(positional.index(name) for name in self._static_argnames if name in positional)
        self._static_argnames = tuple(sorted(names))
        self._static_argnums = tuple(sorted(numbers))

    def _split(self, args, kwargs):
        """(dynamic args, dynamic kwargs, static key) with static arguments taken out."""
        count = len(args)
        static_positions = {index % count for index in self._static_argnums if -count <= index < count}
        dynamic_args = tuple(arg for index, arg in enumerate(args) if index not in static_positions)
        static_values = tuple((index, args[index]) for index in sorted(static_positions))
        dynamic_kwargs = {name: value for name, value in kwargs.items() if name not in self._static_argnames}
        static_values += tuple(sorted((name, value) for name, value in kwargs.items() if name in self._static_argnames))
        # NOTE: as JAX's, a device Array is not a valid static argument (meshjit's Array hashes
        # by identity for its own bookkeeping; JAX's is unhashable)
        bad = next((value for _, value in static_values if not _hashable(value) or isinstance(value, Array)), None)
        if bad is not None:
            reason = f"unhashable type: '{type(bad).__name__}'"
            raise ValueError(
                f"Non-hashable static arguments are not supported. An error occurred while trying to hash an "
                f"object of type {type(bad)}, {bad}. The error was:\nTypeError: {reason}\n")
        return dynamic_args, dynamic_kwargs, static_values, static_positions

    def _check_arity(self, args, kwargs) -> None:
        if self._signature is None:
            return
        try:
            self._signature.bind(*args, **kwargs)
        except TypeError as error:
            raise TypeError(f"{self.__name__}() called with the wrong arguments: {error}") from None

    def _run(self, compiled: Compiled, executable, leaves) -> list[Array]:
        """Run a compiled program; in check mode also against the reference interpreter."""
        if self._check or config.read("check_partitioning"):
            return run_checked(compiled, leaves)
        return executable.run(leaves)

    def lower(self, *args, **kwargs) -> Lowered:
        args, kwargs = _unwrap_global_device_arrays(args, kwargs)
        self._check_arity(args, kwargs)
        dynamic_args, dynamic_kwargs, static_values, static_positions = self._split(args, kwargs)
        leaves, treedef = flatten_tree((dynamic_args, dynamic_kwargs))
        paths = [optree.tree_paths((dynamic_args, dynamic_kwargs), namespace=NAMESPACE)]
        specs = tuple(abstract_argument(leaf, path_text(path)) for leaf, path in zip(leaves, paths[0]))
        # NOTE: tracing reads the abstract mesh in context (sharding types live on it), x64 (the
        # dtypes of the constants it captures) and the threefry layout (the random ops it emits)
        key = (treedef, specs, static_values, context_abstract_mesh(), config.read("jax_enable_x64"),
               config.read("jax_threefry_partitionable"))
        lowered = self._cache.get(key)
        if lowered is None:
            traced = self._traces.get(key)
            if traced is None:
                traced = self._traces[key] = self._trace(args, kwargs, static_positions, treedef, specs,
                                                         len(dynamic_args))
            lowered = self._cache[key] = traced.uncompiled_copy()
        return lowered

    def trace(self, *args, **kwargs) -> Traced:
        """The traced program for these arguments (arrays or ShapeDtypeStructs): ``out_info``
        and ``lower()`` (``jax.stages.Traced``)."""
        return Traced(self.lower(*args, **kwargs), self.__name__)

    def eval_shape(self, *args, **kwargs):
        """The outputs' shapes, dtypes and sharding types, as ShapeDtypeStructs, without running."""
        return self.trace(*args, **kwargs).out_info

    def __call__(self, *args, **kwargs):
        # NOTE: the dispatch fast path: positional arguments that are leaves, keyed on each
        # one's signature (an Array's shape, dtype, committed sharding and weak type), the
        # config's version and the abstract mesh in context; a hit runs the remembered
        # Executable straight away.
        if not kwargs:
            # NOTE: None stands for a leaf without a signature; no entry holds one.
            key = (config.version, context_abstract_mesh(),
                   *[arg._jit_signature if type(arg) is Array else leaf_signature(arg) for arg in args])
            entry = self._flat_calls.get(key)
            if entry is not None:
                run, build = entry
                return build(run(args))
        return self._call(args, kwargs)

    def _call(self, args, kwargs):
        """A call the fast path does not know: the flattened-key cache, else trace and compile."""
        if self.follows_disable_jit and config.read("jax_disable_jit"):
            return self._fun(*args, **kwargs)
        if self._closed_refs or has_refs((args, kwargs)):
            return call_with_refs(self, args, kwargs)
        fast_key = None
        if not kwargs and not self._static_argnums:
            leaves, treedef = flatten_tree(args)
            fast_key = _fast_key(treedef, leaves)
            entry = self._fast_cache.get(fast_key) if fast_key is not None else None
            if entry is not None:
                run, build = entry
                return build(run(leaves))
        args, kwargs = _unwrap_global_device_arrays(args, kwargs)
        if any(isinstance(leaf, Tracer) for leaf in optree.tree_leaves((args, kwargs), namespace=NAMESPACE)):
            return self._inline(args, kwargs)
        try:
            lowered = self.lower(*args, **kwargs)
        except RefDiscovered as found:
            if not self.threads_refs:
                raise
            found.ref._check_reachable()
            self._closed_refs.append(found.ref)
            return call_with_refs(self, args, kwargs)
        dynamic_args, dynamic_kwargs, _, _ = self._split(args, kwargs)
        leaves = optree.tree_leaves((dynamic_args, dynamic_kwargs), namespace=NAMESPACE)
        compiled = lowered.compile()
        executable = compiled.runtime_executable()
        if fast_key is not None:
            self._remember(fast_key, args, compiled, executable)
        return optree.tree_unflatten(compiled._lowered._out_tree, self._run(compiled, executable, leaves))

    def _remember(self, fast_key, args, compiled: Compiled, executable) -> None:
        """Let later calls with this signature skip tracing: by the flattened key, and by the
        arguments' own signatures when every positional argument is a leaf."""
        if self._check or config.read("check_partitioning"):
            run = functools.partial(run_checked, compiled)
        else:
            run = executable.run
        entry = (run, _output_builder(compiled._lowered._out_tree))
        self._fast_cache[fast_key] = entry
        flat_key = _flat_key(args)
        if flat_key is not None:
            self._flat_calls[flat_key] = entry

    def _inline(self, args, kwargs):
        """jit called inside a traced function inlines into the outer trace; its in_shardings
        and out_shardings become sharding constraints there (as in JAX)."""
        if self._in_shardings is not None:
            count = len(args)
            static = {index % count for index in self._static_argnums if -count <= index < count}
            dynamic = [arg for index, arg in enumerate(args) if index not in static]
            shardings = self._in_shardings
            if not isinstance(shardings, (tuple, list)) or is_sharding_leaf(shardings):
                shardings = (shardings,) * len(dynamic)
            constrained = iter(with_sharding_constraint(tuple(dynamic), tuple(shardings)))
            args = tuple(arg if index in static else next(constrained) for index, arg in enumerate(args))
        out = self._fun(*args, **kwargs)
        if self._out_shardings is not None:
            out = with_sharding_constraint(out, self._out_shardings)
        return out

    def _trace(self, args, kwargs, static_positions, treedef, specs, dynamic_count) -> Lowered:
        names = self._dynamic_names(len(args), static_positions)
        paths = optree.tree_paths(optree.tree_unflatten(treedef, [0] * len(specs)), namespace=NAMESPACE)
        labels = [argument_label(path, names) for path in paths]
        requested = self._jit_in_shardings(specs, treedef, dynamic_count)
        auto_args = tuple(index for index, sharding in enumerate(requested) if isinstance(sharding, AUTO))
        jit_in_shardings = [None if isinstance(sharding, AUTO) else sharding for sharding in requested]
        check_in_shardings(self.__name__, labels, specs, jit_in_shardings)
        input_leaves = [wanted if wanted is not None else spec.sharding
                        for wanted, spec in zip(jit_in_shardings, specs)]
        meshes: dict = {}
        arg_shardings = [ir_arg_sharding(requested[index] if index in auto_args else sharding, spec.type.rank, meshes)
                         for index, (sharding, spec) in enumerate(zip(input_leaves, specs))]
        out_treedef_box = []

        def flat_fun(*tracers):
            dynamic_args, dynamic_kwargs = optree.tree_unflatten(treedef, list(tracers))
            iterator = iter(dynamic_args)
            full_args = [args[index] if index in static_positions else next(iterator) for index in range(len(args))]
            full_kwargs = {name: kwargs[name] if name in self._static_argnames else dynamic_kwargs[name] for name in kwargs}
            with ref_scope():
                out = self._fun(*full_args, **full_kwargs)
            out_leaves, out_treedef = flatten_tree(out)  # as JAX's, dicts come back with sorted keys
            out_treedef_box.append(out_treedef)
            return [_output_operand(leaf, index) for index, leaf in enumerate(out_leaves)]

        hints = [argument_hint(path, names) for path in paths]
        # NOTE: as JAX, an argument's sharding type is its own layout's; in_shardings do not
        # change the type of an argument that has none.
        arg_types = [sharding_type_of(spec.sharding, spec.type.rank) for spec in specs]
        traced, _ = trace_flat(flat_fun, [spec.type for spec in specs], hints, name="main",
                               arg_weak_types=[spec.weak_type for spec in specs],
                               arg_shardings=arg_shardings, meshes=meshes, arg_sharding_types=arg_types,
                               known_meshes=known_mesh_attrs(input_leaves))
        out_treedef = out_treedef_box[0]
        requested_out = self._explicit_out_shardings(out_treedef)
        auto_results = tuple(index for index, sharding in enumerate(requested_out) if isinstance(sharding, AUTO))
        explicit_out = [None if isinstance(sharding, AUTO) else sharding for sharding in requested_out]
        if self._out_shardings is not None:
            traced = _with_result_shardings(traced, requested_out, meshes)
        placement = place(self.__name__, labels, specs, jit_in_shardings, explicit_out, traced.module)
        default = SingleDeviceSharding(placement.device)
        output_shardings = optree.tree_unflatten(
            out_treedef, [default if sharding is None else sharding for sharding in explicit_out])
        search = search_request(auto_args, auto_results, requested, requested_out, meshes, self._memory_budget_bytes)
        return Lowered(traced, treedef, out_treedef, specs, optree.tree_unflatten(treedef, input_leaves),
                       output_shardings, propagation=self._propagation,
                       donated=self._donated_leaves(args, static_positions, treedef), placement=placement,
                       search=search, memory_budget_bytes=self._memory_budget_bytes)

    def _donated_leaves(self, args, static_positions, treedef) -> frozenset[int]:
        """Flat positions of the leaves of donated positional arguments."""
        if not self._donate_argnums:
            return frozenset()
        count = len(args)
        donated_positions = {index % count for index in self._donate_argnums if -count <= index < count}
        dynamic_index = {position: rank for rank, position in
                         enumerate(p for p in range(count) if p not in static_positions)}
        skeleton = optree.tree_unflatten(treedef, list(range(treedef.num_leaves)))[0]
        leaves = set()
        for position in donated_positions - set(static_positions):
            leaves.update(optree.tree_leaves(skeleton[dynamic_index[position]], namespace=NAMESPACE))
        return frozenset(leaves)

    def _dynamic_names(self, count: int, static_positions) -> list[str]:
        """The parameter name of each dynamic positional argument, where the signature has one."""
        parameters = list(self._signature.parameters.values()) if self._signature else []
        names = []
        for index in range(count):
            if index in static_positions:
                continue
            kind_ok = index < len(parameters) and parameters[index].kind in (
                inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
            names.append(parameters[index].name if kind_ok else f"arg{index}")
        return names

    def _jit_in_shardings(self, specs, treedef, dynamic_count) -> list:
        """Per dynamic leaf: the sharding jit's in_shardings gives it, None where it gives none."""
        leaves = [None] * len(specs)
        if self._in_shardings is None:
            return leaves
        prefix = self._in_shardings
        if not isinstance(prefix, (tuple, list)) or is_sharding_leaf(prefix):
            prefix = (prefix,) * dynamic_count
        if len(prefix) != dynamic_count:
            raise ValueError(
                f"jit in_shardings has {len(prefix)} entries but {self.__name__} got {dynamic_count} "
                f"positional dynamic arguments"
            )
        dynamic_args = optree.tree_unflatten(treedef, list(range(len(specs))))[0]
        expanded = optree.tree_broadcast_prefix(tuple(prefix), dynamic_args, is_leaf=is_sharding_leaf,
                                                none_is_leaf=True, namespace=NAMESPACE)
        given = optree.tree_leaves(expanded, is_leaf=is_sharding_leaf, none_is_leaf=True, namespace=NAMESPACE)
        for position, sharding in enumerate(given):
            if sharding is not None:
                leaves[position] = resolve_spec(sharding, f"jit in_shardings[{position}]")
        return leaves

    def _explicit_out_shardings(self, out_treedef) -> list:
        """Per output leaf: the sharding jit's out_shardings gives it, None where it gives none."""
        count = out_treedef.num_leaves
        if self._out_shardings is None:
            return [None] * count
        skeleton = optree.tree_unflatten(out_treedef, list(range(count)))
        try:
            expanded = optree.tree_broadcast_prefix(self._out_shardings, skeleton, is_leaf=is_sharding_leaf,
                                                    none_is_leaf=True, namespace=NAMESPACE)
        except ValueError as error:
            raise ValueError(f"jit out_shardings must be a pytree prefix of the outputs: {error}") from None
        leaves = optree.tree_leaves(expanded, is_leaf=is_sharding_leaf, none_is_leaf=True, namespace=NAMESPACE)
        return [None if sharding is None else resolve_spec(sharding, f"jit out_shardings[{index}]")
                for index, sharding in enumerate(leaves)]


def _with_result_shardings(traced, requested_out, meshes):
    """Put the user's out_shardings (per flat result: a Sharding, AUTO or None) on the traced
    function's results (as propagation seeds; AUTO as an open sharding the search fills)."""
    import dataclasses

    func = traced.module.main
    shardings = []
    for sharding, value in zip(requested_out, func.returns):
        if sharding is not None and not isinstance(sharding, AUTO):
            sharding.shard_shape(value.type.shape)  # raises IndivisibleError naming the shapes
        shardings.append(ir_arg_sharding(sharding, value.type.rank, meshes))
    new_func = dataclasses.replace(func, result_shardings=tuple(shardings))
    module = dataclasses.replace(traced.module, meshes=tuple(meshes.items()), funcs=(new_func,))
    return dataclasses.replace(traced, module=module)


def _unwrap_global_device_arrays(args, kwargs):
    """GlobalDeviceArrays enter jit as the Arrays they wrap (keeping their layout)."""
    from meshjit.runtime.global_device_array import GlobalDeviceArray

    leaves = optree.tree_leaves((args, kwargs), namespace=NAMESPACE)
    if not any(isinstance(leaf, GlobalDeviceArray) for leaf in leaves):
        return args, kwargs
    return optree.tree_map(lambda leaf: leaf.to_array() if isinstance(leaf, GlobalDeviceArray) else leaf,
                           (args, kwargs), namespace=NAMESPACE)


def _fast_key(treedef, leaves):
    """A cheap cache key for positional-only calls, or None when a leaf needs the full path."""
    key = _flat_key(leaves)
    return None if key is None else (treedef,) + key


def _flat_key(args):
    """The key of a call whose positional arguments are all leaves (no tuple, list or dict of
    arrays), so that the arguments are the flat leaves; None otherwise."""
    parts = [config.version, context_abstract_mesh()]
    for arg in args:
        signature = leaf_signature(arg)
        if signature is None:
            return None
        parts.append(signature)
    return tuple(parts)


def _output_builder(out_tree) -> Callable:
    """The function giving a call's result from the flat result Arrays: the one Array, a tuple
    of them, or the output tree unflattened."""
    if out_tree.num_nodes == 1 and out_tree.num_leaves == 1:
        return _only_result
    if out_tree == structure_spec((0,) * out_tree.num_leaves):
        return tuple
    return functools.partial(optree.tree_unflatten, out_tree)


def _only_result(results: list):
    return results[0]


def _hashable(value) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _output_operand(leaf, index: int):
    if isinstance(leaf, (Tracer, Array)):
        return leaf
    try:
        return canonical_numpy(leaf)
    except TypeError:
        raise TypeError(
            f"jitted function returned output {index} of type {type(leaf).__name__}, which is not an array"
        ) from None


def jit(fun: Callable | None = None, *, in_shardings=None, out_shardings=None, static_argnums=None,
        static_argnames=None, donate_argnums=None, propagation="shardy", check=False, memory_budget_bytes=None,
        **options):
    """Compile ``fun`` for the shapes, dtypes and shardings it is called with (as ``jax.jit``).

    Usable as ``jit(f, ...)``, ``@jit`` and ``@functools.partial(jit, ...)``. ``AUTO(mesh)``
    entries in ``in_shardings``/``out_shardings`` are chosen by the automatic sharding search,
    within ``memory_budget_bytes`` per device when given (docs/auto-sharding.md).
    """
    if options:
        raise TypeError(f"jit got unexpected keyword arguments {sorted(options)}")
    settings = dict(in_shardings=in_shardings, out_shardings=out_shardings, static_argnums=static_argnums,
                    static_argnames=static_argnames, donate_argnums=donate_argnums, propagation=propagation,
                    check=check, memory_budget_bytes=memory_budget_bytes)
    if fun is None:
        return functools.partial(jit, **settings)
    jitted = Jitted(fun, **settings)
    jitted.follows_disable_jit = True
    return jitted


def eval_shape(fun: Callable, *args, **kwargs):
    """``fun``'s outputs as ShapeDtypeStructs (shape, dtype, sharding type) for arguments given as
    arrays or ShapeDtypeStructs, without running it (``jax.eval_shape``)."""
    if not callable(fun):
        raise TypeError(f"eval_shape expects a callable, got {type(fun).__name__}: {fun!r}")
    return Jitted(fun).eval_shape(*args, **kwargs)
