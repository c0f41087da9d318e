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


def _axis_set(value, argument: str) -> frozenset[str]:
    if not isinstance(value, (set, frozenset)):
        raise TypeError(f"{argument} argument of PartitionSpec should of type `frozenset` or `set`. Got type {value}")
    for name in value:
        if not isinstance(name, str):
            raise TypeError(f"PartitionSpec {argument} axes must be mesh axis names (strings), got {name!r}")
    return frozenset(value)


def _set_text(names: frozenset[str]) -> str:
    return "{" + ", ".join(repr(name) for name in sorted(names)) + "}"


class PartitionSpec:
    """How each array dim is split over mesh axes, e.g. ``P('x', None, ('y', 'z'))``.

    An entry is ``None`` (not split), an axis name, a tuple of axis names (split over their
    product, first name major), or ``P.UNCONSTRAINED`` (left to propagation inside jit).
    Trailing dims not listed are not split. ``unreduced`` axes hold partial values whose sum over
    the axis is the array; ``reduced`` axes hold copies of a value that is already summed there.
    """

    UNCONSTRAINED = UNCONSTRAINED
    __slots__ = ("_partitions", "unreduced", "reduced")

    def __init__(self, *partitions, unreduced=frozenset(), reduced=frozenset()):
        self._partitions = tuple(_check_entry(entry, index) for index, entry in enumerate(partitions))
        self.unreduced = _axis_set(unreduced, "unreduced")
        self.reduced = _axis_set(reduced, "reduced")
        used = set(self.used_axes())
        for name, axes in (("unreduced", self.unreduced), ("reduced", self.reduced)):
            if used & axes:
                raise ValueError(f"partitions cannot overlap with {name} axes passed to PartitionSpec. Got "
                                 f"partitions: {self._partitions} and {name} axes: {axes}")
        if self.unreduced & self.reduced:
            raise ValueError(f"`unreduced` and `reduced` argument to PartitionSpec cannot overlap. Got unreduced: "
                             f"{self.unreduced} and reduced: {self.reduced}")

    @property
    def partitions(self) -> tuple:
        return self._partitions

    def update(self, **changes) -> PartitionSpec:
        partitions = changes.get("partitions", self._partitions)
        return PartitionSpec(*partitions, unreduced=changes.get("unreduced", self.unreduced),
                             reduced=changes.get("reduced", self.reduced))

    def __len__(self) -> int:
        return len(self._partitions)

    def __getitem__(self, index):
        return self._partitions[index]

    def __iter__(self):
        if self.unreduced or self.reduced:
            # NOTE: as JAX: spreading a spec would drop its unreduced and reduced axes
            raise ValueError("Using *pspec is dangerous when PartitionSpec has non-empty unreduced/reduced set. "
                             "Please use *spec.partitions")
        return iter(self._partitions)

    def index(self, value) -> int:
        return self._partitions.index(value)

    def count(self, value) -> int:
        return self._partitions.count(value)

    def __eq__(self, other) -> bool:
        if isinstance(other, PartitionSpec):
            return (self._partitions, self.unreduced, self.reduced) == (
                other._partitions, other.unreduced, other.reduced)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self._partitions, self.unreduced, self.reduced))

    def __repr__(self) -> str:
        parts = [repr(entry) for entry in self._partitions]
        if len(self._partitions) == 1 and not (self.unreduced or self.reduced):
            parts[0] += ","
        if self.unreduced:
            parts.append(f"unreduced={_set_text(self.unreduced)}")
        if self.reduced:
            parts.append(f"reduced={_set_text(self.reduced)}")
        return f"P({', '.join(parts)})"

    def __reduce__(self):
        return (_rebuild, (self._partitions, self.unreduced, self.reduced))

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


def _rebuild(partitions, unreduced, reduced) -> PartitionSpec:
    return PartitionSpec(*partitions, unreduced=unreduced, reduced=reduced)


P = PartitionSpec
