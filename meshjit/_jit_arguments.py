"""How jit names and lays out its arguments: labels and IR names from pytree paths, each
argument's IR sharding over the meshes named so far, and the AUTO entries' search request."""

from __future__ import annotations



from meshjit.compiler.search.auto_sharding import SearchRequest, open_sharding
from meshjit.runtime.sharding import AUTO, SingleDeviceSharding

from ._shardings import (
    as_named_sharding,
    mesh_attr,
    to_ir_sharding,
)


def path_text(path) -> str:
    return "".join(f"[{entry!r}]" for entry in path)


def argument_label(path, names: list[str]) -> str:
    """A dynamic leaf as error messages name it: ``x``, ``params['w']``, ``t[0]``."""
    head = names[path[1]] if path[0] == 0 and path[1] < len(names) else str(path[1])
    return head + "".join(f"[{entry!r}]" for entry in path[2:])


def argument_hint(path, names: list[str]) -> str | None:
    """A readable argument name from its pytree path: ``x``, ``params_w``, ``layers_0_b``."""
    if len(path) < 2:
        return None
    head = names[path[1]] if path[0] == 0 and path[1] < len(names) else str(path[1])
    text = "_".join([head] + [str(entry) for entry in path[2:]])
    return text if text.replace("_", "a").isalnum() and not text[0].isdigit() else None


def ir_mesh_name(mesh, meshes: dict) -> str:
    """The IR name of ``mesh`` in ``meshes``, added when new."""
    attr = mesh_attr(mesh)
    name = next((key for key, value in meshes.items() if value == attr), None)
    if name is None:
        name = "mesh" if not meshes else f"mesh_{len(meshes)}"
        meshes[name] = attr
    return name


def ir_arg_sharding(sharding, rank: int, meshes: dict):
    if sharding is None or isinstance(sharding, SingleDeviceSharding):
        return None
    if isinstance(sharding, AUTO):
        return open_sharding(ir_mesh_name(sharding.mesh, meshes), rank)
    named = as_named_sharding(sharding, rank, "jit in_shardings")
    return to_ir_sharding(named, rank, ir_mesh_name(named.mesh, meshes))


def checked_budget(budget):
    if budget is None:
        return None
    if isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0:
        raise ValueError(f"jit memory_budget_bytes must be a positive int (bytes per device) or None, "
                         f"got {budget!r}")
    return budget


def search_request(auto_args, auto_results, requested_in, requested_out, meshes, budget):
    """The automatic sharding search the AUTO entries ask for (None when there are none)."""
    autos = [requested_in[index] for index in auto_args] + [requested_out[index] for index in auto_results]
    if not autos:
        return None
    names = {ir_mesh_name(auto.mesh, meshes) for auto in autos}
    if len(names) > 1:
        raise ValueError(f"jit: every AUTO in in_shardings and out_shardings must name the same mesh, got "
                         f"{len(names)} different meshes")
    return SearchRequest(auto_args, auto_results, names.pop(), memory_budget_bytes=budget)
