"""Array: a global array whose shards live on devices, stored as a stack of distinct shards.

The shards of this process's devices are kept stacked on a leading axis (``blocks``) so the
executor can run every local device in one step; devices holding replicas of one shard point at
the same block, since values are immutable.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from .devices import CpuDevice
from .sharding import Index, Sharding, SingleDeviceSharding
from .tiles import local_tiles, put_tiles


def index_key(index: Index) -> tuple:
    """A hashable form of a numpy index tuple (slices are not hashable before Python 3.12)."""
    return tuple((entry.start, entry.stop, entry.step) if isinstance(entry, slice) else entry
                 for entry in index)


@dataclass(frozen=True)
class Shard:
    """One device's piece of an Array: which device, which index of the global array, which
    replica of that index it is, and the data (None for devices of other processes)."""

    device: CpuDevice
    index: Index
    replica_id: int
    data: Array | None

    def __repr__(self) -> str:
        data = None if self.data is None else np.asarray(self.data)
        return f"Shard(device={self.device!r}, index={self.index}, replica_id={self.replica_id}, data={data})"


_SHARDING_TOKENS: dict = {}
_NEXT_TOKEN = itertools.count()


def sharding_token(sharding: Sharding) -> int:
    """The same int for equal shardings, a different one for unequal ones (the table keeps
    every sharding an Array was committed to, a few small objects in a program's life)."""
    token = _SHARDING_TOKENS.get(sharding)
    if token is None:
        token = _SHARDING_TOKENS.setdefault(sharding, next(_NEXT_TOKEN))
    return token


class Array:
    """A (possibly sharded) array on meshjit devices; immutable.

    Build one with ``device_put``, ``make_array_from_single_device_arrays``,
    ``make_array_from_callback`` or as the output of a jitted function.
    """

    __array_priority__ = 100
    is_device_array = True  # NOTE: how the compiler recognises Arrays without importing runtime

    def __init__(self, shape, dtype, sharding: Sharding, blocks: np.ndarray, block_of_device,
                 *, committed: bool = True, weak_type: bool = False):
        self._shape = tuple(shape)
        self._dtype = np.dtype(dtype)
        self._sharding = sharding
        self._blocks = blocks
        self._block_of_device = tuple(block_of_device)
        self._committed = committed
        self._weak_type = weak_type
        self._deleted = False
        self._value: np.ndarray | None = None
        self._jit_signature = self._signature()

    def _signature(self) -> tuple:
        """What jit's dispatch fast path keys a call on (meshjit/jit_api.py): the layout counts
        only when it was asked for (an uncommitted Array follows the program), as an int
        standing for its sharding, which hashes without calling Python."""
        token = sharding_token(self._sharding) if self._committed else None
        return (self._shape, self._dtype, token, self._weak_type)

    def __setstate__(self, state: dict) -> None:
        # NOTE: a sharding's token is this process's: an Array unpickled elsewhere (MPI sends
        # values pickled) gets the token its sharding has there
        self.__dict__.update(state)
        self._jit_signature = self._signature()

    # -- metadata ---------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
        return math.prod(self._shape)

    @property
    def itemsize(self) -> int:
        return self._dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    @property
    def sharding(self) -> Sharding:
        return self._sharding

    @property
    def committed(self) -> bool:
        return self._committed

    @property
    def weak_type(self) -> bool:
        return self._weak_type

    @property
    def is_fully_addressable(self) -> bool:
        return self._sharding.is_fully_addressable

    @property
    def is_fully_replicated(self) -> bool:
        return self._sharding.is_fully_replicated

    def devices(self) -> set[CpuDevice]:
        return self._sharding.device_set

    @property
    def device(self):
        """The device of a single-device array, else its sharding (as JAX 0.10)."""
        devices = self._sharding._device_assignment
        return devices[0] if len(devices) == 1 else self._sharding

    # -- shards ------------------------------------------------------------------------------
    def _check_alive(self) -> None:
        if self._deleted:
            raise RuntimeError(f"Array has been deleted with shape={self._dtype.name}{list(self._shape)}.")

    def _shard_records(self) -> list[tuple[CpuDevice, Index, int, int | None]]:
        """(device, index, replica_id, block or None) for every device of the sharding."""
        indices = self._sharding.devices_indices_map(self._shape)
        local_position = {device: position for position, device
                          in enumerate(self._sharding._addressable_device_assignment)}
        seen: dict[tuple, int] = {}
        records = []
        for device in self._sharding._device_assignment:
            index = indices[device]
            key = index_key(index)
            replica_id = seen.get(key, 0)
            seen[key] = replica_id + 1
            position = local_position.get(device)
            block = None if position is None else self._block_of_device[position]
            records.append((device, index, replica_id, block))
        return records

    def _block_array(self, block: int, device: CpuDevice) -> Array:
        data = self._blocks[block]
        return Array(data.shape, self._dtype, SingleDeviceSharding(device, memory_kind=self._sharding.memory_kind),
                     data[np.newaxis], (0,), committed=True, weak_type=self._weak_type)

    @property
    def addressable_shards(self) -> list[Shard]:
        self._check_alive()
        return [Shard(device, index, replica_id, self._block_array(block, device))
                for device, index, replica_id, block in self._shard_records() if block is not None]

    @property
    def global_shards(self) -> list[Shard]:
        self._check_alive()
        return [Shard(device, index, replica_id, None if block is None else self._block_array(block, device))
                for device, index, replica_id, block in self._shard_records()]

    def addressable_data(self, index: int) -> Array:
        self._check_alive()
        devices = self._sharding._addressable_device_assignment
        if not -len(devices) <= index < len(devices):
            raise IndexError(f"addressable_data index {index} is out of range for {len(devices)} addressable shards")
        return self._block_array(self._block_of_device[index], devices[index])

    # -- values ------------------------------------------------------------------------------
    def _global_value(self) -> np.ndarray:
        self._check_alive()
        if self._value is not None:
            return self._value
        if getattr(self._sharding, "spec", None) is not None and self._sharding.spec.unreduced:
            from .unreduced import unreduced_value

            self._value = unreduced_value(self)
            return self._value
        if self.is_fully_replicated and self._block_of_device:
            # NOTE: as JAX, the first local replica is the value, even if a user gave unequal ones.
            self._value = self._blocks[self._block_of_device[0], ...]
            return self._value
        if not self.is_fully_addressable:
            raise RuntimeError(
                "Fetching value for `meshjit.Array` that spans non-addressable (non process local) "
                "devices is not possible. Use `meshjit.experimental.multihost_utils.process_allgather` first."
            )
        value = np.empty(self._shape, self._dtype)
        local = local_tiles(self._sharding, self._shape)
        if local is not None:
            tiles, tile_of_device = local
            # NOTE: each tile from its first device (replica 0, as below); devices may share a
            # block across tiles (a program's result that is equal on them is stored once)
            held, first = np.unique(tile_of_device, return_index=True)
            put_tiles(value, tiles, held, self._blocks, np.asarray(self._block_of_device, np.intp)[first])
        else:
            for _, index, replica_id, block in self._shard_records():
                if replica_id == 0:
                    value[index] = self._blocks[block]
        value.flags.writeable = False
        self._value = value
        return value

    def __array__(self, dtype=None, copy=None):
        value = self._global_value()
        if dtype is not None and np.dtype(dtype) != value.dtype:
            return value.astype(dtype)
        return value.copy() if copy else value

    def block_until_ready(self) -> Array:
        self._check_alive()
        return self

    def copy_to_host_async(self) -> None:
        self._check_alive()

    def delete(self) -> None:
        self._deleted = True
        self._blocks = None
        self._value = None

    def is_deleted(self) -> bool:
        return self._deleted

    def item(self):
        if self.size != 1:
            raise ValueError(f"item() needs an array of size 1, got shape {self._shape}")
        return self._global_value().item()

    def tolist(self):
        return self._global_value().tolist()

    def __bool__(self) -> bool:
        return bool(self._global_value())

    def __int__(self) -> int:
        return int(self._global_value())

    def __float__(self) -> float:
        return float(self._global_value())

    def __complex__(self) -> complex:
        return complex(self._global_value())

    # -- DLPack (runtime/dlpack.py reads the other direction) ----------------------------------
    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """The host value as a DLPack capsule, shared with the consumer when numpy can signal
        that it is read-only (DLPack 1.0 consumers), else a copy (unless ``copy`` is False)."""
        options = {name: value for name, value in
                   (("max_version", max_version), ("dl_device", dl_device), ("copy", copy)) if value is not None}
        value = self._global_value()
        try:
            return value.__dlpack__(stream=stream, **options)
        except BufferError:
            if copy is False:
                raise
            return value.copy().__dlpack__(stream=stream, **options)

    def __dlpack_device__(self) -> tuple:
        return self._global_value().__dlpack_device__()

    def __index__(self) -> int:
        if not np.issubdtype(self._dtype, np.integer):
            raise TypeError(f"only integer arrays can be used as an index, got dtype {self._dtype}")
        return int(self._global_value())

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of unsized object")
        return self._shape[0]

    def __iter__(self):
        # NOTE: without this, Python would iterate a 0-d array by indexing until IndexError: []
        if not self._shape:
            raise TypeError("iteration over a 0-d array")
        return (self[index] for index in range(self._shape[0]))

    def __repr__(self) -> str:
        if self._deleted:
            return f"Array(<deleted>, shape={self._shape}, dtype={self._dtype.name})"
        prefix = "Array("
        if getattr(self._sharding, "spec", None) is not None and self._sharding.spec.unreduced:
            # NOTE: as JAX, an unreduced Array shows its layout, not its partial values
            return f"{prefix}shape={self._shape}, dtype={self._dtype.name}, sharding={self._sharding!r})"
        dtype_text = f"dtype={self._dtype.name}" + (", weak_type=True" if self._weak_type else "")
        if not (self.is_fully_addressable or self.is_fully_replicated):
            return f"{prefix}shape={self._shape}, {dtype_text})"
        line_width = np.get_printoptions()["linewidth"]
        if self.size == 0:
            body = f"[], shape={self._shape}"
        elif not self._block_of_device:
            body = f"shape={self._shape}"
        else:
            body = np.array2string(self._global_value(), prefix=prefix, suffix=",", separator=", ",
                                   max_line_width=line_width)
        # NOTE: JAX's layout, including its wide gap before the dtype when the last line is full.
        last_line_length = len(body) - body.rfind("\n") + 1
        gap = " " * len(prefix) if last_line_length + len(dtype_text) + 2 > line_width else " "
        return f"{prefix}{body},{gap}{dtype_text})"

    def __str__(self) -> str:
        if getattr(self._sharding, "spec", None) is not None and self._sharding.spec.unreduced:
            return repr(self)
        return str(self._global_value())

    def __format__(self, spec: str) -> str:
        if self.ndim == 0:
            return format(self._global_value().item(), spec)
        return format(str(self), spec)


class ArrayTemplate:
    """The fields of the Arrays one program result gives on every call, built once, so each
    call makes its Array without re-checking them: ``make(blocks, value)`` (``value``: the global
    value when it is at hand, else None)."""

    __slots__ = ("_fields",)

    def __init__(self, shape, dtype, sharding: Sharding, block_of_device, *, committed: bool, weak_type: bool):
        self._fields = vars(Array(shape, dtype, sharding, np.empty((0,), dtype), block_of_device,
                                  committed=committed, weak_type=weak_type))

    def make(self, blocks: np.ndarray, value: np.ndarray | None) -> Array:
        array = _new_object(Array)
        fields = self._fields.copy()
        fields["_blocks"] = blocks
        fields["_value"] = value
        array.__dict__ = fields
        return array


_new_object = object.__new__


# -- numpy's operators, methods and properties ------------------------------------------------
# NOTE: what ``a + b``, ``a.sum(axis=0)`` or ``a.T`` compute is jax.numpy's business, which the
# runtime cannot import (it never imports the compiler). Array declares Python's operators here
# and forwards each call to one dispatcher, ``dispatcher(name, array, *args, **kwargs)``, that
# meshjit's facade registers once at import with ``register_array_dispatcher``, naming the
# methods and properties (``a.sum``, ``a.T``) numpy's front end implements.
_BINARY_OPERATORS = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or",
                     "xor", "lshift", "rshift", "divmod")
