"""The IR's structure: values, ops, blocks, functions and modules, all immutable.

An op is generic: ``Op(name, operands, results, attrs, regions)``; what a name means lives in the
registries (shape rules, reference implementations, and the compiler's tables), never in a class
per op. Change IR with ``dataclasses.replace`` and build new modules; nothing is mutated.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from .dtypes import from_numpy, to_numpy
from .sharding import MeshAttr, TensorSharding
from .types import TensorType

_value_ids = itertools.count()


@dataclass(frozen=True, slots=True)
class SymbolRef:
    """A reference to a module-level symbol, printed ``@name`` (a mesh or a function)."""

    name: str


@dataclass(frozen=True, slots=True)
class DenseAttr:
    """A constant tensor's elements, stored as bytes so that the attribute stays hashable."""

    type: TensorType
    data: bytes

    @staticmethod
    def from_array(array) -> DenseAttr:
        array = np.asarray(array)
        dtype = from_numpy(array.dtype)
        contiguous = np.ascontiguousarray(array, dtype=to_numpy(dtype))
        return DenseAttr(TensorType(tuple(int(size) for size in array.shape), dtype), contiguous.tobytes())

    @property
    def array(self) -> np.ndarray:
        flat = np.frombuffer(self.data, dtype=to_numpy(self.type.dtype))
        return flat.reshape(self.type.shape).copy()


class Attrs(Mapping):
    """An immutable, hashable mapping of attribute names to values, kept sorted by name.

    Values are ints, floats, bools, strings, ``SymbolRef``, ``DenseAttr``, ``TensorType``,
    ``TensorSharding`` and tuples of these; lists are stored as tuples.
    """

    __slots__ = ("_items", "_hash")

    def __init__(self, items=()):
        pairs = items.items() if isinstance(items, Mapping) else items
        self._items = tuple(sorted((str(key), _freeze(value)) for key, value in pairs))
        self._hash = hash(self._items)

    def __getitem__(self, key):
        for name, value in self._items:
            if name == key:
                return value
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        if isinstance(other, Attrs):
            return self._items == other._items
        return isinstance(other, Mapping) and dict(self._items) == dict(other)

    def __repr__(self) -> str:
        return f"Attrs({dict(self._items)!r})"

    def updated(self, **changes) -> Attrs:
        merged = dict(self._items)
        merged.update(changes)
        return Attrs(merged)


def _freeze(value):
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(item) for item in value)
    if isinstance(value, np.ndarray):
        return DenseAttr.from_array(value)
    if isinstance(value, np.generic):
        return value.item()
    return value


@dataclass(frozen=True, slots=True)
class Value:
    """An SSA value: defined once, by a block argument or an op result.

    Identity is the ``id``; ``hint`` is a readable name for printing (a Python argument name)
    and takes no part in equality.
    """

    id: int
    type: TensorType
    hint: str | None = field(default=None, compare=False)

    @staticmethod
    def fresh(type: TensorType, hint: str | None = None) -> Value:
        return Value(next(_value_ids), type, hint)


@dataclass(frozen=True, slots=True)
class Op:
    """One operation. ``shardings`` is empty or holds one entry (or ``None``) per result."""

    name: str
    operands: tuple[Value, ...]
    results: tuple[Value, ...]
    attrs: Attrs = field(default_factory=Attrs)
    regions: tuple[Block, ...] = ()
    shardings: tuple[TensorSharding | None, ...] = ()
    location: str | None = field(default=None, compare=False)

    def __post_init__(self):
        if not isinstance(self.attrs, Attrs):
            object.__setattr__(self, "attrs", Attrs(self.attrs))
        if self.shardings and all(sharding is None for sharding in self.shardings):
            # NOTE: "no sharding on any result" has one spelling, so text round-trips exactly
            object.__setattr__(self, "shardings", ())
        if self.shardings and len(self.shardings) != len(self.results):
            raise ValueError(
                f"op {self.name!r} has {len(self.results)} results but {len(self.shardings)} shardings"
            )

    @property
    def result(self) -> Value:
        """The only result of a single-result op."""
        if len(self.results) != 1:
            raise ValueError(f"op {self.name!r} has {len(self.results)} results, not one")
        return self.results[0]

    def sharding_of(self, index: int) -> TensorSharding | None:
        return self.shardings[index] if self.shardings else None


