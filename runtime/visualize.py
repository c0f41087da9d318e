"""Drawing an array's device layout as a table with rich, as ``jax.debug.visualize_array_sharding``."""

from __future__ import annotations

from rich import box
from rich.align import Align
from rich.console import Console
from rich.padding import Padding
from rich.table import Table

from .sharding import Sharding


def _span(entry, size: int) -> tuple[int, int]:
    if isinstance(entry, slice):
        start, stop, _ = entry.indices(size)
        return start, stop
    return entry, entry + 1


def sharding_table(shape, sharding: Sharding, *, use_color: bool = False, scale: float = 1.0,
                   min_width: int = 9, max_width: int = 80) -> Table:
    """A rich Table with one cell per distinct shard of a 1-d or 2-d array, naming its devices."""
    if len(shape) not in (1, 2):
        raise ValueError(f"visualize_array_sharding only works for 1-d or 2-d arrays, got shape {tuple(shape)}")
    shape2d = (1, shape[0]) if len(shape) == 1 else tuple(shape)
    cells: dict[tuple, list[int]] = {}
    for device, index in sharding.devices_indices_map(tuple(shape)).items():
        index2d = (slice(None),) + tuple(index) if len(shape) == 1 else tuple(index)
        key = tuple(_span(entry, size) for entry, size in zip(index2d, shape2d))
        cells.setdefault(key, []).append(device.id)
    rows = sorted({key[0] for key in cells})
    columns = sorted({key[1] for key in cells})
    height = 1 if len(shape) == 1 else max(1, round(4 * scale / max(1, len(rows) / 2)))
    table = Table(show_header=False, show_lines=not len(shape) == 1, padding=0,
                  box=box.SQUARE, pad_edge=False)
    total_width = min(max_width, max(min_width * len(columns), int(40 * scale)))
    for low, high in columns:
        share = (high - low) / max(1, shape2d[1])
        table.add_column(justify="center", width=max(min_width, int(total_width * share)), no_wrap=True)
    for row in rows:
        entries = []
        for column in columns:
            ids = sorted(cells.get((row, column), []))
            label = "CPU " + ",".join(str(device_id) for device_id in ids) if ids else ""
            style = f"on color({(ids[0] * 37) % 200 + 17})" if use_color and ids else ""
            vertical = (height - 1) // 2
            entries.append(Padding(Align(label, "center"), (vertical, 0, height - 1 - vertical, 0), style=style))
        table.add_row(*entries)
    return table


def visualize_sharding(shape, sharding: Sharding, *, use_color: bool = False, scale: float = 1.0,
                       min_width: int = 9, max_width: int = 80, console: Console | None = None) -> None:
    table = sharding_table(shape, sharding, use_color=use_color, scale=scale,
                           min_width=min_width, max_width=max_width)
    (console or Console()).print(table)
