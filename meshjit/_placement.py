"""Where a jitted program runs: JAX's commitment rules.

A committed Array (from ``device_put`` to a device or sharding, or any result of a program that
was given a placement) fixes the devices of every program it enters; uncommitted ones (numpy
values, ``jnp.asarray``, ``device_put`` without a target) follow. The devices of all committed
arguments, of ``in_shardings``, of ``out_shardings`` and of the shardings inside the program
must be the same, in the same order, or jit raises ValueError; a committed argument whose
layout differs from its ``in_shardings`` entry raises ValueError too (reshard it with
``device_put`` first). A program on one device runs on the device this decides, and its results
are committed exactly when something was placed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from meshjit.ir import Module
from meshjit.ir.dtypes import to_numpy
from meshjit.runtime.devices import CpuDevice
from meshjit.runtime.devices import devices as all_devices
from meshjit.runtime.sharding import Sharding

from ._arguments import ArgSpec


@dataclass(frozen=True)
class Placement:
    """The program's devices (the default device when nothing placed it) and whether its
    results are committed."""

    devices: tuple[CpuDevice, ...]
    committed: bool

    @property
    def device(self) -> CpuDevice:
        """The device a one-device program runs on."""
        return self.devices[0]


def type_text(spec: ArgSpec) -> str:
    return f"{to_numpy(spec.type.dtype).name}[{','.join(str(size) for size in spec.type.shape)}]"


def check_in_shardings(function_name: str, labels: Sequence[str], specs: Sequence[ArgSpec],
                       in_shardings: Sequence[Sharding | None]) -> None:
    """A committed argument must already have the layout its ``in_shardings`` entry asks for
    (equal shardings, or both fully replicated): jit does not move committed data."""
    for label, spec, wanted in zip(labels, specs, in_shardings):
        have = spec.sharding
        if wanted is not None:
            wanted.shard_shape(spec.type.shape)  # raises IndivisibleError naming the shapes
        if wanted is None or have is None or _same_layout(wanted, have, spec.type.rank):
            continue
        raise ValueError(
            f"Sharding passed to jit does not match the sharding on the respective arg. Got jit sharding: "
            f"{wanted},\narg sharding: {have} for arg type: {type_text(spec)} (argument {label} of "
            f"{function_name}; move it first with meshjit.device_put(x, jit_sharding))")


def _same_layout(wanted: Sharding, have: Sharding, rank: int) -> bool:
    if wanted is have or wanted == have:
        return True
    if wanted.is_fully_replicated and have.is_fully_replicated:
        return True
    return wanted.is_equivalent_to(have, rank)


def place(function_name: str, labels: Sequence[str], specs: Sequence[ArgSpec],
          in_shardings: Sequence[Sharding | None], out_shardings: Sequence[Sharding | None],
          module: Module) -> Placement:
    """The program's placement from its arguments' commitments, its in_shardings and
    out_shardings (per flat leaf, None where not given) and the meshes inside ``module``;
    raises ValueError when they name different devices."""
    sources = []  # (device ids, what asked for them in JAX's wording, the sharding if one did)
    for label, spec, wanted in zip(labels, specs, in_shardings):
        sharding = wanted if wanted is not None else spec.sharding
        if sharding is not None:
            sources.append((_ids(sharding), f"argument {label} of {function_name} with shape {type_text(spec)} and",
                            sharding))
    for sharding in out_shardings:
        if sharding is not None:
            sources.append((_ids(sharding), "explicit output sharding", sharding))
    for _, mesh in module.meshes:
        ids = mesh.device_ids if mesh.device_ids is not None else tuple(range(mesh.size))
        sources.append((tuple(ids), "a sharding inside jit (with_sharding_constraint or shard_map)", None))
    if not sources:
        return Placement((all_devices()[0],), committed=False)
    first_ids, first_source, first_sharding = sources[0]
    for ids, source, _ in sources[1:]:
        if ids != first_ids:
            raise ValueError(f"Received incompatible devices for jitted computation. Got {first_source} with "
                             f"device ids {list(first_ids)} on platform CPU and {source} with device ids "
                             f"{list(ids)} on platform CPU")
    if first_sharding is not None:
        return Placement(first_sharding._device_assignment, committed=True)
    table = {device.id: device for device in all_devices()}
    return Placement(tuple(table[device_id] for device_id in first_ids), committed=True)


def _ids(sharding: Sharding) -> tuple[int, ...]:
    return sharding._device_id_tuple