ARRAY_OPERATORS = (
    *(f"__{name}__" for name in _BINARY_OPERATORS),
    *(f"__r{name}__" for name in _BINARY_OPERATORS),
    "__neg__", "__pos__", "__abs__", "__invert__",
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__getitem__",
)
_dispatcher = None


def register_array_dispatcher(dispatcher, methods=(), properties=()) -> None:
    """Install the function every operator of ARRAY_OPERATORS and every one of the ``methods``
    and ``properties`` named here calls as ``dispatcher(name, array, *args, **kwargs)``.
    meshjit's facade registers its eager dispatcher here when it is imported."""
    global _dispatcher
    if not callable(dispatcher):
        raise TypeError(f"register_array_dispatcher expects a callable, got {dispatcher!r}")
    _dispatcher = dispatcher
    for name in methods:
        setattr(Array, name, _forwarding_method(name))
    for name in properties:
        setattr(Array, name, _forwarding_property(name))


def _unregistered(name: str):
    raise TypeError(f"Array.{name} is computed by meshjit's numpy functions, which register themselves "
                    f"when meshjit is imported; import meshjit before using Array operators")


def _forwarding_method(name: str):
    def method(self, *args, **kwargs):
        if _dispatcher is None:
            _unregistered(name)
        return _dispatcher(name, self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    return method


def _forwarding_property(name: str) -> property:
    def getter(self):
        if _dispatcher is None:
            _unregistered(name)
        return _dispatcher(name, self)

    getter.__name__ = name
    return property(getter)


# NOTE: set after the class body so Array keeps identity hashing (a ``__eq__`` written in the
# body would make it unhashable).
for _name in ARRAY_OPERATORS:
    setattr(Array, _name, _forwarding_method(_name))
del _name
