"""``mpiexec -n 2 python faults.py MODE``: a job where something goes wrong on one process.

- ``raise``: process 1 raises while process 0 waits in a cross-process all_reduce; the whole
  job must stop with process 1's error shown.
- ``deadlock``: process 1 never reaches the all_reduce; process 0 must raise a
  CollectiveTimeoutError naming process 1 (run with a short MESHJIT_COLLECTIVE_TIMEOUT).
- ``mismatch``: the processes reach barriers of different names; both must say so.
"""

from __future__ import annotations

import sys
import time

import numpy as np

import meshjit as jax
import meshjit.numpy as jnp
from meshjit.experimental import multihost_utils
from meshjit.sharding import Mesh, NamedSharding
from meshjit.sharding import PartitionSpec as P

jax.distributed.initialize()


def cross_process_sum():
    mesh = Mesh(np.array(jax.devices()), ("x",))
    values = jax.device_put(np.arange(8.0 * len(jax.devices())), NamedSharding(mesh, P("x")))
    return jax.jit(jnp.sum)(values)


def main(mode: str) -> None:
    me = jax.process_index()
    if mode == "raise":
        if me == 1:
            time.sleep(0.5)  # NOTE: let process 0 get into the collective first
            raise ValueError("process 1 failed on purpose")
        cross_process_sum()
    elif mode == "deadlock":
        if me == 1:
            time.sleep(120)
        cross_process_sum()
    elif mode == "mismatch":
        multihost_utils.sync_global_devices(f"barrier of process {me}")
    raise SystemExit(f"process {me} got past the fault in mode {mode!r}")


if __name__ == "__main__":
    main(sys.argv[1])
