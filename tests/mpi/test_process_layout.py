"""The bookkeeping of multi-process runs, without MPI: which block of a mesh a process holds, who
meets in each collective, which layouts are refused, and jitted programs whose collectives
stay inside a (simulated) process running on that block."""

from __future__ import annotations

import numpy as np
import pytest

import meshjit
import meshjit.numpy as jnp
from meshjit.runtime.devices import CpuDevice
from meshjit.runtime.process_layout import ProcessLayout, process_layout
from meshjit.sharding import Mesh, NamedSharding
from meshjit.sharding import PartitionSpec as P


def layout_of(process_grid, this_process: int, axis_names=("x", "y")) -> ProcessLayout:
    """The layout of a mesh whose device at each position belongs to ``process_grid``'s process."""
    grid = np.asarray(process_grid)
    devices = np.empty(grid.shape, dtype=object)
    for number, position in enumerate(np.ndindex(grid.shape)):
        devices[position] = CpuDevice(number, int(grid[position]))
    return ProcessLayout(Mesh(devices, axis_names[:grid.ndim]), grid, this_process)


def test_rows_per_process():
    layout = layout_of([0, 0, 0, 0, 1, 1, 1, 1], 1, ("x",))
    assert layout.block == ((4, 5, 6, 7),) and layout.local_shape == (4,)
    assert layout.crosses((0,))
    group = layout.group((0,))
    assert group.processes == (0, 1) and group.rank == 1
    assert group.members == ((0, 1, 2, 3), (4, 5, 6, 7))
    assert group.owner_of(5) == 1


def test_four_processes_on_a_grid():
    layout = layout_of([[0, 0, 1, 1], [2, 2, 3, 3]], 3)
    assert layout.block == ((1,), (2, 3)) and layout.local_shape == (1, 2)
    assert layout.group((1,)).processes == (2, 3)
    assert layout.group((0,)).processes == (1, 3)
    both = layout.group((0, 1))
    assert both.processes == (0, 1, 2, 3) and both.members[3] == (6, 7)
    # the first listed axis is major: over (y, x) process 3 holds y in {2, 3} at x = 1
    assert layout.group((1, 0)).members[layout.group((1, 0)).rank] == (5, 7)
    np.testing.assert_array_equal(layout.axis_index(1), [[2, 3]])
    np.testing.assert_array_equal(layout.partition_id(), [[6, 7]])


def test_axes_inside_the_block_do_not_cross():
    layout = layout_of([[0, 0, 0, 0], [1, 1, 1, 1]], 0)
    assert not layout.crosses((1,)) and layout.crosses((0,)) and layout.crosses((1, 0))


def test_interleaved_positions_are_a_grid_too():
    layout = layout_of([0, 1, 0, 1, 0, 1, 0, 1], 0, ("x",))
    assert layout.block == ((0, 2, 4, 6),)
    assert layout.group((0,)).members == ((0, 2, 4, 6), (1, 3, 5, 7))


def test_each_members_owner_is_the_process_listing_it():
    grids = [[0, 1, 0, 1, 0, 1, 0, 1], [[0, 0, 1, 1], [2, 2, 3, 3]], [[1, 0, 1, 0], [3, 2, 3, 2]]]
    for grid in grids:
        axis_names = ("x",) if np.ndim(grid) == 1 else ("x", "y")
        for axes in [(0,)] if np.ndim(grid) == 1 else [(0,), (1,), (0, 1), (1, 0)]:
            group = layout_of(grid, 0, axis_names).group(axes)
            for member in range(len(group.owners)):
                # the definition: the rank whose members list it
                assert group.owner_of(member) == next(rank for rank, held in enumerate(group.members)
                                                      if member in held)


def test_layouts_that_are_not_a_grid_are_refused():
    with pytest.raises(ValueError, match="tile it as a grid of equal blocks"):
        layout_of([[0, 0, 1, 1], [0, 1, 1, 0]], 0)
    with pytest.raises(ValueError, match="overlap or differ in size"):
        layout_of([0, 0, 0, 0, 0, 0, 1, 1], 0, ("x",))


@pytest.mark.usefixtures("restore_runtime_state", "two_processes")
class TestSimulatedProcessZero:
    """Process 0 of a simulated two-process job runs programs on its row of a 2 x 4 mesh."""

    def test_a_mesh_of_local_devices_needs_no_layout(self):
        assert process_layout(Mesh(np.array(meshjit.local_devices()), ("x",))) is None

    def test_jit_runs_on_the_local_block(self):
        mesh = Mesh(np.array(meshjit.devices()).reshape(2, 4), ("x", "y"))
        assert process_layout(mesh).local_shape == (1, 4)
        value = np.arange(8 * 16, dtype=np.float32).reshape(8, 16)
        array = meshjit.device_put(value, NamedSharding(mesh, P("x", "y")))
        # an all_reduce over y stays inside process 0's row; nothing crosses to process 1
        result = meshjit.jit(lambda a: jnp.sum(a * 2, axis=1))(array)
        assert not result.is_fully_addressable
        for shard in result.addressable_shards:
            np.testing.assert_array_equal(np.asarray(shard.data), (value * 2).sum(axis=1)[shard.index])
