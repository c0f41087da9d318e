"""Running a per-device program on Arrays: shards in, shards out, all local devices at once.

Until the kernel compiler lands, the per-device module runs through the IR's reference
interpreter over the stacked device axis (every device's copy in lockstep, collectives as
array operations across that axis).
"""

from __future__ import annotations

import numpy as np

from meshjit.ir import Module, interpret

from .array import Array, index_key
from .sharding import Sharding
from .transfer import to_numpy, shard_numpy


def stack_shards(value, sharding: Sharding) -> np.ndarray:
    """The shards of ``value`` for every device of ``sharding`` in its device order, stacked.

    An Array already laid out equivalently gives its own blocks without copying the data
    twice; anything else is laid out first.
    """
    ndim = np.ndim(value) if not isinstance(value, Array) else value.ndim
    if not (isinstance(value, Array) and value.sharding.is_equivalent_to(sharding, ndim)):
        host, weak = to_numpy(value)
        value = shard_numpy(host, sharding, weak_type=weak)
    own_order = value.sharding._addressable_device_assignment
    rows = [value._block_of_device[own_order.index(device)] for device in sharding._addressable_device_assignment]
    return value._blocks[rows]


def array_from_stack(stacked: np.ndarray, sharding: Sharding, shape, *, weak_type: bool = False) -> Array:
    """An Array from per-device shards stacked in ``sharding``'s device order; replicas share
    the block of the first device that holds them."""
    indices = sharding.devices_indices_map(tuple(shape))
    rows, row_of_key, block_of_device = [], {}, []
    for position, device in enumerate(sharding._addressable_device_assignment):
        key = index_key(indices[device])
        if key not in row_of_key:
            row_of_key[key] = len(rows)
            rows.append(position)
        block_of_device.append(row_of_key[key])
    blocks = np.ascontiguousarray(stacked[rows])
    blocks.flags.writeable = False
    return Array(shape, stacked.dtype, sharding, blocks, block_of_device, weak_type=weak_type)


def run_spmd(module: Module, arguments, arg_shardings, result_shardings, result_shapes, weak_types) -> list[Array]:
    """Run the partitioned ``module`` on ``arguments`` laid out as ``arg_shardings``."""
    stacked = [stack_shards(value, sharding) for value, sharding in zip(arguments, arg_shardings)]
    outputs = interpret(module, *stacked)
    return [array_from_stack(np.asarray(output), sharding, shape, weak_type=weak)
            for output, sharding, shape, weak in zip(outputs, result_shardings, result_shapes, weak_types)]
