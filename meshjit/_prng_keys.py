"""Typed PRNG keys (``key<fry>``), and reading a key argument that may be typed or raw.

A typed key array is a pytree node over its key data (a ``uint32`` array with a trailing dim of
2), so jit, grad, vmap and shard_map carry its data as an ordinary array and rebuild the key
inside; its shape is the data's shape without the trailing dim, as in JAX.
"""

from __future__ import annotations

import numpy as np
import optree

from meshjit.compiler.frontend.operands import dtype_of, shape_of
from meshjit.compiler.frontend.trace import Tracer, is_concrete_array

from .tree_util import NAMESPACE

IMPL_NAME = "threefry2x32"


class KeyDType:
    """The dtype of typed threefry keys, printed ``key<fry>``."""

    name = "key<fry>"

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    def __eq__(self, other) -> bool:
        return isinstance(other, KeyDType) or other == self.name

    def __hash__(self) -> int:
        return hash(self.name)


KEY_DTYPE = KeyDType()


class PRNGKeyArray:
    """An array of typed PRNG keys: ``key(0)`` is a 0-d one, ``split(key(0), 3)`` has shape (3,).

    Keys are not numbers: they index, reshape and compare, and the random functions consume
    them; ``meshjit.random.key_data`` gives the ``uint32`` data underneath.
    """

    __slots__ = ("_data",)

    def __init__(self, data):
        self._data = data

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(shape_of(self._data))[:-1]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def dtype(self) -> KeyDType:
        return KEY_DTYPE

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        return (self[index] for index in range(len(self)))

    def __getitem__(self, index):
        entries = index if isinstance(index, tuple) else (index,)
        if any(entry is Ellipsis for entry in entries):
            # keep the key data's trailing dim out of reach of the ellipsis
            entries = entries + (slice(None),)
        return PRNGKeyArray(self._data[entries])

    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return PRNGKeyArray(self._data.reshape(tuple(shape) + (2,)))

    def __eq__(self, other):
        if not isinstance(other, PRNGKeyArray):
            return NotImplemented
        return (self._data == other._data).all(axis=-1)

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else ~equal

    __hash__ = None

    def block_until_ready(self):
        if hasattr(self._data, "block_until_ready"):
            self._data.block_until_ready()
        return self

    def __repr__(self) -> str:
        if isinstance(self._data, Tracer):
            return f"JitTracer(key<fry>[{','.join(map(str, self.shape))}])"
        return f"Array({self.shape}, dtype=key<fry>) overlaying:\n{np.asarray(self._data)}"


optree.register_pytree_node(
    PRNGKeyArray,
    lambda keys: ((keys._data,), None),
    lambda _, children: PRNGKeyArray(children[0]),
    namespace=NAMESPACE,
)


def _is_array(value) -> bool:
    return isinstance(value, (Tracer, np.ndarray, np.generic)) or is_concrete_array(value)


def key_argument(function: str, key, *, allow_batched: bool = False) -> tuple[object, bool]:
    """The raw key data of ``key`` (typed or a raw ``uint32[..., 2]`` array), and whether it was
    typed; a key array where one key is expected is JAX's ValueError."""
    if isinstance(key, PRNGKeyArray):
        data, typed = key._data, True
    elif _is_array(key) or isinstance(key, (list, tuple)):
        data, typed = (key if _is_array(key) else np.asarray(key)), False
        check_key_data(data)
    else:
        raise TypeError(f"unexpected PRNG key type {type(key)}")
    shape = tuple(shape_of(data))[:-1]
    if shape and not allow_batched:
        raise ValueError(
            f"{function} accepts a single key, but was given a key array of shape {shape} != (). "
            f"Use jax.vmap for batching."
        )
    return data, typed


def check_key_data(data) -> None:
    """Raw threefry key data: a uint32 array whose trailing dim is 2 (JAX's TypeErrors)."""
    shape = tuple(shape_of(data))
    if len(shape) < 1:
        raise TypeError(
            f"JAX encountered invalid PRNG key data: expected key_data.ndim >= 1; got ndim={len(shape)}"
        )
    if shape[-1:] != (2,):
        raise TypeError(
            f"JAX encountered invalid PRNG key data: expected key_data.shape to end with (2,); "
            f"got shape={shape} for impl={IMPL_NAME}"
        )
    dtype = getattr(data, "dtype", None)
    name = dtype_of(data).name if isinstance(data, Tracer) or is_concrete_array(data) else None
    if name != "u32" and np.dtype(dtype) != np.uint32:
        raise TypeError(
            f"JAX encountered invalid PRNG key data: expected key_data.dtype = uint32; got dtype={np.dtype(dtype)}"
        )


def as_keys(data, typed: bool):
    """Key data returned the way the key came in: typed keys stay typed, raw keys raw."""
    return PRNGKeyArray(data) if typed else data
