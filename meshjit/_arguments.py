"""What jit knows of one argument, and which pytree leaves are shardings."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from meshjit.compiler.frontend.operands import dtype_of
from meshjit.compiler.frontend.trace import Tracer
from meshjit.ir import TensorType
from meshjit.runtime.array import Array
from meshjit.runtime.partition_spec import PartitionSpec
from meshjit.runtime.sharding import AUTO, Sharding


def is_sharding_leaf(node) -> bool:
    return node is None or isinstance(node, (Sharding, PartitionSpec, AUTO))



@dataclass(frozen=True)
class ArgSpec:
    """What the cache knows of one flat dynamic argument."""

    type: TensorType
    weak_type: bool
    sharding: Sharding | None


def abstract_argument(leaf, path: str) -> ArgSpec:
    if isinstance(leaf, Array):
        sharding = leaf.sharding if leaf.committed else None
        return ArgSpec(TensorType(leaf.shape, dtype_of(leaf).name), leaf.weak_type, sharding)
    if isinstance(leaf, Tracer):
        return ArgSpec(leaf.value.type, leaf.weak_type, None)
    try:
        kind = dtype_of(leaf)
        shape = np.shape(leaf)
    except TypeError as error:
        raise TypeError(
            f"jit argument {path} of type {type(leaf).__name__} is not a valid array: {error}. "
            f"Pass arrays or scalars, or mark the argument static with static_argnums/static_argnames"
        ) from None
    return ArgSpec(TensorType(tuple(shape), kind.name), kind.weak, None)
