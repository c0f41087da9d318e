"""The one closure a shard_map body may not make: over an array whose type lives on a mesh with
Explicit axes (a committed Array or an outer Tracer), as in JAX, where it is not implemented
either; the workaround is to pass the array to shard_map as an argument."""

from __future__ import annotations

import numpy as np
from meshjit.ir.dtypes import to_numpy

from ..sharding.sharding_types import ShardingType, context_abstract_mesh, format_type


def check_explicit_closure(sharding: ShardingType, shape, dtype: str, where: str) -> None:
    """Raise NotImplementedError when a value of type ``sharding`` on another mesh than the
    context's enters a body whose context mesh is Manual on some axes and Auto on the others
    (a shard_map body), and the value's mesh has Explicit axes. ``where`` is the source location
    text to append."""
    context = context_abstract_mesh()
    outer = sharding.mesh
    if context is None or outer.empty or outer == context:
        return
    if not context.manual_axes or context.explicit_axes or not outer.explicit_axes:
        return
    array = format_type(shape, np.dtype(to_numpy(dtype)), sharding, short=True, mesh_axis_types=True)
    raise NotImplementedError(
        f"shard_map: the body closes over an array of type {array}, which lives on a mesh with "
        f"Explicit axes {outer.explicit_axes}; closing over such arrays inside shard_map is not "
        f"implemented (in JAX either). Pass the array to shard_map as an argument, with an "
        f"in_specs entry for it, instead{where}"
    )
