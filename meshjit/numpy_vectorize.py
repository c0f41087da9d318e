"""jax.numpy's ``vectorize``, ``apply_along_axis`` and ``apply_over_axes``: Python functions
mapped over array axes with ``meshjit.vmap`` (so they trace once, not once per element)."""

from __future__ import annotations

import functools
import re

import numpy as np

from meshjit.compiler.frontend import numpy_api as _jnp
from meshjit.compiler.frontend.numpy_api.arguments import normalize_axis

from .vmap_api import vmap

_DIMENSIONS = r"\w+"
_CORE = rf"(?:{_DIMENSIONS}(?:,{_DIMENSIONS})*)?"
_ARGUMENT = rf"\({_CORE}\)"
_SIGNATURE = rf"^{_ARGUMENT}(?:,{_ARGUMENT})*->{_ARGUMENT}(?:,{_ARGUMENT})*$"


def _parse_signature(signature: str):
    """The core dimension names of each input and output of a gufunc signature."""
    signature = signature.replace(" ", "")
    if not re.match(_SIGNATURE, signature):
        raise ValueError(f"not a valid gufunc signature: {signature}")
    inputs, outputs = signature.split("->")
    parse = lambda part: [tuple(re.findall(_DIMENSIONS, group)) for group in re.findall(_ARGUMENT, part)]  # noqa: E731
    return parse(inputs), parse(outputs)


def _core_sizes(arrays, core_dims) -> dict:
    sizes = {}
    for array, dims in zip(arrays, core_dims):
        if array.ndim < len(dims):
            raise ValueError(f"input with shape {array.shape} does not have enough dimensions for its "
                             f"core dimensions {dims}")
        for name, size in zip(dims, array.shape[array.ndim - len(dims):]):
            if sizes.setdefault(name, size) != size:
                raise ValueError(f"inconsistent size for core dimension {name!r}: {size} vs {sizes[name]}")
    return sizes


def _mapped(function, arrays, core_dims):
    """``function`` applied over the broadcast loop dimensions of ``arrays`` (flattened to one
    vmapped axis), with the loop shape restored on each output."""
    loop_shapes = [array.shape[: array.ndim - len(dims)] for array, dims in zip(arrays, core_dims)]
    loop = np.broadcast_shapes(*loop_shapes) if loop_shapes else ()
    count = int(np.prod(loop))
    flat = [_jnp.reshape(_jnp.broadcast_to(array, loop + array.shape[array.ndim - len(dims):]),
                         (count,) + array.shape[array.ndim - len(dims):]) for array, dims in zip(arrays, core_dims)]
    outputs = vmap(function)(*flat) if count else function(*[array[:0] for array in flat])
    single = not isinstance(outputs, tuple)
    outputs = (outputs,) if single else outputs
    shaped = tuple(_jnp.reshape(output, loop + output.shape[1:]) for output in outputs)
    return shaped[0] if single else shaped


class vectorize:  # noqa: N801 - numpy's name
    """``pyfunc`` applied elementwise (or over the core dimensions of ``signature``) with numpy
    broadcasting; arguments named in ``excluded`` pass through unmapped."""

    def __init__(self, pyfunc, *, excluded=frozenset(), signature=None):
        self.pyfunc = pyfunc
        self.excluded = frozenset(excluded)
        self.signature = signature
        functools.update_wrapper(self, pyfunc)

    def __call__(self, *args, **kwargs):
        excluded_kwargs = {key: value for key, value in kwargs.items() if key in self.excluded}
        mapped_kwargs = {key: value for key, value in kwargs.items() if key not in self.excluded}
        positions = [index for index in range(len(args)) if index not in self.excluded]
        names = list(mapped_kwargs)
        arrays = [_jnp.asarray(args[index]) for index in positions] + [_jnp.asarray(mapped_kwargs[n]) for n in names]

        def call(*values):
            full = list(args)
            for index, value in zip(positions, values):
                full[index] = value
            keywords = dict(excluded_kwargs, **dict(zip(names, values[len(positions):])))
            return self.pyfunc(*full, **keywords)

        if self.signature is None:
            core_dims = [()] * len(arrays)
        else:
            core_dims, _ = _parse_signature(self.signature)
            if len(core_dims) != len(arrays):
                raise TypeError(f"wrong number of positional arguments: expected {len(core_dims)}, got {len(arrays)}")
            _core_sizes(arrays, core_dims)
        return _mapped(call, arrays, core_dims)


def apply_along_axis(func1d, axis: int, arr, *args, **kwargs):
    """``func1d`` applied to each 1-d slice of ``arr`` along ``axis``; the slice's result takes
    the place of that axis."""
    arr = _jnp.asarray(arr)
    axis = normalize_axis(axis, arr.ndim, "apply_along_axis")
    moved = _jnp.moveaxis(arr, axis, -1)
    result = _mapped(lambda row: func1d(row, *args, **kwargs), [moved], [("n",)])
    result = _jnp.asarray(result)
    loop_rank = arr.ndim - 1
    out_rank = result.ndim - loop_rank
    order = list(range(axis)) + list(range(loop_rank, loop_rank + out_rank)) + list(range(axis, loop_rank))
    return _jnp.transpose(result, order)


def apply_over_axes(func, a, axes):
    """``func(a, axis)`` applied for each axis in turn, keeping the array's rank."""
    a = _jnp.asarray(a)
    for axis in ([axes] if np.ndim(axes) == 0 else axes):
        result = func(a, axis)
        if result.ndim == a.ndim - 1:
            result = _jnp.expand_dims(result, axis)
        elif result.ndim != a.ndim:
            raise ValueError("function is not returning an array of the correct shape")
        a = result
    return a
