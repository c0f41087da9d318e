"""meshjit.jit: trace a function once per input signature, compile it, and run it on Arrays.

This module is the glue DESIGN.md §1 allows the facade: it turns runtime shardings into IR
attributes, asks the compiler for a program, and runs it on the runtime's arrays.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import optree

from meshjit.compiler import lax_ops
from meshjit.compiler.collectives import CollectiveRecord, collective_records
from meshjit.compiler.cost import cost_analysis as module_cost_analysis
from meshjit.compiler.explain import format_provenance
from meshjit.compiler.pipeline import CompiledProgram, compile_module
from meshjit.compiler.operands import canonical_numpy, dtype_of
from meshjit.compiler.trace import Tracer, bind, set_eager_executor, trace_flat, user_location
from meshjit.ir import TensorType, interpret
from meshjit.ir.config import config
from meshjit.ir.printer import print_module
from meshjit.ir.dtypes import to_numpy
from meshjit.runtime.array import Array
from meshjit.runtime.devices import devices as all_devices
from meshjit.runtime.partition_spec import PartitionSpec
from meshjit.runtime.sharding import Sharding, SingleDeviceSharding
from meshjit.compiler.lower import lower
from meshjit.runtime.executor import from_buffer, run_plan, run_spmd, to_buffer
from meshjit.runtime.process_layout import process_layout
from meshjit.runtime.transfer import shard_numpy

from ._check import run_checked
from ._inspection import report_inspected_shardings
from ._shardings import as_named_sharding, from_ir_sharding, mesh_attr, resolve_spec, runtime_mesh, to_ir_sharding
from .tree_util import NAMESPACE


def _is_sharding_leaf(node) -> bool:
    return node is None or isinstance(node, (Sharding, PartitionSpec))


def _normalise_indices(indices, argument: str) -> tuple[int, ...]:
    if indices is None:
        return ()
    indices = (indices,) if isinstance(indices, int) else tuple(indices)
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


@dataclass(frozen=True)
class _ArgSpec:
    """What the cache knows of one flat dynamic argument."""

    type: TensorType
    weak_type: bool
    sharding: Sharding | None


def _abstract(leaf, path: str) -> _ArgSpec:
    if isinstance(leaf, Array):
        sharding = leaf.sharding if leaf.committed else None
        return _ArgSpec(TensorType(leaf.shape, dtype_of(leaf).name), leaf.weak_type, sharding)
    if isinstance(leaf, Tracer):
        return _ArgSpec(leaf.value.type, leaf.weak_type, None)
    try:
        kind = dtype_of(leaf)
        shape = np.shape(leaf)
    except TypeError as error:
        raise TypeError(
            f"jit argument {path} of type {type(leaf).__name__} is not a valid array: {error}. "
            f"Pass arrays or scalars, or mark the argument static with static_argnums/static_argnames"
        ) from None
    return _ArgSpec(TensorType(tuple(shape), kind.name), kind.weak, None)


class Compiled:
    """A program compiled for one input signature; call it with the dynamic arguments."""

    def __init__(self, lowered: Lowered, program: CompiledProgram):
        self._lowered = lowered
        self._program = program
        self._compiled_plan = None
        traced = lowered._traced.module
        self._result_shapes = [value.type.shape for value in traced.main.returns]
        partitioned = program.partitioned
        self._layout = None  # this process's block of the mesh when it spans several processes
        if partitioned is None:
            self._arg_shardings = [None] * len(traced.main.args)
            self._result_shardings = optree.tree_leaves(
                lowered._output_shardings, is_leaf=_is_sharding_leaf, none_is_leaf=True, namespace=NAMESPACE)
        else:
            mesh = partitioned.mesh(partitioned.main.spmd_mesh)
            self._layout = process_layout(runtime_mesh(mesh))
            func = partitioned.main
            self._arg_shardings = [from_ir_sharding(s, mesh, len(v.type.shape)) for s, v in zip(func.arg_shardings, traced.main.args)]
            self._result_shardings = [from_ir_sharding(s, mesh, len(shape)) for s, shape in zip(func.result_shardings, self._result_shapes)]

    def as_text(self) -> str:
        """The per-device module (the traced module when nothing is sharded)."""
        return print_module(self._program.partitioned or self._program.traced)

    @property
    def input_shardings(self):
        count = self._lowered._in_treedef.num_leaves
        return optree.tree_unflatten(self._lowered._in_treedef, self._arg_shardings[:count])

    @property
    def output_shardings(self):
        return optree.tree_unflatten(self._lowered._out_treedef, list(self._result_shardings))

    def cost_analysis(self) -> dict[str, float]:
        analysis = module_cost_analysis(self._program.propagated)
        analysis["collective bytes per device"] = float(sum(record.bytes for record in self.collectives()))
        return analysis

    def collectives(self) -> list[CollectiveRecord]:
        """Every collective of the per-device program: kind, mesh axes, bytes each device sends
        (ring model), and why it is there."""
        if self._program.partitioned is None:
            return []
        return collective_records(self._program.partitioned, self._program.collective_reasons)

    def explain(self) -> str:
        """Where every value's sharding came from, and the choices the partitioner made."""
        text = (format_provenance(self._program.traced, self._program.propagation, self._program.strategy_name)
                if self._program.propagation is not None else "no propagation result (custom strategy or no mesh)\n")
        if self._program.decisions:
            text += "\npartitioning decisions\n"
            for decision in self._program.decisions:
                where = f" at {decision.location}" if decision.location else ""
                text += f"  {decision.op}{where}: {decision.chosen}\n"
                for name, value in decision.alternatives.items():
                    text += f"      {name}: {value:.0f}\n"
        return text

    def _run_flat(self, leaves) -> list[Array]:
        traced = self._lowered._traced
        specs = self._lowered._arg_specs
        weak = traced.out_weak_types
        arguments = list(leaves) + list(traced.captured)
        if self._program.partitioned is not None:
            return self._run_plan(arguments, weak)
        arrays = [np.asarray(leaf, dtype=to_numpy(spec.type.dtype)) for leaf, spec in zip(leaves, specs)]
        arrays += [np.asarray(captured) for captured in traced.captured]
        self._release_donated(list(leaves))
        outputs = run_plan(self._plan(), arrays)
        return [_single_device_array(output, sharding, w)
                for output, sharding, w in zip(outputs, self._result_shardings, weak)]

    def _run_plan(self, arguments, weak) -> list[Array]:
        plan = self._plan()
        lead_shape = plan.mesh_shape if self._layout is None else self._layout.local_shape
        buffers = [to_buffer(value, sharding, lead_shape, varying)
                   for value, sharding, varying in zip(arguments, self._arg_shardings, plan.arg_varying)]
        self._release_donated(arguments)
        outputs = run_plan(plan, buffers, self._layout)
        return [from_buffer(output, sharding, shape, lead_shape, weak_type=w)
                for output, sharding, shape, w in zip(outputs, self._result_shardings, self._result_shapes, weak)]

    def _plan(self):
        if self._compiled_plan is None:
            self._compiled_plan = lower(self._program.partitioned or self._program.traced, self._lowered._donated,
                                        whole_mesh=self._layout is None)
        return self._compiled_plan

    def _release_donated(self, arguments) -> None:
        """Donated Arrays are deleted once their buffers are handed to the plan, which frees
        them at their last use, so their memory is reused during the call (JAX semantics:
        a donated Array cannot be used afterwards)."""
        for position in self._lowered._donated:
            value = arguments[position]
            if isinstance(value, Array) and not value.is_deleted():
                value.delete()

    def run_reference(self, *args, **kwargs):
        """Run the per-device module through the reference interpreter instead of the Plan
        (the oracle the compiled kernels are checked against)."""
        leaves = optree.tree_leaves((args, kwargs), namespace=NAMESPACE)
        arguments = list(leaves) + list(self._lowered._traced.captured)
        weak = self._lowered._traced.out_weak_types
        if self._program.partitioned is None:
            specs = self._lowered._arg_specs
            arrays = [np.asarray(leaf, dtype=to_numpy(spec.type.dtype)) for leaf, spec in zip(leaves, specs)]
            arrays += [np.asarray(captured) for captured in self._lowered._traced.captured]
            outputs = [_single_device_array(output, sharding, w) for output, sharding, w
                       in zip(interpret(self._program.traced, *arrays), self._result_shardings, weak)]
        else:
            outputs = run_spmd(self._program.partitioned, arguments, self._arg_shardings, self._result_shardings,
                               self._result_shapes, weak)
        return optree.tree_unflatten(self._lowered._out_treedef, outputs)

    def __call__(self, *args, **kwargs):
        leaves, treedef = optree.tree_flatten((args, kwargs), namespace=NAMESPACE)
        if treedef != self._lowered._in_treedef:
            raise TypeError(
                f"Compiled function called with arguments of structure {treedef}, but it was "
                f"compiled for {self._lowered._in_treedef}"
            )
        for position, (leaf, spec) in enumerate(zip(leaves, self._lowered._arg_specs)):
            actual = _abstract(leaf, f"[{position}]")
            if actual.type != spec.type:
                raise TypeError(f"Compiled argument {position}: expected {spec.type}, got {actual.type}")
        outputs = run_checked(self, leaves) if config.read("check_partitioning") else self._run_flat(leaves)
        return optree.tree_unflatten(self._lowered._out_treedef, outputs)


