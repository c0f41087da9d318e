"""The collectives of a per-device module as records: kind, axes, bytes per device, and reason;
a collective inside a loop body also says how many times it runs (``trips``)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from meshjit.ir import Block, Module

from . import cost

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "collective_permute")


@dataclass(frozen=True)
class CollectiveRecord:
    """One collective: ``bytes`` is what each device sends each time it runs, under the ring
    model; ``trips`` how many times it runs per call (the trip counts of the scans around it;
    None inside a while loop, whose count is known only when it runs)."""

    kind: str
    axes: tuple[str, ...]
    bytes: int
    shape: tuple[int, ...]
    dtype: str
    reason: str
    trips: int | None = 1

    @property
    def total_bytes(self) -> int:
        """What each device sends per call (a while loop's body counted once)."""
        return self.bytes * (1 if self.trips is None else self.trips)

    def __str__(self) -> str:
        text = (f"{self.kind} over {','.join(self.axes)} of {self.dtype}{list(self.shape)}: "
                f"{self.bytes} bytes/device")
        if self.trips != 1:
            text += " per step of a while loop" if self.trips is None else f" x {self.trips} loop steps"
        return f"{text} ({self.reason})"


def _group_size(module: Module, axes) -> int:
    mesh = module.mesh(module.main.spmd_mesh)
    return math.prod(mesh.axis_size(name) for name in axes)


def _bytes_sent(kind: str, operand_bytes: int, result_bytes: int, group: int) -> float:
    if kind == "all_reduce":
        return cost.all_reduce_bytes(operand_bytes, group)
    if kind == "all_gather":
        return cost.all_gather_bytes(result_bytes, group)
    if kind == "reduce_scatter":
        return cost.reduce_scatter_bytes(operand_bytes, group)
    if kind == "all_to_all":
        return cost.all_to_all_bytes(operand_bytes, group)
    return float(operand_bytes)


def _with_trips(block: Block, trips: int | None):
    """Every op of ``block`` (nested regions included) with how many times it runs per call."""
    for op in block.ops:
        yield op, trips
        inner = trips
        if op.name == "scan":
            inner = None if trips is None else trips * op.attrs["length"]
        elif op.name == "while":
            inner = None
        for region in op.regions:
            yield from _with_trips(region, inner)


def collective_records(module: Module, reasons: dict[int, str] | None = None) -> list[CollectiveRecord]:
    records = []
    for op, trips in _with_trips(module.main.body, 1):
        if op.name not in COLLECTIVES:
            continue
        axes = tuple(op.attrs.get("axes", ()))
        group = _group_size(module, axes)
        sent = _bytes_sent(op.name, cost.value_bytes(op.operands[0]), cost.value_bytes(op.result), group)
        reason = (reasons or {}).get(op.result.id, op.attrs.get("reason", "written by hand"))
        records.append(CollectiveRecord(op.name, axes, int(round(sent)), op.operands[0].type.shape,
                                        op.operands[0].type.dtype, reason, trips))
    return records


def collective_summary(module: Module, records: list[CollectiveRecord], name: str = "main") -> dict:
    """The JSON-ready summary of a per-device module's collectives: the mesh, one entry per
    collective, and the total bytes each device sends (``MESHJIT_DUMP_DIR``'s
    ``<name>.collectives.json`` and ``meshjit collectives --json``)."""
    mesh_name = module.main.spmd_mesh
    mesh = module.mesh(mesh_name) if mesh_name else None
    entries = [{"kind": record.kind, "axes": list(record.axes), "bytes_per_device": record.bytes,
                "operand": operand_text(record), "reason": record.reason}
               | ({} if record.trips == 1 else {"trips": record.trips})
               for record in records]
    return {"function": name, "mesh": dict(mesh.axes) if mesh else {}, "count": len(records),
            "total_bytes_per_device": sum(record.total_bytes for record in records), "collectives": entries}


def operand_text(record: CollectiveRecord) -> str:
    """The collective's per-device operand type as the IR prints it, e.g. ``f32[4,16]``."""
    return f"{record.dtype}[{','.join(str(size) for size in record.shape)}]"
