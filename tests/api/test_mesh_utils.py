"""``jax.experimental.mesh_utils``: device arrays in JAX 0.10.2's layout for CPU devices and its
errors (checked side by side)."""

from dataclasses import dataclass

import numpy as np
import pytest

import meshjit as jax
from meshjit.experimental import mesh_utils
from meshjit.sharding import Mesh


def _ids(mesh):
    return np.vectorize(lambda device: device.id)(mesh).tolist()


def test_create_device_mesh_reshapes_the_devices_in_order():
    mesh = mesh_utils.create_device_mesh((2, 4))
    assert isinstance(mesh, np.ndarray) and mesh.dtype == object
    assert _ids(mesh) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert _ids(mesh_utils.create_device_mesh([4], devices=jax.devices()[:4])) == [0, 1, 2, 3]
    assert _ids(mesh_utils.create_device_mesh((2, 4), devices=jax.devices()[::-1])) == [[7, 6, 5, 4], [3, 2, 1, 0]]
    assert Mesh(mesh, ("a", "b")).shape == {"a": 2, "b": 4}


@pytest.mark.parametrize("shape", [(3,), (2, 2)])
def test_a_shape_that_does_not_hold_the_devices_is_jaxs_value_error(shape):
    with pytest.raises(ValueError) as caught:
        mesh_utils.create_device_mesh(shape)
    assert str(caught.value) == f"Number of devices 8 must equal the product of mesh_shape {shape}"


def test_hybrid_mesh_over_one_process():
    assert _ids(mesh_utils.create_hybrid_device_mesh((2, 4), (1, 1), process_is_granule=True)) == [
        [0, 1, 2, 3], [4, 5, 6, 7]]
    with pytest.raises(ValueError, match=r"Number of slices 1 must equal the product of dcn_mesh_shape \(2, 1\)"):
        mesh_utils.create_hybrid_device_mesh((2, 2), (2, 1), process_is_granule=True)
    with pytest.raises(ValueError, match="does not have attribute slice_index. See `process_is_granule` option."):
        mesh_utils.create_hybrid_device_mesh((2, 4), (1, 1))


@dataclass(frozen=True)
class _Device:
    id: int
    process_index: int


def test_hybrid_mesh_puts_each_process_block_side_by_side():
    devices = [_Device(i, i // 4) for i in range(8)]  # two processes of four devices
    mesh = mesh_utils.create_hybrid_device_mesh((2, 2), (1, 2), devices, process_is_granule=True)
    assert _ids(mesh) == [[0, 1, 4, 5], [2, 3, 6, 7]]
    mesh = mesh_utils.create_hybrid_device_mesh((2, 2), (2, 1), devices[::-1], process_is_granule=True)
    assert _ids(mesh) == [[3, 2], [1, 0], [7, 6], [5, 4]]
