"""Drawing an array's device layout as a table with rich, as ``jax.debug.visualize_array_sharding``.

The cell sizes, padding and labels follow JAX's ``visualize_sharding`` so the tables read the same.
"""

from __future__ import annotations

from rich import box
from rich.align import Align
from rich.console import Console
from rich.padding import Padding
from rich.style import Style
from rich.table import Table

from .sharding import Sharding

# NOTE: JAX colours cells with matplotlib's "tab20b" map; these are its twenty colours, so meshjit
# needs no matplotlib.
_PALETTE = (
    "#393B79", "#5254A3", "#6B6ECF", "#9C9EDE", "#637939", "#8CA252", "#B5CF6B", "#CEDB9C",
    "#8C6D31", "#BD9E39", "#E7BA52", "#E7CB94", "#843C39", "#AD494A", "#D6616B", "#E7969C",
    "#7B4173", "#A55194", "#CE6DBD", "#DE9ED6",
)
_HEIGHT_TO_WIDTH_RATIO = 2.5


def _as_slice(entry) -> slice:
    return slice(entry, entry + 1) if isinstance(entry, int) else entry


def _chunk_position(entry: slice) -> int:
    if entry.start is None and entry.stop is None:
        return 0
    return entry.start // (entry.stop - entry.start)


def _colours(count: int):
    """JAX's colour order: walk the map in steps of about half its length so neighbours differ."""
    position = 0
    for _ in range(count):
        value = position / (count - 1) if count > 1 else 0.0
        yield _PALETTE[min(int(value * len(_PALETTE)), len(_PALETTE) - 1)]
        position = (position + count // 2 + (count % 2 == 0)) % count


def _text_colour(colour: str) -> str:
    red, green, blue = (int(colour[start:start + 2], 16) for start in (1, 3, 5))
    return "#000000" if red * 0.299 + green * 0.587 + blue * 0.114 > 186 else "#ffffff"


def _cells(shape, sharding: Sharding) -> tuple[dict, dict, dict]:
    """Per cell (row, column): the device ids, the fraction of the height and of the width."""
    devices, heights, widths = {}, {}, {}
    for device, index in sharding.devices_indices_map(tuple(shape)).items():
        slices = tuple(_as_slice(entry) for entry in index)
        positions = tuple(_chunk_position(entry) for entry in slices)
        sizes = tuple(size if entry.stop is None else entry.stop - entry.start
                      for size, entry in zip(shape, slices))
        if len(shape) == 1:
            positions = (0,) + positions
            heights[positions] = None
        else:
            heights[positions] = sizes[0] / shape[0]
        widths[positions] = sizes[-1] / shape[-1]
        devices.setdefault(positions, set()).add(device.id)
    return devices, heights, widths


def sharding_table(shape, sharding: Sharding, *, use_color: bool = False, scale: float = 1.0,
                   min_width: int = 9, max_width: int = 80) -> Table:
    """A rich Table with one cell per distinct shard of a 1-d or 2-d array, naming its devices."""
    shape = tuple(shape)
    if len(shape) not in (1, 2):
        raise ValueError(f"visualize_array_sharding only works for 1-d or 2-d arrays, got shape {shape}")
    if 0 in shape:
        raise ValueError(f"visualize_array_sharding cannot draw an array with no elements, got shape {shape}")
    base_height = int(10 * scale)
    base_width = int(base_height * (shape[1] if len(shape) == 2 else 1) / shape[0])
    platform = next(iter(sharding.device_set)).platform.upper()
    devices, heights, widths = _cells(shape, sharding)
    rows = max(row for row, _ in devices) + 1
    columns = max(column for _, column in devices) + 1
    colours = _colours(rows * columns)
    table = Table(show_header=False, show_lines=not use_color, padding=0, highlight=not use_color,
                  pad_edge=False, box=None if use_color else box.SQUARE)
    for row in range(rows):
        entries = []
        for column in range(columns):
            label = f"{platform} " + ",".join(str(device_id) for device_id in sorted(devices[row, column]))
            height = 1 if heights[row, column] is None else int(heights[row, column] * base_height)
            width = int(widths[row, column] * base_width * _HEIGHT_TO_WIDTH_RATIO)
            width = min(max(width, min_width), max_width)
            left, extra = divmod(width - len(label) - 2, 2)
            top, extra_height = divmod(height - 2, 2)
            padding = [top, left + extra, top + extra_height, left]
            style = Style()
            if use_color:
                padding = [side + 1 for side in padding]
                colour = next(colours)
                style = Style(bgcolor=colour, color=_text_colour(colour))
            entries.append(Padding(Align(label, "center", vertical="middle"),
                                   tuple(max(side, 0) for side in padding), style=style))
        table.add_row(*entries)
    return table


def visualize_sharding(shape, sharding: Sharding, *, use_color: bool = True, scale: float = 1.0,
                       min_width: int = 9, max_width: int = 80, console: Console | None = None) -> None:
    """Print the layout table; colours are used only when the console supports them."""
    console = console or Console(width=max_width)
    table = sharding_table(shape, sharding, use_color=use_color and console.color_system is not None,
                           scale=scale, min_width=min_width, max_width=max_width)
    console.print(table, end="\n\n")
