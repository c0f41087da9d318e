"""``mpiexec -n P python run_cases.py OUTPUT.npz``: join the job, run every case of cases.py and
the multi-process recipes of seed 001, check each result's shards against its gathered value,
and write the gathered results (process 0) for tests/mpi/test_mpi.py to compare.

Every process gets 8 / P devices (MESHJIT_NUM_DEVICES), so the meshes are the same for any P.
"""

from __future__ import annotations

import os
import sys

import numpy as np

import meshjit as jax

os.environ.setdefault("MESHJIT_NUM_DEVICES", "8")
jax.distributed.initialize()

import cases  # noqa: E402  (the cases build meshes, which needs the devices of the job)
import recipes  # noqa: E402

from meshjit.experimental import multihost_utils  # noqa: E402


def check_shards(name: str, array, value: np.ndarray) -> None:
    """Every shard this process holds is the gathered value at its index."""
    assert array.is_fully_addressable == (jax.process_count() == 1), f"{name}: is_fully_addressable"
    for shard in array.addressable_shards:
        assert shard.device.process_index == jax.process_index(), f"{name}: shard on another process"
        np.testing.assert_array_equal(np.asarray(shard.data), value[shard.index], err_msg=name)


def main(output_path: str) -> None:
    assert jax.device_count() == cases.DEVICE_COUNT, jax.devices()
    assert jax.local_device_count() == cases.DEVICE_COUNT // jax.process_count()
    results = {}
    for case in cases.CASES.values():
        for name, array in case().items():
            value = multihost_utils.process_allgather(array)
            if array.is_fully_addressable:
                value = value[0]  # NOTE: as JAX, process-local arrays come back stacked per process
            check_shards(name, array, value)
            results[name] = value
    recipes.run_all()
    multihost_utils.sync_global_devices("cases done")
    if jax.process_index() == 0:
        np.savez(output_path, **results)


if __name__ == "__main__":
    main(sys.argv[1])
