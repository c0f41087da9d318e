"""jax.numpy's remaining creation and inspection helpers: ``logspace``/``geomspace``,
``fromfunction``, the host-side readers (``frombuffer``, ``fromstring``, ``load`` and numpy's
``save``/``savez``), ``broadcast_shapes``, ``isscalar``/``iterable``, ``array_equiv``,
``einsum_path`` and numpy's print options."""

from __future__ import annotations

import operator

import numpy as np

from .. import numpy_api as jnp
from ..trace import Tracer
from .arguments import as_array_argument
from .arguments import broadcast_shapes as _broadcast_shapes
from .diagonals import indices

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "array_equiv",
    "broadcast_shapes",
    "einsum_path",
    "frombuffer",
    "fromfunction",
    "fromiter",
    "fromstring",
    "geomspace",
    "get_printoptions",
    "isscalar",
    "iterable",
    "load",
    "logspace",
    "printoptions",
    "save",
    "savez",
    "set_printoptions",
)

get_printoptions = np.get_printoptions
set_printoptions = np.set_printoptions
printoptions = np.printoptions
iterable = np.iterable
save = np.save
savez = np.savez


def logspace(start, stop, num: int = 50, endpoint: bool = True, base=10.0, dtype=None, axis: int = 0):
    """``base ** linspace(start, stop, num)``."""
    exponents = jnp.linspace(start, stop, num, endpoint=endpoint, axis=axis)
    result = jnp.power(jnp.asarray(base, dtype=exponents.dtype), exponents)
    return result if dtype is None else result.astype(dtype)


def geomspace(start, stop, num: int = 50, endpoint: bool = True, dtype=None, axis: int = 0):
    """``num`` numbers from ``start`` to ``stop`` evenly spaced on a log scale (both of one sign;
    the ends are exactly ``start`` and ``stop``)."""
    start, stop = jnp.asarray(start), jnp.asarray(stop)
    if not isinstance(start, Tracer) and bool(jnp.any(start == 0)) or (
            not isinstance(stop, Tracer) and bool(jnp.any(stop == 0))):
        raise ValueError("geomspace: neither start nor stop can be zero")
    sign = jnp.sign(start)
    result = sign * logspace(jnp.log10(start / sign), jnp.log10(stop / sign), num, endpoint=endpoint, axis=axis)
    if num > 0:
        result = result.at[0].set(start)
    if num > 1 and endpoint:
        result = result.at[-1].set(stop)
    return result if dtype is None else result.astype(dtype)


def fromfunction(function, shape, *, dtype=float, **kwargs):
    """``function`` called with one index grid per axis of ``shape`` (elementwise functions give
    numpy's result)."""
    shape = tuple(operator.index(size) for size in shape)
    return function(*indices(shape, dtype=dtype), **kwargs) if shape else function(**kwargs)


def frombuffer(buffer, dtype=float, count: int = -1, offset: int = 0):
    """An array of the bytes of a host ``buffer`` read as ``dtype``."""
    return jnp.asarray(np.frombuffer(buffer, dtype=dtype, count=count, offset=offset))


def fromstring(string, dtype=float, count: int = -1, *, sep: str):
    """An array of the numbers in the text ``string`` separated by ``sep``."""
    return jnp.asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def fromiter(*args, **kwargs):
    """Not offered, as in JAX: consuming an iterator is a side effect a trace would repeat."""
    raise NotImplementedError(
        "jnp.fromiter() is not implemented because it may be non-pure and thus unsafe for use with "
        "JIT and other JAX transformations. Consider using jnp.asarray(np.fromiter(...)) instead.")


def load(file, *args, **kwargs):
    """numpy's ``load``; a single array comes back as a device array."""
    result = np.load(file, *args, **kwargs)
    if isinstance(result, np.ndarray) and result.dtype != object:
        return jnp.asarray(result)
    return result


def broadcast_shapes(*shapes):
    """The shape the given shapes broadcast to."""
    if not shapes:
        return ()
    shapes = [(shape,) if isinstance(shape, int) else tuple(shape) for shape in shapes]
    return tuple(_broadcast_shapes("broadcast_shapes", *shapes))


def isscalar(element) -> bool:
    """True for Python and numpy scalars and for 0-d arrays."""
    if np.isscalar(element):
        return True
    if isinstance(element, (np.ndarray, Tracer)) or hasattr(element, "__jax_array__") or hasattr(element, "sharding"):
        return np.ndim(element) == 0 if not isinstance(element, Tracer) else element.ndim == 0
    return False


def array_equiv(a1, a2) -> object:
    """True when the two arrays broadcast together and are equal everywhere."""
    a1, a2 = jnp.asarray(as_array_argument(a1, "array_equiv")), jnp.asarray(as_array_argument(a2, "array_equiv"))
    try:
        _broadcast_shapes("array_equiv", a1.shape, a2.shape)
    except ValueError:
        return jnp.asarray(False)
    return jnp.all(jnp.equal(a1, a2))


def einsum_path(subscripts, *operands, optimize="auto"):
    """The pairwise contraction order numpy's optimiser picks for these operand shapes, and its
    report (meshjit's ``einsum`` contracts pairwise in its own order)."""
    if optimize is True or optimize == "auto":
        # as opt_einsum's "auto": the exhaustive search for a few operands, greedy beyond
        optimize = "optimal" if len(operands) <= 4 else "greedy"
    stand_ins = [np.broadcast_to(np.zeros((), np.asarray(operand).dtype if not isinstance(operand, Tracer)
                                          else np.float32), np.shape(operand)) for operand in operands]
    path, report = np.einsum_path(subscripts, *stand_ins, optimize=optimize)
    return path[1:], report
