"""The executable format between the compiler and the runtime.

A Plan is a list of steps over numbered buffer slots; loop and branch steps hold nested plans
(with slots of their own) for their regions. Every buffer holds one per-device value
for all of this process's devices at once, as a numpy array whose leading dims are the mesh's
axes: a dim is the axis's size where the value differs along that axis and 1 where every
device along it holds the same copy (so replicas are stored and computed once, and numpy
broadcasting lines values up). The local (per-device) dims follow.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class KernelStep:
    """``outputs = function(*inputs)`` on slots; ``name`` says what it computes (for profiles)."""

    name: str
    function: Callable
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


@dataclass(frozen=True)
class CollectiveStep:
    """An in-process collective over mesh axes (positions into the mesh's axes)."""

    kind: str
    axes: tuple[int, ...]
    input: int
    output: int
    params: dict = field(default_factory=dict)


@dataclass(frozen=True)
class FreeStep:
    """Drop the buffers of slots no later step reads."""

    slots: tuple[int, ...]


@dataclass(frozen=True)
class ScanStep:
    """A loop over a nested plan: ``body`` maps (consts, carries, x slices) to (carries, y
    slices), ``length`` times, on ``inputs`` = consts, initial carries, xs; ``outputs`` = final
    carries, ys. Scanned buffers have the loop dim right after the ``lead`` mesh dims; ys are
    written in place into one buffer each (``ys_types``: their per-step local shape and numpy
    dtype, for a loop of length 0). With ``unroll`` > 1, ``unrolled`` runs that many steps per
    trip: it takes the consts, the carries and each step's x slices in turn, and gives the
    carries and each step's y slices; the last ``length % unroll`` steps run ``body``."""

    body: Plan
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    num_consts: int
    num_carry: int
    length: int
    reverse: bool
    lead: int
    ys_types: tuple[tuple[tuple[int, ...], str], ...] = ()
    unroll: int = 1
    unrolled: Plan | None = None


@dataclass(frozen=True)
class WhileStep:
    """``while cond(consts, carries): carries = body(consts, carries)`` over nested plans; the
    predicate is the same on every device."""

    cond: Plan
    body: Plan
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    num_consts: int


@dataclass(frozen=True)
class CondStep:
    """Run ``branches[clamp(index)]`` on ``inputs``; the index slot is the same on every
    device."""

    branches: tuple[Plan, ...]
    index: int
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


@dataclass(frozen=True)
class Plan:
    """``mesh_shape`` gives the leading dims; ``arg_varying``/``result_varying`` say along which
    mesh axes each argument and result differs (the rest of its leading dims are 1)."""

    mesh_shape: tuple[int, ...]
    num_slots: int
    arg_slots: tuple[int, ...]
    arg_varying: tuple[tuple[int, ...], ...]
    result_slots: tuple[int, ...]
    result_varying: tuple[tuple[int, ...], ...]
    steps: tuple
    description: str = ""
