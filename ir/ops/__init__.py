"""The IR's ops, one module per family. A family names its ops once (``OPS``) and registers,
for those names, their shape rules and numpy reference implementations; the compiler's rules
for the same names live in ``compiler/rules/<family>.py``.

``FAMILIES`` maps each family to its ops; a test walks families x registries.
"""

from __future__ import annotations

from . import (
    barriers, callbacks, collectives, creation, debug, dot, elementwise, fft, indexing, layout, linalg, random,
    reductions, regions, windows,
)

FAMILIES: dict[str, tuple[str, ...]] = {
    module.__name__.rsplit(".", 1)[1]: module.OPS
    for module in (elementwise, creation, layout, dot, reductions, indexing, windows, random,
                   regions, collectives, barriers, linalg, fft, debug, callbacks)
}

# NOTE: the 16-bit floats compute in f32 in every family's arithmetic (imported last: it
# names ops of several families).
from ..narrow_floats import COMPUTED_IN_FLOAT32, computing_in_float32  # noqa: E402
from ..reference import reference_impls  # noqa: E402

reference_impls.wrap(computing_in_float32, *sorted(COMPUTED_IN_FLOAT32))

ALL_OPS: tuple[str, ...] = tuple(sorted(name for names in FAMILIES.values() for name in names))

# Ops that own regions; every other op must come without them.
REGION_OPS: tuple[str, ...] = regions.OPS

# Ops that do something besides computing their results (debug.has_effect also looks into regions).
EFFECT_OPS = debug.EFFECT_OPS
has_effect = debug.has_effect

# Ops that exist only in per-device (partitioned) programs.
COLLECTIVE_OPS: tuple[str, ...] = collectives.OPS


def family_of(op_name: str) -> str:
    """The family that defines ``op_name``."""
    for family, names in FAMILIES.items():
        if op_name in names:
            return family
    raise KeyError(f"op {op_name!r} belongs to no family; families: {sorted(FAMILIES)}")
