"""Shared fixtures: the test meshes, x64 on/off, a simulated two-process job, a ``jax`` alias.

Runtime and API test modules opt into ``restore_runtime_state`` with
``pytestmark = pytest.mark.usefixtures("restore_runtime_state")`` so the IR tests stay free of
runtime imports.
"""

from __future__ import annotations

import math
import os
import sys

import numpy as np
import pytest

# NOTE: the suite compiles kernels on the calling thread, as a program did before tiers: what a
# test measures or inspects is the kernel, and no worker process runs between tests. The tier
# tests (tests/compiler/test_tier*.py) set the modes they test.
os.environ.setdefault("MESHJIT_COMPILE", "sync")

# The meshes the runtime is tested on, by name: shape and axis names.
MESH_LAYOUTS = {
    "1": ((1,), ("x",)),
    "8": ((8,), ("x",)),
    "2x4": ((2, 4), ("x", "y")),
    "4x2": ((4, 2), ("x", "y")),
    "2x2x2": ((2, 2, 2), ("x", "y", "z")),
}


@pytest.fixture
def mesh_of():
    """``mesh_of("2x4")``: a Mesh of the first devices in the layout named in MESH_LAYOUTS."""
    import meshjit
    from meshjit.sharding import Mesh

    def build(name: str):
        shape, axis_names = MESH_LAYOUTS[name]
        devices = np.array(meshjit.devices()[:math.prod(shape)], dtype=object).reshape(shape)
        return Mesh(devices, axis_names)

    return build


@pytest.fixture
def mesh_2x4(mesh_of):
    return mesh_of("2x4")


@pytest.fixture
def mesh_2x2x2(mesh_of):
    return mesh_of("2x2x2")


@pytest.fixture
def mesh_8(mesh_of):
    return mesh_of("8")


@pytest.fixture
def restore_runtime_state():
    """Undo what a test does to process-wide state: set_mesh, ``with mesh:``, jax_enable_x64 and
    jax_threefry_partitionable."""
    from meshjit.runtime.mesh import _context

    from meshjit import config

    global_mesh, stack = _context.global_mesh, list(_context.stack)
    x64 = config.read("jax_enable_x64")
    partitionable = config.read("jax_threefry_partitionable")
    yield
    _context.global_mesh = global_mesh
    _context.stack[:] = stack
    config.update("jax_enable_x64", x64)
    config.update("jax_threefry_partitionable", partitionable)


@pytest.fixture
def x64(restore_runtime_state):
    """Run the test with ``jax_enable_x64`` on; restore_runtime_state turns it back."""
    import meshjit

    meshjit.config.update("jax_enable_x64", True)
    yield


@pytest.fixture
def two_processes():
    """Pretend to be process 0 of a two-process job: devices 0-3 are local, 4-7 belong to process 1.

    Yields the new global device list; build meshes from it, not from devices made earlier.
    """
    from meshjit.runtime.devices import CpuDevice, backend

    import meshjit

    meshjit.devices()  # NOTE: create the real table first so it can be put back
    saved = (backend.devices(), backend.process_index, backend.process_count)
    count = len(saved[0])
    backend.install([CpuDevice(index, index * 2 // count) for index in range(count)], 0, 2)
    yield meshjit.devices()
    backend.install(*saved)


@pytest.fixture
def jax_alias(monkeypatch):
    """Let ``from jax.sharding import Mesh`` in verbatim JAX examples resolve to meshjit.

    ``import meshjit as jax`` binds the name only; import statements look modules up by name,
    so the examples' ``from jax.sharding import ...`` lines need the module table to say so.
    """
    import meshjit
    import meshjit.sharding

    monkeypatch.setitem(sys.modules, "jax", meshjit)
    monkeypatch.setitem(sys.modules, "jax.sharding", meshjit.sharding)
    return meshjit


def pytest_addoption(parser):
    parser.addoption(
        "--update-goldens", action="store_true", default=False,
        help="rewrite the expected part of golden files (tests/golden/<pass>/*.mjir) from the "
             "current output, for review with git diff",
    )
