"""DLPack exchange with other array libraries: ``from_dlpack`` reads any producer's host memory
(numpy, torch, JAX, ...) into an Array, sharing it when no copy or conversion is needed."""

from __future__ import annotations

import numpy as np

from meshjit.ir.config import config
from meshjit.ir.dtypes import canonicalize

from .array import Array
from .devices import devices as all_devices
from .sharding import SingleDeviceSharding
from .transfer import device_put


def from_dlpack(x, /, *, device=None, copy: bool | None = None) -> Array:
    """An Array of the DLPack producer ``x``'s data. With ``copy`` None or False and no
    ``device``, a C-contiguous host buffer of a canonical dtype is shared, not copied (the
    Array is read-only; the producer must not write to the buffer afterwards)."""
    if isinstance(x, Array):
        return device_put(x, device) if device is not None else (_copied(x) if copy else x)
    try:
        host = np.from_dlpack(x) if copy is None else np.from_dlpack(x, copy=copy)
    except (AttributeError, TypeError) as error:
        raise TypeError(f"from_dlpack: argument x of type {type(x).__name__} is not a DLPack producer "
                        f"(it needs __dlpack__ and __dlpack_device__): {error}") from None
    canonical = canonicalize(host.dtype, x64=config.read("jax_enable_x64"))
    if device is None and canonical == host.dtype and host.flags.c_contiguous and host.flags.aligned:
        return _shared(host)
    if copy is False:
        raise BufferError(f"from_dlpack: copy=False, but the data of dtype {host.dtype} needs a copy to "
                          f"become an Array (of dtype {canonical}, C-contiguous, on {device})")
    return device_put(host, device)


def _shared(host: np.ndarray) -> Array:
    """An uncommitted single-device Array whose one block is a read-only view of ``host``."""
    block = host[np.newaxis]
    block.flags.writeable = False
    return Array(host.shape, host.dtype, SingleDeviceSharding(all_devices()[0]), block, [0],
                 committed=False, weak_type=False)


def _copied(array: Array) -> Array:
    return device_put(np.array(array), array.sharding if array.committed else None)
