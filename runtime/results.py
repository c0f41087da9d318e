"""A program result's Arrays, made on every call from fields worked out once per Executable.

``ResultMemo`` keeps, per result position, the Array fields the last call's buffer gave (shape,
dtype, sharding, block map, commitment, weak type); a call whose buffer has the same shape and
dtype makes its Array from them (``ArrayTemplate.make``) instead of re-deriving and re-checking
them. The state is one tuple, replaced whole, so concurrent calls never see half an update.
"""

from __future__ import annotations

import math

import numpy as np

from .array import Array, ArrayTemplate
from .sharding import Sharding

_BLOCK_MAP_CACHE: dict = {}


def block_of_device(mesh_shape, lead_shape) -> list[int]:
    """Per device in mesh order, which of a buffer's blocks it holds (a buffer with size-1
    leading dims stores a replica once)."""
    key = (tuple(mesh_shape), tuple(lead_shape))
    cached = _BLOCK_MAP_CACHE.get(key)
    if cached is None:
        positions = np.arange(int(np.prod(lead_shape, dtype=int))).reshape(lead_shape)
        cached = _BLOCK_MAP_CACHE[key] = np.broadcast_to(positions, tuple(mesh_shape)).ravel().tolist()
    return cached


class ResultMemo:
    """One result position of an Executable: ``sharded_array(buffer)`` for a plan over a mesh,
    ``one_device_array(output, arguments)`` for a one-device plan."""

    __slots__ = ("sharding", "shape", "weak_type", "mesh_shape", "committed", "state")

    def __init__(self, sharding: Sharding, shape, weak_type: bool, mesh_shape, committed: bool = True):
        self.sharding = sharding
        self.shape = tuple(shape)
        self.weak_type = weak_type
        self.mesh_shape = tuple(mesh_shape)
        self.committed = committed
        self.state = None

    def sharded_array(self, buffer: np.ndarray) -> Array:
        """The Array whose blocks are the buffer's distinct shards, shared by the devices that
        hold them."""
        state = self.state
        if state is None or state[0] != buffer.shape or state[1] is not buffer.dtype:
            state = self.state = self._sharded_state(buffer)
        blocks = np.ascontiguousarray(buffer)
        if state[2] is not None:
            blocks = blocks.reshape(state[2])
        blocks.setflags(write=False)
        return state[3].make(blocks, None)

    def _sharded_state(self, buffer: np.ndarray) -> tuple:
        lead = len(self.mesh_shape)
        # NOTE: the block count is spelled out: reshape cannot infer -1 when a block is empty
        blocks_shape = (math.prod(buffer.shape[:lead]),) + buffer.shape[lead:]
        template = ArrayTemplate(self.shape, buffer.dtype, self.sharding,
                                 block_of_device(self.mesh_shape, buffer.shape[:lead]),
                                 committed=True, weak_type=self.weak_type)
        # NOTE: over one mesh axis the buffer is the blocks as it is (None: no reshape)
        return (buffer.shape, buffer.dtype, None if blocks_shape == buffer.shape else blocks_shape, template)

    def one_device_array(self, output, arguments) -> Array:
        """The Array of a one-device result on this memo's SingleDeviceSharding: a result array
        the plan made itself becomes the block as it is; one that may share memory with an
        argument (a user's numpy array must never turn read-only or alias an Array) is copied."""
        if type(output) is not np.ndarray or output.base is not None or _is_one_of(output, arguments):
            output = np.array(output)
        output.setflags(write=False)
        state = self.state
        if state is None or state[0] != output.shape or state[1] is not output.dtype:
            template = ArrayTemplate(output.shape, output.dtype, self.sharding, (0,), committed=self.committed,
                                     weak_type=self.weak_type)
            state = self.state = (output.shape, output.dtype, template)
        return state[2].make(output[np.newaxis], output)


def _is_one_of(value, values) -> bool:
    for candidate in values:
        if candidate is value:
            return True
    return False
