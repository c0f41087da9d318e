"""meshjit.experimental.maps: the legacy ``with maps.mesh(devices, axis_names):`` context.

``mesh`` also takes a mesh shape in place of the devices (``mesh(global_mesh.shape, names)``, as
the GlobalDeviceArray docs write it): the mesh is then built from the first devices in order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from meshjit.runtime.devices import devices as all_devices
from meshjit.runtime.mesh import Mesh as Mesh


def _is_shape(devices) -> bool:
    if isinstance(devices, Mapping):
        return True
    if isinstance(devices, np.ndarray) and devices.dtype != object:
        return devices.ndim == 1
    return isinstance(devices, (tuple, list)) and len(devices) > 0 and all(
        isinstance(size, (int, np.integer)) and not isinstance(size, bool) for size in devices)


def _mesh_of_shape(shape, axis_names) -> Mesh:
    names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
    if isinstance(shape, Mapping):
        if tuple(shape) != names:
            raise ValueError(f"mesh: the shape {dict(shape)} names axes {tuple(shape)}, but "
                             f"axis_names is {names}")
        shape = tuple(shape.values())
    sizes = tuple(int(size) for size in shape)
    if any(size < 1 for size in sizes):
        raise ValueError(f"mesh: mesh shape {sizes} must have positive sizes")
    pool = all_devices()
    if math.prod(sizes) > len(pool):
        raise ValueError(f"mesh: mesh shape {sizes} needs {math.prod(sizes)} devices, but "
                         f"{len(pool)} exist")
    grid = np.empty(math.prod(sizes), dtype=object)
    grid[:] = pool[:math.prod(sizes)]
    return Mesh(grid.reshape(sizes), names)


class mesh:  # JAX's name, kept for ported code
    """``with mesh(devices, axis_names) as m:`` makes ``Mesh(devices, axis_names)`` the mesh of
    pjit; ``devices`` may also be a mesh shape (a tuple of sizes or ``Mesh.shape``)."""

    def __init__(self, devices, axis_names):
        if _is_shape(devices):
            self.mesh = _mesh_of_shape(devices, axis_names)
        else:
            self.mesh = Mesh(devices, axis_names)

    def __enter__(self) -> Mesh:
        return self.mesh.__enter__()

    def __exit__(self, *exc_info) -> None:
        self.mesh.__exit__(*exc_info)
