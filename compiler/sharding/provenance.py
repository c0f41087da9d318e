"""Where each value's sharding came from: per mesh axis, the user sharding that introduced it
and the op edges that carried it, for ``explain()`` and ``meshjit explain``."""

from __future__ import annotations

from dataclasses import dataclass, field

from meshjit.ir import AxisRef


@dataclass(frozen=True)
class Origin:
    """A user sharding. ``kind`` is ``input`` or ``output`` (a function argument or result, by
    position), ``constraint`` (the Nth sharding_constraint), ``manual`` (the Nth
    manual_computation's boundary; ``label`` says which operand or result) or ``existing`` (the
    Nth op result that came with a sharding). ``location`` is the user's source line when known."""

    kind: str
    index: int
    location: str | None = None
    label: str = ""

    def __str__(self) -> str:
        text = f"{self.kind} {self.index}" + (f" {self.label}" if self.label else "")
        return text + (f" ({self.location})" if self.location else "")


@dataclass(frozen=True)
class Hop:
    """One propagation step: through ``op_name`` from tensor ``source`` to tensor ``target``."""

    op_name: str
    source: str
    target: str
    location: str | None
    stage: str

    def __str__(self) -> str:
        where = f" at {self.location}" if self.location else ""
        return f"{self.op_name}{where}: {self.source} -> {self.target} [{self.stage}]"


@dataclass
class AxisProvenance:
    origin: Origin
    hops: list[Hop] = field(default_factory=list)


class ProvenanceTable:
    """value id (or a propagation state key) -> mesh axis -> AxisProvenance."""

    def __init__(self):
        self._table: dict[int, dict[AxisRef, AxisProvenance]] = {}

    def seed(self, value_id: int, axis: AxisRef, origin: Origin) -> None:
        self._table.setdefault(value_id, {})[axis] = AxisProvenance(origin)

    def carry(self, source_id: int, target_id: int, axis: AxisRef, hop: Hop) -> None:
        """``axis`` reached ``target_id`` from ``source_id`` in one more hop."""
        source = self._table.get(source_id, {}).get(axis) or self._same_axis(source_id, axis)
        if source is None:
            return
        record = AxisProvenance(source.origin, source.hops + [hop])
        self._table.setdefault(target_id, {})[axis] = record

    def _same_axis(self, value_id: int, axis: AxisRef) -> AxisProvenance | None:
        """A sub-axis split off (or merged from) parts of one mesh axis inherits their record."""
        for known, record in self._table.get(value_id, {}).items():
            if known.name == axis.name:
                return record
        return None

    def of(self, value_id: int) -> dict[AxisRef, AxisProvenance]:
        return dict(self._table.get(value_id, {}))