class Lowered:
    """A traced program for one input signature: ``as_text()`` shows it, ``compile()`` builds it."""

    def __init__(self, traced, in_treedef, out_treedef, arg_specs, input_shardings, output_shardings,
                 propagation="shardy"):
        self._propagation = propagation
        self._donated: frozenset[int] = frozenset()
        self._traced = traced
        self._in_treedef = in_treedef
        self._out_treedef = out_treedef
        self._arg_specs = arg_specs
        self._input_shardings = input_shardings
        self._output_shardings = output_shardings
        self._compiled: Compiled | None = None

    def as_text(self) -> str:
        return print_module(self._traced.module)

    @property
    def module(self):
        return self._traced.module

    def compile(self) -> Compiled:
        if self._compiled is None:
            program = _compile_reporting_at_user_line(self._traced.module, self._propagation)
            report_inspected_shardings(program)
            self._compiled = Compiled(self, program)
        return self._compiled

    def cost_analysis(self) -> dict[str, float]:
        return module_cost_analysis(self._traced.module)


class Jitted:
    """The callable ``jit`` returns; traces and compiles once per input signature."""

    def __init__(self, fun: Callable, *, in_shardings=None, out_shardings=None, static_argnums=None,
                 static_argnames=None, donate_argnums=None, propagation="shardy", check=False):
        if not callable(fun):
            raise TypeError(f"jit expects a callable, got {type(fun).__name__}: {fun!r}")
        self._fun = fun
        self._in_shardings = in_shardings
        self._out_shardings = out_shardings
        self._static_argnums = _normalise_indices(static_argnums, "static_argnums")
        self._static_argnames = _normalise_names(static_argnames, "static_argnames")
        self._donate_argnums = _normalise_indices(donate_argnums, "donate_argnums")
        from meshjit.compiler.passes.propagate_shardings import Strategy

        if not (isinstance(propagation, Strategy) or callable(propagation) or propagation in ("shardy", "gspmd")):
            raise ValueError(
                f"jit propagation must be 'shardy', 'gspmd', a Strategy or a callable Module -> Module, "
                f"got {propagation!r}")
        self._propagation = propagation
        self._check = bool(check)
        try:
            self._signature = inspect.signature(fun)
        except (TypeError, ValueError):
            self._signature = None
        self._add_static_pairs()
        self._cache: dict = {}
        self._fast_cache: dict = {}
        # NOTE: updated=() keeps the wrapped callable's __dict__ (which may hold a `_fun` of its
        # own, e.g. another Jitted) from overwriting this object's attributes
        functools.update_wrapper(self, fun, updated=())

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
        try:
            hash(static_values)
        except TypeError:
            bad = next(value for _, value in static_values if not _hashable(value))
            raise ValueError(
                f"Non-hashable static arguments are not supported: jit of {self.__name__} got a static "
                f"argument of type {type(bad).__name__} ({bad!r}); make it hashable (a tuple, not a "
                f"list) or pass it as a dynamic array argument"
            ) from None
        return dynamic_args, dynamic_kwargs, static_values, static_positions

    def _check_arity(self, args, kwargs) -> None:
        if self._signature is None:
            return
        try:
            self._signature.bind(*args, **kwargs)
        except TypeError as error:
            raise TypeError(f"{self.__name__}() called with the wrong arguments: {error}") from None

    def _run(self, compiled: Compiled, leaves) -> list[Array]:
        """Run a compiled program; in check mode also against the reference interpreter."""
        if self._check or config.read("check_partitioning"):
            return run_checked(compiled, leaves)
        return compiled._run_flat(leaves)

    def lower(self, *args, **kwargs) -> Lowered:
        args, kwargs = _unwrap_global_device_arrays(args, kwargs)
        self._check_arity(args, kwargs)
        dynamic_args, dynamic_kwargs, static_values, static_positions = self._split(args, kwargs)
        leaves, treedef = optree.tree_flatten((dynamic_args, dynamic_kwargs), namespace=NAMESPACE)
        paths = [optree.tree_paths((dynamic_args, dynamic_kwargs), namespace=NAMESPACE)]
        specs = tuple(_abstract(leaf, _path_text(path)) for leaf, path in zip(leaves, paths[0]))
        key = (treedef, specs, static_values)
        lowered = self._cache.get(key)
        if lowered is None:
            lowered = self._trace(args, kwargs, static_positions, treedef, specs, len(dynamic_args))
            self._cache[key] = lowered
        return lowered

    def __call__(self, *args, **kwargs):
        fast_key = None
        if not kwargs and not self._static_argnums:
            # NOTE: the dispatch fast path: one flatten and a dict lookup per call.
            leaves, treedef = optree.tree_flatten(args, namespace=NAMESPACE)
            fast_key = _fast_key(treedef, leaves)
            compiled = self._fast_cache.get(fast_key) if fast_key is not None else None
            if compiled is not None:
                return optree.tree_unflatten(compiled._lowered._out_treedef, self._run(compiled, leaves))
        args, kwargs = _unwrap_global_device_arrays(args, kwargs)
        if any(isinstance(leaf, Tracer) for leaf in optree.tree_leaves((args, kwargs), namespace=NAMESPACE)):
            return self._inline(args, kwargs)
        lowered = self.lower(*args, **kwargs)
        dynamic_args, dynamic_kwargs, _, _ = self._split(args, kwargs)
        leaves = optree.tree_leaves((dynamic_args, dynamic_kwargs), namespace=NAMESPACE)
        compiled = lowered.compile()
        if fast_key is not None:
            self._fast_cache[fast_key] = compiled
        return optree.tree_unflatten(lowered._out_treedef, self._run(compiled, leaves))

    def _inline(self, args, kwargs):
        """jit called inside a traced function inlines into the outer trace; its in_shardings
        and out_shardings become sharding constraints there (as in JAX)."""
        if self._in_shardings is not None:
            count = len(args)
            static = {index % count for index in self._static_argnums if -count <= index < count}
            dynamic = [arg for index, arg in enumerate(args) if index not in static]
            shardings = self._in_shardings
            if not isinstance(shardings, (tuple, list)) or _is_sharding_leaf(shardings):
                shardings = (shardings,) * len(dynamic)
            constrained = iter(with_sharding_constraint(tuple(dynamic), tuple(shardings)))
            args = tuple(arg if index in static else next(constrained) for index, arg in enumerate(args))
        out = self._fun(*args, **kwargs)
        if self._out_shardings is not None:
            out = with_sharding_constraint(out, self._out_shardings)
        return out

    def _trace(self, args, kwargs, static_positions, treedef, specs, dynamic_count) -> Lowered:
        input_shardings = self._input_shardings(args, static_positions, specs, treedef, dynamic_count)
        meshes: dict = {}
        arg_shardings = [_ir_arg_sharding(sharding, spec.type.rank, meshes) for sharding, spec
                         in zip(optree.tree_leaves(input_shardings, is_leaf=_is_sharding_leaf, none_is_leaf=True,
                                                   namespace=NAMESPACE), specs)]
        out_treedef_box = []

        def flat_fun(*tracers):
            dynamic_args, dynamic_kwargs = optree.tree_unflatten(treedef, list(tracers))
            iterator = iter(dynamic_args)
            full_args = [args[index] if index in static_positions else next(iterator) for index in range(len(args))]
            full_kwargs = {name: kwargs[name] if name in self._static_argnames else dynamic_kwargs[name] for name in kwargs}
            out = self._fun(*full_args, **full_kwargs)
            out_leaves, out_treedef = optree.tree_flatten(out, namespace=NAMESPACE)
            out_treedef_box.append(out_treedef)
            return [_output_operand(leaf, index) for index, leaf in enumerate(out_leaves)]

        names = self._dynamic_names(len(args), static_positions)
        skeleton = optree.tree_unflatten(treedef, [0] * len(specs))
        hints = [_hint(path, names) for path in optree.tree_paths(skeleton, namespace=NAMESPACE)]
        traced, _ = trace_flat(flat_fun, [spec.type for spec in specs], hints, name="main",
                               arg_weak_types=[spec.weak_type for spec in specs],
                               arg_shardings=arg_shardings, meshes=meshes)
        out_treedef = out_treedef_box[0]
        output_shardings = self._output_sharding_tree(out_treedef)
        if self._out_shardings is not None:
            traced = _with_result_shardings(traced, output_shardings, meshes)
        lowered = Lowered(traced, treedef, out_treedef, specs, input_shardings, output_shardings, self._propagation)
        lowered._donated = self._donated_leaves(args, static_positions, treedef)
        return lowered

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

    def _input_shardings(self, args, static_positions, specs, treedef, dynamic_count):
        """Per dynamic leaf: the jit's in_shardings, else a committed input's own sharding."""
        leaves_shardings = [spec.sharding for spec in specs]
        if self._in_shardings is not None:
            positional = tuple(range(dynamic_count))
            prefix = self._in_shardings
            if not isinstance(prefix, (tuple, list)) or _is_sharding_leaf(prefix):
                prefix = (prefix,) * dynamic_count
            if len(prefix) != dynamic_count:
                raise ValueError(
                    f"jit in_shardings has {len(prefix)} entries but {self.__name__} got {dynamic_count} "
                    f"positional dynamic arguments"
                )
            dynamic_args = optree.tree_unflatten(treedef, list(range(len(specs))))[0]
            del positional
            expanded = optree.tree_broadcast_prefix(tuple(prefix), dynamic_args, is_leaf=_is_sharding_leaf,
                                                    none_is_leaf=True, namespace=NAMESPACE)
            given = optree.tree_leaves(expanded, is_leaf=_is_sharding_leaf, none_is_leaf=True, namespace=NAMESPACE)
            for position, sharding in enumerate(given):
                if sharding is not None:
                    leaves_shardings[position] = resolve_spec(sharding, f"jit in_shardings[{position}]")
        return optree.tree_unflatten(treedef, leaves_shardings)

    def _output_sharding_tree(self, out_treedef):
        default = SingleDeviceSharding(all_devices()[0])
        count = out_treedef.num_leaves
        if self._out_shardings is None:
            return optree.tree_unflatten(out_treedef, [default] * count)
        skeleton = optree.tree_unflatten(out_treedef, list(range(count)))
        try:
            expanded = optree.tree_broadcast_prefix(self._out_shardings, skeleton, is_leaf=_is_sharding_leaf,
                                                    none_is_leaf=True, namespace=NAMESPACE)
        except ValueError as error:
            raise ValueError(f"jit out_shardings must be a pytree prefix of the outputs: {error}") from None
        leaves = optree.tree_leaves(expanded, is_leaf=_is_sharding_leaf, none_is_leaf=True, namespace=NAMESPACE)
        resolved = [default if sharding is None else resolve_spec(sharding, f"jit out_shardings[{index}]")
                    for index, sharding in enumerate(leaves)]
        return optree.tree_unflatten(out_treedef, resolved)