@dataclass(frozen=True, slots=True)
class Block:
    """A straight-line list of ops with arguments and returned values (a region's body).

    ``arg_shardings`` is empty or holds one entry (or ``None``) per argument: propagation's
    sharding of a control flow region's arguments (a function's are on the Func).
    """

    args: tuple[Value, ...]
    ops: tuple[Op, ...]
    returns: tuple[Value, ...]
    arg_shardings: tuple[TensorSharding | None, ...] = ()

    def __post_init__(self):
        if self.arg_shardings and all(sharding is None for sharding in self.arg_shardings):
            # NOTE: one spelling for "no argument sharding", as for Op.shardings
            object.__setattr__(self, "arg_shardings", ())
        if self.arg_shardings and len(self.arg_shardings) != len(self.args):
            raise ValueError(f"a block with {len(self.args)} arguments has {len(self.arg_shardings)} "
                             f"argument shardings")

    def arg_sharding(self, index: int) -> TensorSharding | None:
        return self.arg_shardings[index] if self.arg_shardings else None

    def walk(self) -> Iterator[Op]:
        """Every op, nested regions included, in program order (an op before its regions' ops)."""
        for op in self.ops:
            yield op
            for region in op.regions:
                yield from region.walk()


@dataclass(frozen=True, slots=True)
class Func:
    """A function: a body block plus the shardings of its arguments and results.

    ``attrs`` holds function-level facts; ``spmd_mesh = @mesh`` marks a partitioned function
    whose types are per-device and whose body runs on every device of that mesh.
    """

    name: str
    body: Block
    arg_shardings: tuple[TensorSharding | None, ...] = ()
    result_shardings: tuple[TensorSharding | None, ...] = ()
    attrs: Attrs = field(default_factory=Attrs)

    def __post_init__(self):
        if not isinstance(self.attrs, Attrs):
            object.__setattr__(self, "attrs", Attrs(self.attrs))
        if not self.arg_shardings:
            object.__setattr__(self, "arg_shardings", (None,) * len(self.body.args))
        if not self.result_shardings:
            object.__setattr__(self, "result_shardings", (None,) * len(self.body.returns))

    @property
    def args(self) -> tuple[Value, ...]:
        return self.body.args

    @property
    def returns(self) -> tuple[Value, ...]:
        return self.body.returns

    @property
    def arg_types(self) -> tuple[TensorType, ...]:
        return tuple(value.type for value in self.body.args)

    @property
    def result_types(self) -> tuple[TensorType, ...]:
        return tuple(value.type for value in self.body.returns)

    @property
    def spmd_mesh(self) -> str | None:
        mesh = self.attrs.get("spmd_mesh")
        return mesh.name if isinstance(mesh, SymbolRef) else None


@dataclass(frozen=True, slots=True)
class Module:
    """Named meshes and functions; the entry function is ``main`` unless there is only one."""

    meshes: tuple[tuple[str, MeshAttr], ...] = ()
    funcs: tuple[Func, ...] = ()

    def mesh(self, name: str) -> MeshAttr:
        for mesh_name, mesh in self.meshes:
            if mesh_name == name:
                return mesh
        raise KeyError(f"module has no mesh @{name}; it has {[name for name, _ in self.meshes]}")

    @property
    def mesh_table(self) -> dict[str, MeshAttr]:
        return dict(self.meshes)

    def func(self, name: str) -> Func:
        for func in self.funcs:
            if func.name == name:
                return func
        raise KeyError(f"module has no function @{name}")

    @property
    def main(self) -> Func:
        if len(self.funcs) == 1:
            return self.funcs[0]
        return self.func("main")

    def __str__(self) -> str:
        from .printer import print_module

        return print_module(self)


def renumber(module: Module) -> Module:
    """The same module with value ids renumbered 0, 1, ... in definition order.

    Two modules that differ only in value numbering renumber to equal modules, so
    ``renumber(parse_module(print_module(m))) == renumber(m)``.
    """
    mapping: dict[int, Value] = {}

    def define(value: Value) -> Value:
        new = Value(len(mapping), value.type, value.hint)
        mapping[value.id] = new
        return new

    def use(value: Value) -> Value:
        return mapping.get(value.id, value)

    def block(old: Block) -> Block:
        args = tuple(define(arg) for arg in old.args)
        ops = []
        for op in old.ops:
            operands = tuple(use(operand) for operand in op.operands)
            regions = tuple(block(region) for region in op.regions)
            results = tuple(define(result) for result in op.results)
            ops.append(replace(op, operands=operands, results=results, regions=regions))
        return Block(args, tuple(ops), tuple(use(value) for value in old.returns), old.arg_shardings)

    funcs = tuple(replace(func, body=block(func.body)) for func in module.funcs)
    return replace(module, funcs=funcs)
