"""Simulated CPU devices of this process, and the process's place in a multi-process job."""

from __future__ import annotations

from dataclasses import dataclass

from meshjit.ir.config import config


@dataclass(frozen=True, slots=True)
class CpuDevice:
    """One simulated CPU device; ``id`` is global across processes."""

    id: int
    process_index: int = 0

    platform = "cpu"
    device_kind = "cpu"

    @property
    def local_hardware_id(self) -> int:
        return self.id

    def __repr__(self) -> str:
        return f"CpuDevice(id={self.id})"

    def __str__(self) -> str:
        return f"cpu:{self.id}"

    def addressable_memories(self):
        return MEMORY_KINDS

    def default_memory(self) -> str:
        return DEFAULT_MEMORY_KIND


# NOTE: the CPU backend addresses the same memory kinds as JAX's; they all live in host RAM here.
MEMORY_KINDS = ("device", "pinned_host", "unpinned_host")
DEFAULT_MEMORY_KIND = "device"


class _Backend:
    """The device table; built on first use so the device count can still be configured."""

    def __init__(self):
        self._devices: tuple[CpuDevice, ...] | None = None
        self.process_index = 0
        self.process_count = 1

    def devices(self) -> tuple[CpuDevice, ...]:
        if self._devices is None:
            count = config.read("num_cpu_devices")
            config.lock("num_cpu_devices", "the devices were created")
            self._devices = tuple(CpuDevice(index) for index in range(count))
        return self._devices

    def install(self, devices, process_index: int, process_count: int) -> None:
        """Replace the device table (used by the MPI backend at initialisation)."""
        self._devices = tuple(devices)
        self.process_index = process_index
        self.process_count = process_count


backend = _Backend()


def devices() -> list[CpuDevice]:
    return list(backend.devices())


def local_devices(process_index: int | None = None) -> list[CpuDevice]:
    wanted = backend.process_index if process_index is None else process_index
    if not 0 <= wanted < backend.process_count:
        raise ValueError(f"local_devices: unknown process_index {wanted}; this job has "
                         f"{backend.process_count} process(es)")
    return [device for device in backend.devices() if device.process_index == wanted]


def device_count() -> int:
    return len(backend.devices())


def local_device_count() -> int:
    return len(local_devices())


def process_index() -> int:
    return backend.process_index


def process_count() -> int:
    return backend.process_count


def is_addressable(device: CpuDevice) -> bool:
    return device.process_index == backend.process_index


def check_memory_kind(memory_kind: str | None) -> str:
    """The memory kind to use; raises ValueError for kinds a CPU device cannot address."""
    if memory_kind is None:
        return DEFAULT_MEMORY_KIND
    if memory_kind not in MEMORY_KINDS:
        raise ValueError(
            f"Could not find memory addressable by device cpu. Device cpu can address the "
            f"following memory kinds: {', '.join(MEMORY_KINDS)}. Got memory kind: {memory_kind}"
        )
    return memory_kind
