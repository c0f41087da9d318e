"""Host-level exchanges between the processes of a job (jax.experimental.multihost_utils):
gathering values, broadcasting from one process, barriers and equality checks.

With one process they need no MPI and act on the local values alone.
"""

from __future__ import annotations

import numpy as np
import optree

from . import mpi_backend, mpi_deadline
from .array import Array, index_key
from .devices import process_count, process_index
from meshjit.ir.dtypes import kind_of


def _allgather(value, label: str) -> list:
    """Every process's ``value``, in process order."""
    if process_count() == 1:
        return [value]
    return mpi_deadline.allgather_objects(mpi_backend.world(), value, label)


def _host_value(leaf, argument: str) -> np.ndarray:
    """A leaf as numpy (an Array spanning other processes raises RuntimeError here)."""
    try:
        return np.asarray(leaf)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{argument}: expected an array or scalar, got {type(leaf).__name__}: {error}") from None


def _global_value(array: Array, label: str) -> np.ndarray:
    """The whole value of an Array spanning several processes: each process sends the shards it
    holds the first replica of, and every process assembles all of them."""
    pieces = [(index_key(shard.index), np.asarray(shard.data)) for shard in array.addressable_shards
              if shard.replica_id == 0]
    value = np.empty(array.shape, array.dtype)
    for process_pieces in _allgather(pieces, label):
        for key, data in process_pieces:
            value[tuple(slice(*entry) if isinstance(entry, tuple) else entry for entry in key)] = data
    return value


def process_allgather(in_tree, tiled: bool = False):
    """Gather a pytree from every process as numpy arrays.

    An Array spanning other processes' devices comes back whole; any other leaf (numpy array,
    scalar, process-local Array) is stacked over processes on a new leading axis, or
    concatenated along axis 0 when ``tiled`` (scalars are always stacked).
    """
    leaves, treedef = optree.tree_flatten(in_tree)
    results = []
    for position, leaf in enumerate(leaves):
        label = f"process_allgather leaf {position}"
        if isinstance(leaf, Array) and not leaf.is_fully_addressable:
            results.append(_global_value(leaf, label))
            continue
        gathered = _allgather(_host_value(leaf, f"process_allgather leaf {position}"), label)
        shapes = {piece.shape for piece in gathered}
        if len(shapes) != 1:
            raise ValueError(
                f"process_allgather: leaf {position} has different shapes on the processes: {sorted(shapes)}")
        tile = tiled and gathered[0].ndim > 0
        results.append(np.concatenate(gathered, axis=0) if tile else np.stack(gathered))
    return optree.tree_unflatten(treedef, results)


def broadcast_one_to_all(in_tree, is_source: bool | None = None):
    """Every process gets the pytree of the source process (process 0 unless ``is_source`` says
    otherwise), as numpy arrays."""
    source = process_index() == 0 if is_source is None else bool(is_source)
    leaves, treedef = optree.tree_flatten(in_tree)
    host = [_host_value(leaf, f"broadcast_one_to_all leaf {position}") for position, leaf in enumerate(leaves)]
    offers = _allgather(host if source else None, "broadcast_one_to_all")
    chosen = next((offer for offer in offers if offer is not None), None)
    if chosen is None:
        raise ValueError("broadcast_one_to_all: no process is the source (is_source was False everywhere)")
    if len(chosen) != len(host):
        raise ValueError(f"broadcast_one_to_all: the source has {len(chosen)} leaves, this process {len(host)}")
    return optree.tree_unflatten(treedef, chosen)


def assert_equal(in_tree, fail_message: str = "") -> None:
    """Raise AssertionError unless every process holds the same pytree of values."""
    leaves, treedef = optree.tree_flatten(in_tree)
    host = [_host_value(leaf, f"assert_equal leaf {position}") for position, leaf in enumerate(leaves)]
    everyone = _allgather((str(treedef), host), "assert_equal")
    for process, (structure, values) in enumerate(everyone):
        same = structure == str(treedef) and len(values) == len(host) and all(
            mine.shape == theirs.shape and np.array_equal(mine, theirs, equal_nan=kind_of(mine.dtype) in "fc")
            for mine, theirs in zip(host, values))
        if not same:
            raise AssertionError(
                f"{fail_message} Expected: {in_tree!r} on process {process_index()}; got a different value "
                f"on process {process}".strip()
            )


def sync_global_devices(name: str) -> None:
    """A barrier across all processes; every process must pass the same ``name`` (a different
    name raises CollectiveMismatchError, a missing process CollectiveTimeoutError)."""
    if not isinstance(name, str):
        raise TypeError(f"sync_global_devices name must be a string, got {type(name).__name__}: {name!r}")
    if process_count() == 1:
        return
    communicator = mpi_backend.world()
    mpi_deadline.check_arrival(communicator, range(communicator.Get_size()), f"sync_global_devices({name!r})")
