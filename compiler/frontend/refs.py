"""Mutable array references (``jax.new_ref``, ``jax.Ref``), discharged into values while tracing.

A Ref holds its current value: an Array at the top level, a Tracer while a trace has it. Each
traced body (jit's function, a scan body) runs in a *ref scope*; a Ref belongs to the scope that
made it, and a body may touch a Ref of an outer scope only once the body threads it: the first
touch raises ``RefDiscovered``, the body's owner (jit, scan) adds the Ref to its list and traces
again with the Ref's value as an extra input and its final value as an extra output, written
back after the call. So a program never captures a Ref's value as a constant, and a Tracer
never leaks out of the body that made it.
"""

from __future__ import annotations

import builtins
import contextlib
import itertools
from collections.abc import Callable


class RefDiscovered(Exception):  # noqa: N818 - a signal to the tracing body's owner, not an error
    """A traced body touched a Ref of an outer scope that it does not thread yet."""

    def __init__(self, ref: Ref):
        super().__init__("a traced body touched an array reference it does not thread yet")
        self.ref = ref


class _Scope:
    """One traced body: the Refs it made (by their ``scope``) and the outer ones it threads."""

    __slots__ = ("bound",)

    def __init__(self):
        self.bound: builtins.set[int] = builtins.set()


_TOP = _Scope()
_SCOPES: list[_Scope] = [_TOP]
# NOTE: Refs are numbered as they are made; a vmap body records the next number, so the Refs
# made before it (closed over, unbatched) are those numbered below its mark.
_SERIAL = itertools.count()
_VMAP_MARKS: list[int] = []


@contextlib.contextmanager
def vmapped_body():
    """Trace a vmap body: writing a reference made outside it raises JAX's error (the reference
    is unbatched, the body's values are batched)."""
    _VMAP_MARKS.append(next(_SERIAL))
    try:
        yield
    finally:
        _VMAP_MARKS.pop()


def _check_batched_write(ref: Ref) -> None:
    if _VMAP_MARKS and ref._serial < _VMAP_MARKS[-1]:
        raise Exception(  # noqa: TRY002 - JAX raises a bare Exception here
            f"performing a set/swap operation with vmapped value on an unbatched array reference of type "
            f"{ref.type_text()}. Move the array reference to be an argument to the vmapped function?")


def current_scope() -> _Scope:
    return _SCOPES[-1]


@contextlib.contextmanager
def ref_scope():
    """Trace a body in a scope of its own (Refs made in it are its own)."""
    _SCOPES.append(_Scope())
    try:
        yield _SCOPES[-1]
    finally:
        _SCOPES.pop()


class Ref:
    """A mutable array reference (``jax.Ref``): read with ``ref[idx]``, write with
    ``ref[idx] = value``; no arithmetic on the reference itself."""

    __slots__ = ("_value", "_scope", "_serial", "__weakref__")

    def __init__(self, value):
        self._value = value
        self._scope = current_scope()
        self._serial = next(_SERIAL)

    # NOTE: the value through these two only, so every read and write checks the scope
    def _get_value(self):
        self._check_reachable()
        return self._value

    def _set_value(self, value) -> None:
        self._check_reachable()
        self._value = value

    def _check_reachable(self) -> None:
        scope = current_scope()
        if self._scope is not scope and id(self) not in scope.bound:
            raise RefDiscovered(self)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._value.shape)

    @property
    def dtype(self):
        return self._value.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        size = 1
        for extent in self.shape:
            size *= extent
        return size

    @property
    def weak_type(self) -> bool:
        return bool(getattr(self._value, "weak_type", False))

    def type_text(self) -> str:
        """``Ref{float32[3]}``, as JAX names a reference's type in its errors."""
        import numpy as np

        return f"Ref{{{np.dtype(self.dtype).name}[{','.join(str(extent) for extent in self.shape)}]}}"

    def __getitem__(self, index):
        return get(self, index)

    def __setitem__(self, index, value) -> None:
        set(self, index, value)  # noqa: A001 - jax.ref.set's name

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __repr__(self) -> str:
        text = repr(self._value)
        return "Ref(" + text[len("Array("):] if text.startswith("Array(") else f"Ref({text})"

    def unsafe_buffer_pointer(self) -> int:
        return self._value.unsafe_buffer_pointer()

    def __array__(self, dtype=None, copy=None):
        raise TypeError("an array reference is not an array: read its value with ref[...] first")


