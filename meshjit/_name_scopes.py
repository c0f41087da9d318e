"""jax.named_scope and jax.named_call: names for the ops a block or a function records. They
change no value; they appear in each op's location in the IR text (``loc("outer/inner @
file.py":12)``), which the dumps, ``lower(...).as_text()`` and ``compile().as_text()`` print."""

from __future__ import annotations

from collections.abc import Callable

from meshjit.compiler.frontend.trace import name_scope


def named_scope(name: str):
    """A context manager (or decorator) under which the ops traced carry ``name`` after the
    enclosing scopes' names, as ``jax.named_scope``."""
    if not isinstance(name, str):
        raise TypeError("named_scope name argument must be a string.")
    return name_scope(name)


def named_call(fun: Callable, *, name: str | None = None) -> Callable:
    """``fun`` with the ops it traces named ``name`` (default: its ``__name__``), as
    ``jax.named_call``."""
    return name_scope(str(fun.__name__ if name is None else name))(fun)
