"""visualize_array_sharding: the device layout table, compared with JAX 0.10's output."""

from __future__ import annotations

import io

import numpy as np
import pytest
from meshjit.runtime.visualize import visualize_sharding
from rich.console import Console

import meshjit
from meshjit.sharding import NamedSharding, PositionalSharding
from meshjit.sharding import PartitionSpec as P

pytestmark = pytest.mark.usefixtures("restore_runtime_state")


@pytest.fixture(autouse=True)
def plain_terminal(monkeypatch):
    """rich reads these to force colour or terminal behaviour; the goldens are plain text."""
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "COLUMNS", "LINES"):
        monkeypatch.delenv(name, raising=False)


# Printed by jax.debug.visualize_array_sharding (JAX 0.10.2, rich 15) for the same arrays:
# mesh, spec, shape, keyword arguments, the lines printed.
VISUALIZE_GOLDENS = [
    ('2x4', ('x', 'y'), (8, 8), {}, (
        '┌───────┬───────┬───────┬───────┐\n'
        '│       │       │       │       │\n'
        '│ CPU 0 │ CPU 1 │ CPU 2 │ CPU 3 │\n'
        '│       │       │       │       │\n'
        '│       │       │       │       │\n'
        '├───────┼───────┼───────┼───────┤\n'
        '│       │       │       │       │\n'
        '│ CPU 4 │ CPU 5 │ CPU 6 │ CPU 7 │\n'
        '│       │       │       │       │\n'
        '│       │       │       │       │\n'
        '└───────┴───────┴───────┴───────┘\n'
    )),
    ('2x4', ('x',), (8, 8), {}, (
        '┌───────────────────────┐\n'
        '│                       │\n'
        '│      CPU 0,1,2,3      │\n'
        '│                       │\n'
        '│                       │\n'
        '├───────────────────────┤\n'
        '│                       │\n'
        '│      CPU 4,5,6,7      │\n'
        '│                       │\n'
        '│                       │\n'
        '└───────────────────────┘\n'
    )),
    ('2x4', (None, 'y'), (8, 8), {}, (
        '┌───────┬───────┬───────┬───────┐\n'
        '│       │       │       │       │\n'
        '│       │       │       │       │\n'
        '│       │       │       │       │\n'
        '│       │       │       │       │\n'
        '│CPU 0,4│CPU 1,5│CPU 2,6│CPU 3,7│\n'
        '│       │       │       │       │\n'
        '│       │       │       │       │\n'
        '│       │       │       │       │\n'
        '│       │       │       │       │\n'
        '└───────┴───────┴───────┴───────┘\n'
    )),
    ('2x4', (), (8, 8), {}, (
        '┌───────────────────────┐\n'
        '│                       │\n'
        '│                       │\n'
        '│                       │\n'
        '│                       │\n'
        '│  CPU 0,1,2,3,4,5,6,7  │\n'
        '│                       │\n'
        '│                       │\n'
        '│                       │\n'
        '│                       │\n'
        '└───────────────────────┘\n'
    )),
    ('2x4', ('y', 'x'), (8, 8), {}, (
        '┌──────────┬──────────┐\n'
        '│  CPU 0   │  CPU 4   │\n'
        '├──────────┼──────────┤\n'
        '│  CPU 1   │  CPU 5   │\n'
        '├──────────┼──────────┤\n'
        '│  CPU 2   │  CPU 6   │\n'
        '├──────────┼──────────┤\n'
        '│  CPU 3   │  CPU 7   │\n'
        '└──────────┴──────────┘\n'
    )),
    ('2x2x2', ('x', ('y', 'z')), (4, 8), {}, (
        '┌──────────┬──────────┬──────────┬──────────┐\n'
        '│          │          │          │          │\n'
        '│  CPU 0   │  CPU 1   │  CPU 2   │  CPU 3   │\n'
        '│          │          │          │          │\n'
        '│          │          │          │          │\n'
        '├──────────┼──────────┼──────────┼──────────┤\n'
        '│          │          │          │          │\n'
        '│  CPU 4   │  CPU 5   │  CPU 6   │  CPU 7   │\n'
        '│          │          │          │          │\n'
        '│          │          │          │          │\n'
        '└──────────┴──────────┴──────────┴──────────┘\n'
    )),
    ('2x2x2', ('z', 'x'), (4, 4), {}, (
        '┌──────────┬──────────┐\n'
        '│          │          │\n'
        '│ CPU 0,2  │ CPU 4,6  │\n'
        '│          │          │\n'
        '│          │          │\n'
        '├──────────┼──────────┤\n'
        '│          │          │\n'
        '│ CPU 1,3  │ CPU 5,7  │\n'
        '│          │          │\n'
        '│          │          │\n'
        '└──────────┴──────────┘\n'
    )),
    ('8', ('x',), (16,), {}, (
        '┌───────┬───────┬───────┬───────┬───────┬───────┬───────┬───────┐\n'
        '│ CPU 0 │ CPU 1 │ CPU 2 │ CPU 3 │ CPU 4 │ CPU 5 │ CPU 6 │ CPU 7 │\n'
        '└───────┴───────┴───────┴───────┴───────┴───────┴───────┴───────┘\n'
    )),
    ('2x4', ('y',), (8,), {}, (
        '┌───────┬───────┬───────┬───────┐\n'
        '│CPU 0,4│CPU 1,5│CPU 2,6│CPU 3,7│\n'
        '└───────┴───────┴───────┴───────┘\n'
    )),
    ('4x2', ('x', 'y'), (8, 2), {}, (
        '┌───────┬───────┐\n'
        '│ CPU 0 │ CPU 1 │\n'
        '├───────┼───────┤\n'
        '│ CPU 2 │ CPU 3 │\n'
        '├───────┼───────┤\n'
        '│ CPU 4 │ CPU 5 │\n'
        '├───────┼───────┤\n'
        '│ CPU 6 │ CPU 7 │\n'
        '└───────┴───────┘\n'
    )),
    ('2x4', (('x', 'y'),), (8, 4), {}, (
        '┌──────────┐\n'
        '│  CPU 0   │\n'
        '├──────────┤\n'
        '│  CPU 1   │\n'
        '├──────────┤\n'
        '│  CPU 2   │\n'
        '├──────────┤\n'
        '│  CPU 3   │\n'
        '├──────────┤\n'
        '│  CPU 4   │\n'
        '├──────────┤\n'
        '│  CPU 5   │\n'
        '├──────────┤\n'
        '│  CPU 6   │\n'
        '├──────────┤\n'
        '│  CPU 7   │\n'
        '└──────────┘\n'
    )),
    ('2x4', ('x', 'y'), (8, 8), {'scale': 0.5}, (
        '┌───────┬───────┬───────┬───────┐\n'
        '│ CPU 0 │ CPU 1 │ CPU 2 │ CPU 3 │\n'
        '├───────┼───────┼───────┼───────┤\n'
        '│ CPU 4 │ CPU 5 │ CPU 6 │ CPU 7 │\n'
        '└───────┴───────┴───────┴───────┘\n'
    )),
    ('2x4', ('x', 'y'), (8, 8), {'min_width': 4, 'max_width': 20}, (
        '┌────┬────┬───┬────┐\n'
        '│    │    │   │    │\n'
        '│CPU │CPU │CPU│CPU │\n'
        '│0   │1   │2  │3   │\n'
        '│    │    │   │    │\n'
        '│    │    │   │    │\n'
        '├────┼────┼───┼────┤\n'
        '│    │    │   │    │\n'
        '│CPU │CPU │CPU│CPU │\n'
        '│4   │5   │6  │7   │\n'
        '│    │    │   │    │\n'
        '│    │    │   │    │\n'
        '└────┴────┴───┴────┘\n'
    )),
]


