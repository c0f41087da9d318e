"""jax.numpy's index-expression helpers: ``mgrid``/``ogrid`` (dense and open grids from slices),
``r_``/``c_`` (concatenation by indexing) and numpy's own ``s_``/``index_exp``.

A slice ``start:stop:step`` becomes ``arange``; an imaginary step ``n*1j`` means ``n`` points
from start to stop inclusive (``linspace``), as in numpy."""

from __future__ import annotations

import numpy as np

from .. import numpy_api as jnp
from .stacking import atleast_1d

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "c_",
    "index_exp",
    "mgrid",
    "ogrid",
    "r_",
    "s_",
)

s_ = np.s_
index_exp = np.index_exp


def _range(item: slice):
    """The 1-d array a slice stands for."""
    start = 0 if item.start is None else item.start
    step = 1 if item.step is None else item.step
    if isinstance(step, complex):
        return jnp.linspace(start, item.stop, int(abs(step)))
    return jnp.arange(start, item.stop, step)


class _Grid:
    """``mgrid[...]``/``ogrid[...]``: one index array per slice, dense or broadcastable."""

    def __init__(self, sparse: bool, name: str):
        self.sparse = sparse
        self.name = name

    def __getitem__(self, key):
        if isinstance(key, slice):
            return _range(key)
        ranges = [_range(item) for item in key]
        if not ranges:
            return jnp.zeros((0,)) if not self.sparse else []
        dtype = jnp.result_type(*[r.dtype for r in ranges])
        grids = jnp.meshgrid(*[r.astype(dtype) for r in ranges], indexing="ij", sparse=self.sparse)
        return list(grids) if self.sparse else jnp.stack(grids)

    def __repr__(self) -> str:
        return f"meshjit.numpy.{self.name}"


mgrid = _Grid(sparse=False, name="mgrid")
ogrid = _Grid(sparse=True, name="ogrid")


def _directive(text: str):
    """numpy's ``"axis[,ndmin[,trans1d]]"`` string at the front of an ``r_``/``c_`` key."""
    try:
        numbers = [int(part) for part in text.split(",")]
    except ValueError:
        raise ValueError(f"could not understand directive {text!r}") from None
    if len(numbers) > 3:
        raise ValueError(f"could not understand directive {text!r}")
    return numbers + [None] * (3 - len(numbers))


class _Concatenator:
    """``r_[...]``/``c_[...]``: the items (slices become ranges) concatenated along an axis."""

    def __init__(self, axis: int, ndmin: int, trans1d: int, name: str):
        self.defaults = (axis, ndmin, trans1d)
        self.name = name

    def _shaped(self, item, ndmin: int, trans1d: int):
        value = _range(item) if isinstance(item, slice) else atleast_1d(jnp.asarray(item))
        if value.ndim >= ndmin:
            return value
        missing = ndmin - value.ndim
        value = jnp.reshape(value, (1,) * missing + value.shape)
        if trans1d != -1:
            # numpy: the original axes move to start at position trans1d of the new ones
            start = trans1d + missing + 1 if trans1d < 0 else trans1d
            axes = list(range(ndmin))
            value = jnp.transpose(value, axes[:start] + axes[missing:] + axes[start:missing])
        return value

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d = self.defaults
        if key and isinstance(key[0], str) and key[0] in ("r", "c"):
            # a matrix directive: the usual result, a 1-d one as a row ("r") or a column ("c")
            result = self[key[1:]]
            if result.ndim != 1:
                return result
            return jnp.reshape(result, (1, -1) if key[0] == "r" else (-1, 1))
        if key and isinstance(key[0], str):
            parsed = _directive(key[0])
            axis = parsed[0]
            ndmin = ndmin if parsed[1] is None else parsed[1]
            trans1d = trans1d if parsed[2] is None else parsed[2]
            key = key[1:]
        parts = [self._shaped(item, ndmin, trans1d) for item in key]
        if not parts:
            return jnp.zeros((0,))
        return jnp.concatenate(parts, axis=axis)

    def __len__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return f"meshjit.numpy.{self.name}"


r_ = _Concatenator(0, 1, -1, "r_")
c_ = _Concatenator(-1, 2, 0, "c_")