def new_ref(value) -> Ref:
    """A new mutable reference holding ``value`` (``jax.new_ref``)."""
    from .numpy_api.creation import asarray

    if isinstance(value, Ref):
        raise TypeError(f"new_ref expects an array, got an array reference of type {value.type_text()}: "
                        "references to references are not allowed")
    return Ref(asarray(value))


def _whole(index) -> bool:
    return index is Ellipsis or (isinstance(index, tuple) and index in ((), (Ellipsis,)))


def get(ref: Ref, index=()):
    """``ref[index]`` (``jax.ref.get``)."""
    value = ref._get_value()
    return value if _whole(index) else value[index]


def swap(ref: Ref, index, value):
    """Write ``value`` at ``ref[index]`` and return what was there (``jax.ref.swap``)."""
    _check_batched_write(ref)
    old = get(ref, index)
    ref._set_value(_updated(ref._get_value(), index, value))
    return old


def set(ref: Ref, index, value) -> None:  # noqa: A001 - jax.ref.set's name
    """``ref[index] = value`` (``jax.ref.set``)."""
    _check_batched_write(ref)
    ref._set_value(_updated(ref._get_value(), index, value))


def addupdate(ref: Ref, index, value) -> None:
    """``ref[index] += value`` (``jax.ref.addupdate``)."""
    _check_batched_write(ref)
    current = ref._get_value()
    _check_shape("addupdate", ref, index, value)
    ref._set_value(current + value if _whole(index) else current.at[index].add(value))


def freeze(ref: Ref):
    """The reference's final value (``jax.freeze``)."""
    return ref._get_value()


def _updated(current, index, value):
    from .numpy_api.creation import asarray

    if _whole(index):
        _check_shape("swap", current, index, value)
        return asarray(value, dtype=current.dtype)
    return current.at[index].set(value)


def _check_shape(operation: str, target, index, value) -> None:
    """A whole-reference write takes a value of the reference's shape (no broadcasting, as JAX)."""
    from .operands import shape_of

    if not _whole(index):
        return
    if tuple(shape_of(value)) != tuple(target.shape):
        raise ValueError(f"Invalid shape for `{operation}`. Ref shape: {tuple(target.shape)}. Expected shape: "
                         f"{tuple(target.shape)}. Value shape: {tuple(shape_of(value))}. Transforms: (). ")


def is_ref(value) -> bool:
    return isinstance(value, Ref)


@contextlib.contextmanager
def bound_refs(refs: list[Ref], values: list):
    """Within a traced body: ``refs`` hold ``values`` (the body's inputs for them) and are
    threaded by the current scope; their outer values come back afterwards."""
    scope = current_scope()
    saved = [ref._value for ref in refs]
    for ref, value in zip(refs, values):
        ref._value = value
        scope.bound.add(id(ref))
    try:
        yield
    finally:
        for ref, value in zip(refs, saved):
            ref._value = value
            scope.bound.discard(id(ref))


def threading_refs(run: Callable, refs: list[Ref]):
    """``run(refs)`` again with one more threaded Ref each time the body touches one it does not
    thread yet; ``refs`` (the caller's list, kept between calls) grows as they are found."""
    while True:
        try:
            return run(refs)
        except RefDiscovered as found:
            if any(ref is found.ref for ref in refs):
                raise
            # NOTE: the Ref must be reachable from where the body is traced; if not, the
            # enclosing body's owner threads it first
            found.ref._check_reachable()
            refs.append(found.ref)