@pytest.mark.parametrize("mesh_name, spec, shape, options, lines", VISUALIZE_GOLDENS)
def test_table_matches_jax(mesh_of, capsys, mesh_name, spec, shape, options, lines):
    array = meshjit.device_put(np.zeros(shape, np.float32), NamedSharding(mesh_of(mesh_name), P(*spec)))
    meshjit.debug.visualize_array_sharding(array, **options)
    assert capsys.readouterr().out == "".join(lines)


def test_single_device_array(capsys):
    meshjit.debug.visualize_array_sharding(meshjit.device_put(np.zeros((4, 4)), meshjit.devices()[3]))
    output = capsys.readouterr().out
    assert "CPU 3" in output and output.count("CPU") == 1


def test_other_sharding_classes(capsys):
    sharding = PositionalSharding(meshjit.devices()).reshape(4, 2).replicate(0)
    meshjit.debug.visualize_array_sharding(meshjit.device_put(np.zeros((8, 8)), sharding))
    output = capsys.readouterr().out
    assert "CPU 0,2,4,6" in output and "CPU 1,3,5,7" in output


def test_colour_on_a_colour_terminal(mesh_2x4):
    console = Console(file=io.StringIO(), force_terminal=True, color_system="truecolor", width=80)
    visualize_sharding((8, 8), NamedSharding(mesh_2x4, P("x", "y")), console=console)
    output = console.file.getvalue()
    assert "\x1b[" in output and "48;2;" in output  # background colours
    assert "┌" not in output  # coloured cells have no box lines, as in JAX
    for device_id in range(8):
        assert f"CPU {device_id}" in output


def test_colour_can_be_turned_off(mesh_2x4):
    console = Console(file=io.StringIO(), force_terminal=True, color_system="truecolor", width=80)
    visualize_sharding((8, 8), NamedSharding(mesh_2x4, P("x", "y")), use_color=False, console=console)
    assert "48;2;" not in console.file.getvalue()