def _with_result_shardings(traced, output_shardings, meshes):
    """Put the user's out_shardings on the traced function's results (as propagation seeds)."""
    import dataclasses

    func = traced.module.main
    leaves = optree.tree_leaves(output_shardings, is_leaf=_is_sharding_leaf, none_is_leaf=True, namespace=NAMESPACE)
    shardings = []
    for index, (sharding, value) in enumerate(zip(leaves, func.returns)):
        sharding.shard_shape(value.type.shape)  # raises IndivisibleError naming the shapes
        shardings.append(_ir_arg_sharding(sharding, value.type.rank, meshes))
    new_func = dataclasses.replace(func, result_shardings=tuple(shardings))
    module = dataclasses.replace(traced.module, meshes=tuple(meshes.items()), funcs=(new_func,))
    return dataclasses.replace(traced, module=module)


def _compile_reporting_at_user_line(module, propagation) -> CompiledProgram:
    """Compile; compiler warnings (full rematerialisation) are re-issued at the user's line that
    triggered compilation, which names where the costly program was called from."""
    location = user_location()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        program = compile_module(module, propagation=propagation)
    filename, _, line = (location or "<unknown>:0").rpartition(":")
    for record in caught:
        message = f"{record.message} (compiled for the call at {location})"
        warnings.warn_explicit(message, record.category, filename, int(line) if line.isdigit() else 0)
    return program


