"""``jax.experimental.mesh_utils``: arrays of devices shaped for ``Mesh``.

meshjit's devices are CPU devices without a physical topology, so a mesh is the devices in the
order given, reshaped; a hybrid mesh puts one such mesh per process (the "granule" of the slow
network, as JAX's ``process_is_granule=True``) side by side along each dim."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from meshjit.runtime.devices import devices as _all_devices

__all__ = ["create_device_mesh", "create_hybrid_device_mesh"]


def create_device_mesh(mesh_shape: Sequence[int], devices: Sequence | None = None, *,
                       contiguous_submeshes: bool = False,
                       allow_split_physical_axes: bool = False) -> np.ndarray:
    """``devices`` (all devices by default) as an array of shape ``mesh_shape``, in their order.
    The two flags choose between physical layouts on TPUs; without a topology they change
    nothing."""
    devices = list(_all_devices() if devices is None else devices)
    mesh_shape = tuple(mesh_shape)
    if math.prod(mesh_shape) != len(devices):
        raise ValueError(f"Number of devices {len(devices)} must equal the product of mesh_shape {mesh_shape}")
    mesh = np.empty(len(devices), dtype=object)
    mesh[:] = devices
    return mesh.reshape(mesh_shape)


def create_hybrid_device_mesh(mesh_shape: Sequence[int], dcn_mesh_shape: Sequence[int],
                              devices: Sequence | None = None, *, process_is_granule: bool = False,
                              should_sort_granules_by_key: bool = True,
                              allow_split_physical_axes: bool = False) -> np.ndarray:
    """A mesh of shape ``mesh_shape * dcn_mesh_shape`` (elementwise): the granules (processes)
    laid out as ``dcn_mesh_shape``, each holding a ``mesh_shape`` mesh of its own devices."""
    devices = list(_all_devices() if devices is None else devices)
    attribute = "process_index" if process_is_granule else "slice_index"
    if not devices or not hasattr(devices[0], attribute):
        first = devices[0] if devices else None
        raise ValueError(f"Device {first} does not have attribute {attribute}. See `process_is_granule` option.")
    granules: dict = {}
    for device in devices:
        granules.setdefault(getattr(device, attribute), []).append(device)
    keys = sorted(granules) if should_sort_granules_by_key else list(granules)
    if math.prod(dcn_mesh_shape) != len(keys):
        raise ValueError(f"Number of slices {len(keys)} must equal the product of dcn_mesh_shape {dcn_mesh_shape}")
    inner = [create_device_mesh(mesh_shape, granules[key]) for key in keys]
    return _tile_blocks(inner, tuple(mesh_shape), tuple(dcn_mesh_shape))


def _tile_blocks(blocks: list[np.ndarray], block_shape: tuple, grid_shape: tuple) -> np.ndarray:
    """The ``blocks`` (in row-major order over ``grid_shape``) joined into one array whose dim
    ``d`` has ``grid_shape[d] * block_shape[d]`` entries."""
    if len(block_shape) != len(grid_shape):
        raise ValueError(f"mesh_shape {block_shape} and dcn_mesh_shape {grid_shape} must have the same length")
    grid = np.empty(grid_shape + block_shape, dtype=object)
    for position, block in zip(np.ndindex(*grid_shape), blocks):
        grid[position] = block
    rank = len(block_shape)
    interleaved = [axis for pair in zip(range(rank), range(rank, 2 * rank)) for axis in pair]
    joined = tuple(outer * inner for outer, inner in zip(grid_shape, block_shape))
    return grid.transpose(interleaved).reshape(joined)
