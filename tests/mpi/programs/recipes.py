"""The multi-process recipes: seed 001's make_array_from_single_device_arrays examples run
verbatim (with ``jax`` meaning meshjit), make_array_from_process_local_data, and the
multihost_utils exchanges, each checked against the value it must give on any process count."""

from __future__ import annotations

import sys

import numpy as np

import meshjit
import meshjit.sharding
from meshjit.experimental import multihost_utils
from meshjit.sharding import Mesh, NamedSharding
from meshjit.sharding import PartitionSpec as P

# Seed 001, both examples, as written there (prompts removed).
SEED_001 = '''
import math
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P
import numpy as np

mesh_rows = 2
mesh_cols =  jax.device_count() // 2

global_shape = (8, 8)
mesh = Mesh(np.array(jax.devices()).reshape(mesh_rows, mesh_cols), ('x', 'y'))
sharding = jax.sharding.NamedSharding(mesh, P('x', 'y'))
inp_data = np.arange(math.prod(global_shape)).reshape(global_shape)

arrays = [
   jax.device_put(inp_data[index], d)
       for d, index in sharding.addressable_devices_indices_map(global_shape).items()]

arr = jax.make_array_from_single_device_arrays(global_shape, sharding, arrays)
assert arr.shape == (8,8) # arr.shape is (8,8) regardless of jax.device_count()

sharding = jax.sharding.NamedSharding(mesh, P(('x', 'y'),))
rows_per_device = 2
feature_length = 32
per_device_shape = (rows_per_device, feature_length)
per_host_shape = (rows_per_device * len(mesh.local_devices), feature_length)
per_host_generator = lambda : np.arange(np.prod(per_host_shape)).reshape(per_host_shape)
per_host_data = per_host_generator() # replace with your own per-host data pipeline that outputs numpy arrays

global_shape = (rows_per_device * len(sharding.device_set), ) + per_device_shape[1:]
per_device_data = np.split(per_host_data, len(mesh.local_devices), axis = 0) # per device data, but on host
per_device_data_on_device = jax.device_put(per_device_data, mesh.local_devices) # per device data, now on device
output_global_array = jax.make_array_from_single_device_arrays(global_shape, sharding, per_device_data_on_device)

assert output_global_array.addressable_data(0).shape == per_device_shape
assert output_global_array.shape == global_shape
'''


def _gathered(array) -> np.ndarray:
    """The whole value of a global Array on any process count (one process gives it stacked)."""
    value = multihost_utils.process_allgather(array)
    return value[0] if array.is_fully_addressable else value


def seed_001() -> None:
    sys.modules["jax"], sys.modules["jax.sharding"] = meshjit, meshjit.sharding
    namespace = {"jax": meshjit}
    exec(SEED_001, namespace)
    np.testing.assert_array_equal(_gathered(namespace["arr"]), namespace["inp_data"])
    # every host made the same per-host rows, so the global array is them once per process
    expected = np.concatenate([namespace["per_host_data"]] * meshjit.process_count())
    np.testing.assert_array_equal(_gathered(namespace["output_global_array"]), expected)


def process_local_data() -> None:
    """Each process passes only the rows (or the block) of its own devices."""
    devices = np.array(meshjit.devices())
    cases = ((Mesh(devices.reshape(8), ("x",)), P("x")), (Mesh(devices.reshape(2, 4), ("x", "y")), P("x", "y")))
    whole = np.arange(16 * 8, dtype=np.float32).reshape(16, 8)
    for mesh, spec in cases:
        sharding = NamedSharding(mesh, spec)
        indices = sharding.addressable_devices_indices_map(whole.shape).values()
        rows = sorted({row for index in indices for row in range(*index[0].indices(16))})
        columns = sorted({column for index in indices for column in range(*index[1].indices(8))})
        local = whole[np.ix_(rows, columns)]
        array = meshjit.make_array_from_process_local_data(sharding, local, whole.shape)
        np.testing.assert_array_equal(_gathered(array), whole)
        total = meshjit.jit(lambda value: value.sum(axis=0))(array)
        np.testing.assert_array_equal(_gathered(total), whole.sum(axis=0))


def exchanges() -> None:
    """process_allgather (stacked and tiled), broadcast_one_to_all, assert_equal."""
    me, count = meshjit.process_index(), meshjit.process_count()
    mine = np.full((2,), me, np.int32)
    stacked = multihost_utils.process_allgather({"value": mine, "scalar": me})
    np.testing.assert_array_equal(stacked["value"], np.repeat(np.arange(count), 2).reshape(count, 2))
    np.testing.assert_array_equal(stacked["scalar"], np.arange(count))
    tiled = multihost_utils.process_allgather(mine, tiled=True)
    np.testing.assert_array_equal(tiled, np.repeat(np.arange(count), 2))
    broadcast = multihost_utils.broadcast_one_to_all(mine + 5)
    np.testing.assert_array_equal(broadcast, np.full((2,), 5))
    multihost_utils.assert_equal({"same": np.arange(3)})


def run_all() -> None:
    seed_001()
    process_local_data()
    exchanges()