def _single_device_array(output: np.ndarray, sharding, weak_type: bool) -> Array:
    """An Array on one device from an unsharded program's result (replicated shardings given by
    out_shardings are laid out properly)."""
    if not isinstance(sharding, SingleDeviceSharding):
        return shard_numpy(np.asarray(output), sharding, weak_type=weak_type)
    block = np.array(output)[np.newaxis]
    block.flags.writeable = False
    return Array(block.shape[1:], block.dtype, sharding, block, (0,), weak_type=weak_type)


def _unwrap_global_device_arrays(args, kwargs):
    """GlobalDeviceArrays enter jit as the Arrays they wrap (keeping their layout)."""
    from meshjit.runtime.global_device_array import GlobalDeviceArray

    leaves = optree.tree_leaves((args, kwargs), namespace=NAMESPACE)
    if not any(isinstance(leaf, GlobalDeviceArray) for leaf in leaves):
        return args, kwargs
    return optree.tree_map(lambda leaf: leaf.to_array() if isinstance(leaf, GlobalDeviceArray) else leaf,
                           (args, kwargs), namespace=NAMESPACE)


_SCALAR_TYPES = (bool, int, float)


def _fast_key(treedef, leaves):
    """A cheap cache key for positional-only calls, or None when a leaf needs the full path."""
    parts = [treedef, config.read("jax_enable_x64")]
    for leaf in leaves:
        kind = type(leaf)
        if kind is Array:
            parts.append((leaf.shape, leaf.dtype, leaf._sharding if leaf._committed else None, leaf._weak_type))
        elif kind is np.ndarray:
            parts.append((leaf.shape, leaf.dtype))
        elif kind in _SCALAR_TYPES:
            parts.append(kind)
        else:
            return None
    return tuple(parts)


