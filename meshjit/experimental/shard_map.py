"""``jax.experimental.shard_map``: the pre-0.8 spelling of ``jax.shard_map``, kept for ported code.

Reading ``shard_map`` from this module warns (DeprecationWarning) as JAX 0.10.2 does; the
function takes the old positional signature and ``check_rep`` (now ``check_vma``)."""

from __future__ import annotations

import warnings

from meshjit.shard_map_api import shard_map as _shard_map

_MESSAGE = "jax.experimental.shard_map is deprecated in v0.8.0. Used jax.shard_map instead."


def _legacy_shard_map(f, mesh, in_specs, out_specs, check_rep=True):
    """``jax.shard_map(f, mesh=..., in_specs=..., out_specs=..., check_vma=check_rep)``."""
    return _shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=check_rep)


_legacy_shard_map.__name__ = _legacy_shard_map.__qualname__ = "shard_map"


def __getattr__(name: str):
    if name == "shard_map":
        warnings.warn(_MESSAGE, DeprecationWarning, stacklevel=2)
        return _legacy_shard_map
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
