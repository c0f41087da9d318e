"""jax.debug.callback and jax.debug.print: argument checks, JAX's split of the arguments into
array leaves (passed through the program as values) and static ones (kept in the callback), and
JAX's print format. Nothing traced: the callback runs at once; else it is staged
(compiler/frontend/debug_callbacks.py) and runs when the program does, with meshjit Arrays."""

from __future__ import annotations

import string
import sys
from collections.abc import Callable

import numpy as np
import optree

from meshjit.compiler.frontend.debug_callbacks import is_traced, stage_debug_callback
from meshjit.compiler.frontend.numpy_api.creation import asarray
from meshjit.compiler.frontend.trace import Tracer
from meshjit.runtime.array import Array
from meshjit.runtime.devices import local_devices
from meshjit.runtime.transfer import device_put

from .tree_util import _flatten as flatten_tree

_NUMBERS = (bool, int, float, complex, np.number, np.bool_)


def _is_array_leaf(leaf) -> bool:
    return isinstance(leaf, (Tracer, Array, np.ndarray, *_NUMBERS))


def _as_array(value) -> Array:
    """A run-time value (a numpy piece of a plan buffer) as the Array a callback receives, on
    this process's first device (addressable under MPI too)."""
    return device_put(np.array(value), local_devices()[0])


def _run(callback: Callable, args: tuple, kwargs: dict, partitioned: bool) -> None:
    """Call ``callback(*args, **kwargs)`` now, or stage it when an argument is traced."""
    leaves, treedef = flatten_tree((args, kwargs))
    dynamic = [index for index, leaf in enumerate(leaves) if _is_array_leaf(leaf)]

    def flat_callback(*values):
        filled = list(leaves)
        for index, value in zip(dynamic, values):
            filled[index] = value if isinstance(value, Array) else _as_array(value)
        call_args, call_kwargs = optree.tree_unflatten(treedef, filled)
        callback(*call_args, **call_kwargs)

    operands = [leaves[index] for index in dynamic]
    if is_traced(operands):
        stage_debug_callback(flat_callback, operands, partitioned=partitioned)
    else:
        flat_callback(*(asarray(operand) for operand in operands))


def callback(callback: Callable | None = None, *args, ordered: bool = False, partitioned: bool = False,
             **kwargs):
    """Call ``callback(*args, **kwargs)`` with the values the arguments have when the program
    runs (as ``jax.debug.callback``): inside jit once per call of the program, with the whole
    value; inside a shard_map body once per device, with its shard; under vmap once per
    example; under grad with the primal values. ``jax.debug.callback(ordered=True)`` returns
    the function taking the callback (JAX's two-call form). Callbacks run in program order,
    ordered or not."""
    del ordered  # NOTE: meshjit runs every callback in program order, ordered or not
    if callback is None:
        if args or kwargs:
            raise TypeError(f"debug_callback received unexpected arguments in the two-call form: {args=} {kwargs=}")
        return lambda function, *c_args, **c_kwargs: _checked_run(function, c_args, c_kwargs, partitioned)
    _checked_run(callback, args, kwargs, partitioned)
    return None


def _checked_run(function, args, kwargs, partitioned) -> None:
    if not callable(function):
        raise TypeError(f"first argument to jax.debug.callback must be callable, but got an object of type "
                        f"{type(function)}")
    _run(function, args, kwargs, partitioned)


class _FormatChecker(string.Formatter):
    """JAX's check of a print's format string against its arguments, without formatting."""

    def format_field(self, value, format_spec):
        return ""

    def check_unused_args(self, used_args, args, kwargs):
        unused_args = [arg for index, arg in enumerate(args) if index not in used_args]
        unused_kwargs = [name for name in kwargs if name not in used_args]
        if unused_args:
            raise ValueError(f"Unused positional arguments to `jax.debug.print`: {unused_args}")
        if unused_kwargs:
            raise ValueError(
                f"Unused keyword arguments to `jax.debug.print`: {unused_kwargs}. You may be passing an "
                f"f-string (i.e, `f\"{{x}}\"`) into `jax.debug.print` and instead should pass in a regular string.")


def debug_print(fmt: str | None = None, *args, ordered: bool = False, partitioned: bool = False,
                skip_format_check: bool = False, **kwargs):
    """Print ``fmt.format(*args, **kwargs)`` with the values the arguments have when the program
    runs (as ``jax.debug.print``; when ``callback`` calls back, see there). A format without
    placeholders prints the arguments after it, separated by spaces."""
    del ordered

    def print_now(fmt: str, *c_args, **c_kwargs) -> None:
        if not isinstance(fmt, str):
            raise TypeError(f"jax.debug.print fmt must be a str, got {type(fmt).__name__}")
        if not skip_format_check:
            _FormatChecker().format(fmt, *c_args, **c_kwargs)
        placeholders = bool(fmt) and next(iter(string.Formatter().parse(fmt)))[1] is not None
        options = np.get_printoptions()
        _run(lambda *values, **named: _write(fmt, placeholders, options, values, named), c_args, c_kwargs,
             partitioned)

    if fmt is None:
        if args or kwargs:
            raise TypeError(f"debug_print received unexpected arguments in the two-call form: {args=} {kwargs=}")
        return print_now
    print_now(fmt, *args, **kwargs)
    return None


def _write(fmt: str, placeholders: bool, options: dict, args, kwargs) -> None:
    if placeholders:
        with np.printoptions(**options):
            message = fmt.format(*args, **kwargs)
    else:
        message = " ".join((fmt, *(str(arg) for arg in args)))
    sys.stdout.write(message + "\n")
