"""jax.pure_callback and jax.experimental.io_callback: argument checks, the flat host function
(arrays in as meshjit Arrays, the returned pytree's leaves out, canonicalized as JAX does), and
the choice between calling at once (nothing traced) and staging an op that calls back when the
program runs (compiler/frontend/host_callbacks.py)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import optree

from meshjit.compiler.frontend.debug_callbacks import is_traced
from meshjit.compiler.frontend.host_callbacks import in_shard_map_body, stage_host_callback
from meshjit.compiler.frontend.numpy_api.creation import asarray
from meshjit.compiler.frontend.operands import x64
from meshjit.compiler.frontend.trace import Tracer
from meshjit.ir import TensorType
from meshjit.ir.dtypes import canonicalize, from_numpy
from meshjit.ir.ops.callbacks import call_checked
from meshjit.runtime.array import Array
from meshjit.runtime.devices import local_devices
from meshjit.runtime.executable import single_device_array
from meshjit.runtime.sharding import NamedSharding, SingleDeviceSharding
from meshjit.runtime.transfer import device_put

from .tree_util import NAMESPACE
from .tree_util import _flatten as flatten_tree

_VMAP_METHODS = ["sequential", "sequential_unrolled", "expand_dims", "broadcast_all", "legacy_vectorized", None]
_ARRAY_LEAVES = (Tracer, Array, np.ndarray, np.generic, bool, int, float, complex)


def pure_callback(callback: Callable, result_shape_dtypes, *args, sharding=None, vmap_method: str | None = None,
                  **kwargs):
    """Call the pure host function ``callback(*args, **kwargs)`` with the arguments' values and
    return its results as arrays of ``result_shape_dtypes`` (a pytree of leaves with ``shape``
    and ``dtype``), as ``jax.pure_callback``. Under jit the program calls it when it runs, once
    with the whole (gathered) value of sharded arguments, once per device inside shard_map; an
    unused call may be dropped. vmap follows ``vmap_method`` ('sequential',
    'sequential_unrolled', 'expand_dims', 'broadcast_all'); it has no derivative of its own."""
    if vmap_method not in _VMAP_METHODS:
        raise ValueError(f"vmap_method must be on of the allowed methods {_VMAP_METHODS}, but got: {vmap_method}")
    attrs = {} if vmap_method is None else {"vmap_method": vmap_method}
    return _call("pure_callback", callback, result_shape_dtypes, args, kwargs, sharding, attrs)


def io_callback(callback: Callable, result_shape_dtypes, *args, sharding=None, ordered: bool = False, **kwargs):
    """Call the impure host function ``callback(*args, **kwargs)`` as
    ``jax.experimental.io_callback``: like ``pure_callback``, but the call always runs, in
    program order (meshjit keeps every io_callback in program order, ``ordered`` or not), and
    vmap loops over the examples (an ordered one cannot be vmapped)."""
    return _call("io_callback", callback, result_shape_dtypes, args, kwargs, sharding, {"ordered": bool(ordered)})


def _call(name: str, callback: Callable, result_shape_dtypes, args, kwargs, sharding, attrs: dict):
    types, out_tree = _result_types(result_shape_dtypes)
    _check_sharding(sharding)
    leaves, in_tree = flatten_tree((args, kwargs))
    for position, leaf in enumerate(leaves):
        if not isinstance(leaf, _ARRAY_LEAVES):
            raise TypeError(f"Error interpreting argument to {name} as a JAX value. The problematic value is of "
                            f"type {type(leaf)} and was passed to {name} at position {position}.")
    flat_callback = _flat(callback, in_tree)
    if is_traced(leaves):
        results = stage_host_callback(name, flat_callback, leaves, types, attrs)
    else:
        arrays = [np.asarray(asarray(leaf)) for leaf in leaves]
        # NOTE: a SingleDeviceSharding names the device JAX runs the callback on and leaves the results on
        target = sharding if isinstance(sharding, SingleDeviceSharding) else local_devices()[0]
        results = [device_put(result, target) for result in call_checked(flat_callback, arrays, types)]
    return optree.tree_unflatten(out_tree, list(results))


def _flat(callback: Callable, in_tree):
    """The host function on flat numpy values: Arrays in, the leaves of what it returns out."""
    def flat_callback(*values):
        # NOTE: on this process's first device (JAX: its CPU device), addressable under MPI too
        host = SingleDeviceSharding(local_devices()[0])
        arrays = [single_device_array(np.array(value), host, weak_type=False) for value in values]
        call_args, call_kwargs = optree.tree_unflatten(in_tree, arrays)
        outputs = optree.tree_leaves(callback(*call_args, **call_kwargs), namespace=NAMESPACE, none_is_leaf=False)
        return [_canonical(output) for output in outputs]

    return flat_callback


def _canonical(output) -> np.ndarray:
    """A returned leaf as the array JAX makes of it: 64-bit types narrowed unless x64 is on."""
    array = np.asarray(output)
    return array.astype(canonicalize(array.dtype, x64=x64()), copy=False)


def _result_types(result_shape_dtypes) -> tuple[list[TensorType], object]:
    """The flat result types and their tree; JAX's errors for leaves that are not arrays' types."""
    leaves, tree = flatten_tree(result_shape_dtypes)
    types = []
    for leaf in leaves:
        dtype = np.dtype(leaf.dtype)
        if canonicalize(dtype, x64=x64()) != dtype:
            raise ValueError("result_shape_dtypes cannot specify 64-bit types when `jax_enable_x64` is disabled")
        types.append(TensorType(tuple(int(size) for size in leaf.shape), from_numpy(dtype)))
    return types, tree


def _check_sharding(sharding) -> None:
    """JAX's limits on ``sharding=``: one device (it says where the callback runs; meshjit's
    host functions run in the calling process), and none inside a shard_map body."""
    if sharding is None:
        return
    if in_shard_map_body():
        raise NotImplementedError("callbacks do not support specifying sharding inside spmd computations")
    scalar_mesh = isinstance(sharding, NamedSharding) and sharding.mesh.size == 1
    if not (scalar_mesh or isinstance(sharding, SingleDeviceSharding)):
        raise NotImplementedError(f"pure_callback only supports SingleDeviceSharding, but got {type(sharding)}")
