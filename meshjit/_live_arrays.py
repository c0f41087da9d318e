"""jax.live_arrays: the Arrays this process holds that have not been deleted."""

from __future__ import annotations

import gc

from meshjit.runtime.array import Array


def live_arrays(platform: str | None = None) -> list[Array]:
    """Every meshjit Array alive in this process and not deleted, as ``jax.live_arrays``
    (meshjit has one platform, ``cpu``). Found by walking the garbage collector's objects, so
    creating an Array costs nothing extra; this call is for debugging memory, not for loops."""
    if platform not in (None, "cpu"):
        raise RuntimeError(f"Unknown backend: '{platform}' requested, but no platforms that are instances of "
                           f"{platform} are present. Platforms present are: cpu")
    return [value for value in gc.get_objects() if type(value) is Array and not value.is_deleted()]
