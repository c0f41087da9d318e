"""PartitionSpec: per array dim, None, a mesh axis name, or a tuple of names (major to minor)."""

from __future__ import annotations


class _Unconstrained:
    """The ``P.UNCONSTRAINED`` marker: propagation may choose this dim's sharding."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNCONSTRAINED"

    def __reduce__(self):
        return (_Unconstrained, ())


UNCONSTRAINED = _Unconstrained()


def _check_entry(entry, position: int):
    if entry is None or entry is UNCONSTRAINED or isinstance(entry, str):
        return entry
    if isinstance(entry, (tuple, list)):
        if not all(isinstance(name, str) for name in entry):
            raise TypeError(
                f"PartitionSpec entry {position} must be None, a mesh axis name or a tuple of "
                f"names, got {entry!r}"
            )
        # NOTE: as JAX 0.10, a one-name tuple is the name and the empty tuple is None
        if len(entry) <= 1:
            return entry[0] if entry else None
        return tuple(entry)
    raise TypeError(
        f"PartitionSpec entry {position} must be None, a mesh axis name or a tuple of names, "
        f"got {entry!r} of type {type(entry).__name__}"
    )


class PartitionSpec:
    """How each array dim is split over mesh axes, e.g. ``P('x', None, ('y', 'z'))``.

    An entry is ``None`` (not split), an axis name, a tuple of axis names (split over their
    product, first name major), or ``P.UNCONSTRAINED`` (left to propagation inside jit).
    Trailing dims not listed are not split.
    """

    UNCONSTRAINED = UNCONSTRAINED
    __slots__ = ("_partitions",)

    def __init__(self, *partitions):
        self._partitions = tuple(_check_entry(entry, index) for index, entry in enumerate(partitions))

    def __len__(self) -> int:
        return len(self._partitions)

    def __getitem__(self, index):
        return self._partitions[index]

    def __iter__(self):
        return iter(self._partitions)

    def index(self, value) -> int:
        return self._partitions.index(value)

    def count(self, value) -> int:
        return self._partitions.count(value)

    def __eq__(self, other) -> bool:
        if isinstance(other, PartitionSpec):
            return self._partitions == other._partitions
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._partitions)

    def __repr__(self) -> str:
        inner = ", ".join(repr(entry) for entry in self._partitions)
        if len(self._partitions) == 1:
            inner += ","
        return f"P({inner})"

    def __reduce__(self):
        return (PartitionSpec, self._partitions)

    def axis_names_of(self, position: int) -> tuple[str, ...]:
        """The mesh axes dim ``position`` is split over (empty for None and unlisted dims)."""
        if position >= len(self._partitions):
            return ()
        entry = self._partitions[position]
        if entry is None or entry is UNCONSTRAINED:
            return ()
        return (entry,) if isinstance(entry, str) else entry

    def used_axes(self) -> list[str]:
        return [name for position in range(len(self)) for name in self.axis_names_of(position)]


P = PartitionSpec