def _hashable(value) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _path_text(path) -> str:
    return "".join(f"[{entry!r}]" for entry in path)


def _hint(path, names: list[str]) -> str | None:
    """A readable argument name from its pytree path: ``x``, ``params_w``, ``layers_0_b``."""
    if len(path) < 2:
        return None
    head = names[path[1]] if path[0] == 0 and path[1] < len(names) else str(path[1])
    text = "_".join([head] + [str(entry) for entry in path[2:]])
    return text if text.replace("_", "a").isalnum() and not text[0].isdigit() else None


def _ir_arg_sharding(sharding, rank: int, meshes: dict):
    if sharding is None or isinstance(sharding, SingleDeviceSharding):
        return None
    named = as_named_sharding(sharding, rank, "jit in_shardings")
    attr = mesh_attr(named.mesh)
    name = next((key for key, value in meshes.items() if value == attr), None)
    if name is None:
        name = "mesh" if not meshes else f"mesh_{len(meshes)}"
        meshes[name] = attr
    return to_ir_sharding(named, rank, name)


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
        static_argnames=None, donate_argnums=None, propagation="shardy", check=False, **options):
    """Compile ``fun`` for the shapes, dtypes and shardings it is called with (as ``jax.jit``).

    Usable as ``jit(f, ...)``, ``@jit`` and ``@functools.partial(jit, ...)``.
    """
    if options:
        raise TypeError(f"jit got unexpected keyword arguments {sorted(options)}")
    if fun is None:
        return functools.partial(jit, in_shardings=in_shardings, out_shardings=out_shardings,
                                 static_argnums=static_argnums, static_argnames=static_argnames,
                                 donate_argnums=donate_argnums, propagation=propagation, check=check)
    return Jitted(fun, in_shardings=in_shardings, out_shardings=out_shardings, static_argnums=static_argnums,
                  static_argnames=static_argnames, donate_argnums=donate_argnums, propagation=propagation, check=check)


