"""``jax.checkpoint`` / ``jax.remat``: differentiate a function saving fewer intermediate values
and recomputing the rest in the backward pass, as ``policy`` says (``jax.checkpoint_policies``).
Pytrees, static arguments and argument checks here; the rematerialisation itself is
``meshjit.compiler.frontend.autodiff.checkpoint``."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

import optree

from meshjit.compiler.frontend import autodiff
from meshjit.compiler.frontend.operands import is_array_like

from .tree_util import NAMESPACE
from .tree_util import _flatten as flatten_tree
from ._pytreedef import jax_ordered

__all__ = ["checkpoint", "remat"]


def _static_positions(static_argnums, count: int) -> set[int]:
    numbers = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    for number in numbers:
        if isinstance(number, bool) or not isinstance(number, int):
            raise TypeError(f"checkpoint static_argnums must be ints, got {static_argnums!r}")
    return {number % count for number in numbers if -count <= number < count}


def checkpoint(fun: Callable | None = None, *, prevent_cse: bool = True, policy: Callable | None = None,
               static_argnums: int | tuple[int, ...] = (), static_argnames: str | Iterable[str] = ()):
    """``fun`` rematerialised: under differentiation its intermediate values are not saved for the
    backward pass (except those ``policy`` names saveable, e.g.
    ``jax.checkpoint_policies.dots_saveable``) but recomputed there from its inputs. Usable as
    ``@checkpoint``, ``checkpoint(f, policy=...)`` or ``functools.partial(checkpoint, ...)``."""
    if fun is None:
        return functools.partial(checkpoint, prevent_cse=prevent_cse, policy=policy,
                                 static_argnums=static_argnums, static_argnames=static_argnames)
    if not callable(fun):
        raise TypeError(f"checkpoint expects a callable, got {type(fun).__name__}: {fun!r}")
    if policy is not None and not callable(policy):
        raise TypeError(f"checkpoint policy must be a callable such as jax.checkpoint_policies.dots_saveable, "
                        f"got {policy!r}")
    names = {static_argnames} if isinstance(static_argnames, str) else set(static_argnames)
    name = getattr(fun, "__name__", type(fun).__name__)

    @functools.wraps(fun)
    def rematerialised(*args, **kwargs):
        static = _static_positions(static_argnums, len(args)) if args else set()
        paths, leaves, treedef = optree.tree_flatten_with_path((args, kwargs), namespace=NAMESPACE)
        treedef = jax_ordered(treedef)
        dynamic = [index for index, (path, leaf) in enumerate(zip(paths, leaves))
                   if is_array_like(leaf) and not (path[0] == 0 and path[1] in static)
                   and not (path[0] == 1 and path[1] in names)]
        trees = {}

        def flat(*values):
            full = list(leaves)
            for index, value in zip(dynamic, values):
                full[index] = value
            call_args, call_kwargs = optree.tree_unflatten(treedef, full)
            outputs, trees["out"] = flatten_tree(fun(*call_args, **call_kwargs))
            return outputs

        outputs = autodiff.checkpoint_call(flat, [leaves[index] for index in dynamic], policy, prevent_cse, name)
        return optree.tree_unflatten(trees["out"], outputs)

    return rematerialised


remat = checkpoint
