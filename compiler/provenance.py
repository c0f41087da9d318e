"""Where each value's sharding came from: per mesh axis, the user sharding that introduced it
and the op edges that carried it, for ``explain()`` and ``meshjit explain``."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Origin:
    """A user sharding: ``kind`` is input, output, constraint, manual or existing; ``index`` its
    position; ``location`` the user's source line when known."""

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
    """value id -> axis text -> AxisProvenance."""

    def __init__(self):
        self._table: dict[int, dict[str, AxisProvenance]] = {}

    def seed(self, value_id: int, axis: str, origin: Origin) -> None:
        self._table.setdefault(value_id, {})[axis] = AxisProvenance(origin)

    def carry(self, source_id: int, target_id: int, axis: str, hop: Hop) -> None:
        source = self._table.get(source_id, {}).get(axis)
        if source is None:
            source = self._source_for_sub_axis(source_id, axis)
        if source is None:
            return
        self._table.setdefault(target_id, {})[axis] = AxisProvenance(source.origin, source.hops + [hop])

    def _source_for_sub_axis(self, value_id: int, axis: str) -> AxisProvenance | None:
        """A sub-axis inherits the provenance of the whole axis it was split from."""
        name = axis.split(":")[0]
        for text, record in self._table.get(value_id, {}).items():
            if text.split(":")[0] == name:
                return record
        return None

    def of(self, value_id: int) -> dict[str, AxisProvenance]:
        return dict(self._table.get(value_id, {}))