_EAGER_OPS: dict = {}


def _eager_executor(name: str, operands: Sequence, attrs: dict, weak_type: bool):
    """Run one op on concrete values as a cached one-op jitted program; returns Arrays."""
    from meshjit.ir import Attrs

    key = (name, Attrs(attrs), weak_type)
    jitted = _EAGER_OPS.get(key)
    if jitted is None:
        def one_op(*operands):
            return bind(name, operands, attrs, weak_type=weak_type)

        jitted = _EAGER_OPS[key] = Jitted(one_op)
    return list(jitted(*operands))


set_eager_executor(_eager_executor)
del lax_ops


def with_sharding_constraint(x, shardings):
    """Ask for ``x`` (a pytree) to be laid out as ``shardings`` (a pytree prefix of Shardings or
    PartitionSpecs; ``P.UNCONSTRAINED`` dims are left to propagation). Outside jit it reshards."""
    from meshjit.compiler.lax_ops import with_sharding_constraint_ir
    from meshjit.runtime.transfer import device_put

    leaves, treedef = optree.tree_flatten(x, namespace=NAMESPACE)
    try:
        expanded = optree.tree_broadcast_prefix(shardings, x, is_leaf=_is_sharding_leaf, none_is_leaf=True,
                                                namespace=NAMESPACE)
    except ValueError as error:
        raise ValueError(f"with_sharding_constraint shardings must be a pytree prefix of x: {error}") from None
    targets = optree.tree_leaves(expanded, is_leaf=_is_sharding_leaf, none_is_leaf=True, namespace=NAMESPACE)
    results = []
    for index, (leaf, target) in enumerate(zip(leaves, targets)):
        argument = f"with_sharding_constraint shardings[{index}]"
        if target is None:
            results.append(leaf)
            continue
        sharding = resolve_spec(target, argument)
        if not isinstance(leaf, Tracer):
            results.append(device_put(leaf, sharding))
            continue
        named = as_named_sharding(sharding, leaf.ndim, argument)
        mesh_name = leaf.trace.add_mesh(mesh_attr(named.mesh))
        results.append(with_sharding_constraint_ir(leaf, to_ir_sharding(named, leaf.ndim, mesh_name)))
    return optree.tree_unflatten(treedef, results)
