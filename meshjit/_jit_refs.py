"""jit of a function that takes array references (``jax.Ref``) or closes over them: the
references' values become extra inputs and their final values extra outputs of a second jitted
function, and are written back after each call (compiler/frontend/refs.py has the scopes).
JAX's checks and messages: a reference passed twice, passed and closed over, or returned."""

from __future__ import annotations

import optree

from meshjit.compiler.frontend.refs import Ref, bound_refs, threading_refs
from .tree_util import NAMESPACE
from .tree_util import _flatten as flatten_tree, _structure as structure_spec


def has_refs(tree) -> bool:
    return any(isinstance(leaf, Ref) for leaf in optree.tree_leaves(tree, namespace=NAMESPACE))


def _where(fun) -> str:
    code = getattr(fun, "__code__", None)
    name = getattr(fun, "__name__", type(fun).__name__)
    return f"{name} at {code.co_filename}:{code.co_firstlineno}" if code is not None else name


def _leaf_names(jitted, args, kwargs) -> list[str]:
    """Each leaf of ``(args, kwargs)`` named as JAX names an argument: ``x_ref``, ``x_ref['a']``."""
    names = []
    parameters = list(jitted._signature.parameters) if jitted._signature is not None else []
    for position, arg in enumerate(args):
        name = parameters[position] if position < len(parameters) else f"args[{position}]"
        names += [name + "".join(f"[{key!r}]" for key in path)
                  for path in optree.tree_paths(arg, namespace=NAMESPACE)]
    for keyword, arg in sorted(kwargs.items()):
        names += [keyword + "".join(f"[{key!r}]" for key in path)
                  for path in optree.tree_paths(arg, namespace=NAMESPACE)]
    return names


def _check_arguments(jitted, names: list[str], leaves, closed: list[Ref]) -> None:
    seen: dict[int, int] = {}
    for index, leaf in enumerate(leaves):
        if not isinstance(leaf, Ref):
            continue
        if id(leaf) in seen:
            raise ValueError(
                "only one reference to a mutable array may be passed as an argument to a function, but when "
                f"tracing {_where(jitted._fun)} for jit the mutable array reference of type {leaf.type_text()} "
                f"appeared at both {names[seen[id(leaf)]]} and {names[index]}.")
        seen[id(leaf)] = index
        if any(ref is leaf for ref in closed):
            raise ValueError(
                f"when tracing {_where(jitted._fun)} for jit, a mutable array reference of type "
                f"{leaf.type_text()} was both closed over and passed as the argument {names[index]}")


def _check_outputs(jitted, out, argument_refs: dict, names: list[str]) -> None:
    for leaf in optree.tree_leaves(out, namespace=NAMESPACE):
        if not isinstance(leaf, Ref):
            continue
        where = next((f"passed in as the argument {names[index]}" for index, ref in argument_refs.items()
                      if ref is leaf), "created inside the function")
        raise ValueError(
            f"function {_where(jitted._fun)} traced for jit returned a mutable array reference of type "
            f"{leaf.type_text()}, but mutable array references cannot be returned.\n\n"
            f"The returned mutable array was {where}.")


def call_with_refs(jitted, args, kwargs):
    """Call ``jitted`` whose arguments hold references or whose function closes over some."""
    from .jit_api import Jitted

    _, _, static_values, static_positions = jitted._split(args, kwargs)
    leaves, treedef = flatten_tree((args, kwargs))
    names = _leaf_names(jitted, args, kwargs)
    positions = tuple(index for index, leaf in enumerate(leaves) if isinstance(leaf, Ref))
    static_leaves = _static_leaf_indices(args, kwargs, static_positions, jitted._static_argnames)

    def run(closed: list[Ref]):
        _check_arguments(jitted, names, leaves, closed)
        key = (treedef, positions, static_values, tuple(id(ref) for ref in closed))
        inner = jitted._ref_jits.get(key)
        if inner is None:
            statics = {index: leaves[index] for index in static_leaves}

            def discharged(values, closed_values):
                argument_refs = {index: Ref(values[index]) for index in positions}
                full = [statics.get(index, argument_refs.get(index, value)) for index, value in enumerate(values)]
                call_args, call_kwargs = optree.tree_unflatten(treedef, full)
                with bound_refs(closed, closed_values):
                    out = jitted._fun(*call_args, **call_kwargs)
                    closed_final = [ref._value for ref in closed]
                _check_outputs(jitted, out, argument_refs, names)
                return out, [argument_refs[index]._value for index in positions], closed_final

            discharged.__name__ = jitted.__name__
            inner = jitted._ref_jits[key] = Jitted(discharged, in_shardings=None, propagation=jitted._propagation,
                                                   check=jitted._check)
            inner.threads_refs = False
        values = [None if index in static_leaves else (leaf._get_value() if isinstance(leaf, Ref) else leaf)
                  for index, leaf in enumerate(leaves)]
        out, argument_values, closed_values = inner(values, [ref._get_value() for ref in closed])
        for index, value in zip(positions, argument_values):
            leaves[index]._set_value(value)
        for ref, value in zip(closed, closed_values):
            ref._set_value(value)
        return out

    return threading_refs(run, jitted._closed_refs)


def _static_leaf_indices(args, kwargs, static_positions, static_names) -> frozenset[int]:
    """Flat positions (in ``(args, kwargs)``) of the leaves of static arguments."""
    indices, start = set(), 0
    for position, arg in enumerate(args):
        count = len(optree.tree_leaves(arg, namespace=NAMESPACE))
        if position in static_positions:
            indices.update(range(start, start + count))
        start += count
    for name, value in sorted(kwargs.items()):
        count = len(optree.tree_leaves(value, namespace=NAMESPACE))
        if name in static_names:
            indices.update(range(start, start + count))
        start += count
    return frozenset(indices)


def vmap_with_refs(vmap, fun, in_axes, out_axes, axes: list, options: dict, args, kwargs):
    """``vmap(fun)`` over arguments holding references: each reference's value is mapped along its
    in_axes entry, the function sees a reference to its slice, and the mapped final values are
    written back (a reference argument is mapped as JAX maps it). ``axes``: each argument leaf's
    in_axes entry."""
    leaves, treedef = flatten_tree((args, kwargs))
    positions = [index for index, leaf in enumerate(leaves) if isinstance(leaf, Ref)]
    arg_count = structure_spec(args).num_leaves
    if not isinstance(in_axes, (tuple, list)):
        in_axes = (in_axes,) * len(args)
    ref_axes = [axes[index] if index < arg_count else 0 for index in positions]

    def unreferenced(*inner_args, **inner_kwargs):
        inner_leaves = optree.tree_leaves((inner_args, inner_kwargs), namespace=NAMESPACE)
        refs = {index: Ref(inner_leaves[index]) for index in positions}
        full = [refs.get(index, value) for index, value in enumerate(inner_leaves)]
        call_args, call_kwargs = optree.tree_unflatten(treedef, full)
        return fun(*call_args, **call_kwargs), [refs[index]._value for index in positions]

    values = [leaf._get_value() if isinstance(leaf, Ref) else leaf for leaf in leaves]
    value_args, value_kwargs = optree.tree_unflatten(treedef, values)
    out, final = vmap(unreferenced, in_axes=tuple(in_axes), out_axes=(out_axes, ref_axes), **options)(
        *value_args, **value_kwargs)
    for index, value in zip(positions, final):
        leaves[index]._set_value(value)
    return out
