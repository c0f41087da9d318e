"""The public surface: every name docs/api.md lists exists (and every public name is listed), and
the classes, members and argument names of seeds 000-002 work as written, keywords included."""

from __future__ import annotations

import importlib
import re
import types
from pathlib import Path

import numpy as np
import pytest

import meshjit as jax
from meshjit.sharding import (
    GSPMDSharding,
    Mesh,
    NamedSharding,
    PmapSharding,
    PositionalSharding,
    SingleDeviceSharding,
)
from meshjit.sharding import PartitionSpec as P

pytestmark = pytest.mark.usefixtures("restore_runtime_state")

API_DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"
ROW = re.compile(r"^\| (?P<module>`[\w.]+`|CLI) \| `(?P<name>[^`]+)`.* \| (?P<description>[^|]+) \|$")


def documented_rows() -> list[tuple[str, str, bool]]:
    """(module, name, later) for every table row of docs/api.md."""
    rows = []
    for line in API_DOC.read_text().splitlines():
        match = ROW.match(line)
        if match:
            later = "(later: issue" in match["description"]
            rows.append((match["module"].strip("`"), match["name"], later))
    return rows


def sample_instances() -> dict[str, object]:
    """An instance of each documented class, for attributes that live on instances."""
    devices = jax.devices()
    mesh = Mesh(np.array(devices).reshape(2, 4), ("x", "y"))
    return {
        "Array": jax.device_put(np.zeros(8)),
        "Mesh": mesh,
        "SingleDeviceSharding": SingleDeviceSharding(devices[0]),
        "NamedSharding": NamedSharding(mesh, P("x", "y")),
        "PositionalSharding": PositionalSharding(devices).reshape(2, 4),
        "PmapSharding": PmapSharding.default((8, 2)),
        "GSPMDSharding": GSPMDSharding(devices, "{devices=[2,4]<=[8]}"),
        "PartitionSpec": P("x", "y"),
    }


AVAILABLE = [(module, name) for module, name, later in documented_rows() if not later and module != "CLI"]


def test_the_document_has_rows():
    assert len(AVAILABLE) > 80


@pytest.mark.parametrize("module_name, name", AVAILABLE, ids=[f"{m}.{n}" for m, n in AVAILABLE])
def test_documented_name_exists(module_name, name):
    module = importlib.import_module(module_name)
    owner_name, _, attribute = name.partition(".")
    owner = getattr(module, owner_name)
    if attribute:
        instance = sample_instances().get(owner_name)
        assert hasattr(owner, attribute) or hasattr(instance, attribute), f"{module_name}.{name}"


# Names a facade module holds that are not its API: __future__ imports and names imported only to
# check arguments.
NOT_API = {"annotations", "Array@meshjit.debug"}


@pytest.mark.parametrize("module_name", ["meshjit", "meshjit.sharding", "meshjit.debug", "meshjit.random",
                                         "meshjit.tree", "meshjit.tree_util"])
def test_every_public_name_is_documented(module_name):
    documented = {name.partition(".")[0] for module, name, _ in documented_rows() if module == module_name}
    module = importlib.import_module(module_name)
    public = set()
    for name in dir(module):
        value = getattr(module, name)
        if name.startswith("_") or name in NOT_API or f"{name}@{module_name}" in NOT_API:
            continue
        if isinstance(value, types.ModuleType):
            continue  # submodules appear as others import them; the documented ones are checked above
        public.add(name)
    assert not public - documented, f"undocumented names in {module_name}: {sorted(public - documented)}"


# -- seed 002's classes and members ---------------------------------------------------------------
SEED_MEMBERS = {
    "Sharding": ["addressable_devices", "addressable_devices_indices_map", "device_set", "devices_indices_map",
                 "is_equivalent_to", "is_fully_addressable", "is_fully_replicated", "memory_kind", "num_devices",
                 "shard_shape", "with_memory_kind"],
    "SingleDeviceSharding": ["device_set", "devices_indices_map", "is_fully_addressable", "is_fully_replicated",
                             "memory_kind", "num_devices", "with_memory_kind"],
    "NamedSharding": ["addressable_devices", "device_set", "is_fully_addressable", "is_fully_replicated",
                      "memory_kind", "mesh", "num_devices", "spec", "with_memory_kind"],
    "PositionalSharding": ["device_set", "is_fully_addressable", "is_fully_replicated", "memory_kind",
                           "num_devices", "with_memory_kind"],
    "PmapSharding": ["default", "device_set", "devices", "devices_indices_map", "is_equivalent_to",
                     "is_fully_addressable", "is_fully_replicated", "memory_kind", "num_devices", "shard_shape",
                     "sharding_spec", "with_memory_kind"],
    "GSPMDSharding": ["device_set", "is_fully_addressable", "is_fully_replicated", "memory_kind", "num_devices",
                      "with_memory_kind"],
    "PartitionSpec": ["index"],
    "Mesh": [],
}


@pytest.mark.parametrize("class_name", sorted(SEED_MEMBERS))
def test_seed_002_classes_have_their_members(class_name):
    cls = getattr(jax.sharding, class_name)
    instance = sample_instances().get(class_name)
    for member in SEED_MEMBERS[class_name]:
        assert hasattr(cls, member) or hasattr(instance, member), f"{class_name}.{member}"
    if class_name.endswith("Sharding"):
        assert issubclass(cls, jax.sharding.Sharding)


def test_seed_argument_names_work_as_keywords():
    devices = jax.devices()
    mesh = Mesh(devices=np.array(devices).reshape(2, 4), axis_names=("x", "y"), axis_types=None)
    sharding = NamedSharding(mesh=mesh, spec=P("x", "y"), memory_kind=None)
    assert sharding.devices_indices_map(global_shape=(8, 8)) == sharding.devices_indices_map((8, 8))
    assert sharding.addressable_devices_indices_map(global_shape=(8, 8)) == sharding.devices_indices_map((8, 8))
    assert sharding.shard_shape(global_shape=(8, 8)) == (4, 2)
    assert sharding.is_equivalent_to(other=PositionalSharding(devices=devices, memory_kind=None).reshape(2, 4), ndim=2)
    assert sharding.with_memory_kind(kind="pinned_host").memory_kind == "pinned_host"
    assert PmapSharding.default(shape=(8,), sharded_dim=0, devices=None).num_devices == 8
    value = np.arange(64, dtype=np.float32).reshape(8, 8)
    arrays = [jax.device_put(value[index], device) for device, index in sharding.addressable_devices_indices_map((8, 8)).items()]
    array = jax.make_array_from_single_device_arrays(shape=(8, 8), sharding=sharding, arrays=arrays, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(array), value)
    made = jax.make_array_from_callback(shape=(8, 8), sharding=sharding, data_callback=lambda index: value[index], dtype=None)
    np.testing.assert_array_equal(np.asarray(made), value)
    local = jax.make_array_from_process_local_data(sharding=sharding, local_data=value, global_shape=None)
    np.testing.assert_array_equal(np.asarray(local), value)
    assert P("x", "y").index(value="y") == 1


def test_jax_style_module_access():
    assert jax.sharding.NamedSharding is NamedSharding
    assert jax.sharding.PartitionSpec is P and jax.sharding.P is P
    assert jax.Array is type(jax.device_put(1.0))
    assert callable(jax.debug.visualize_array_sharding)
    assert isinstance(jax.__version__, str)
