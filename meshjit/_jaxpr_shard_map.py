"""A ``manual_computation`` op (shard_map's) as JAX's ``shard_map`` equation: JAX's parameters
(check_vma, in_specs, jaxpr, mesh, newly_manual_axes, out_specs), and inside the body the
``pvary`` casts JAX stages when an op mixes values varying along different manual axes."""

from __future__ import annotations

from meshjit.ir import Op, TensorSharding
from meshjit.runtime.partition_spec import PartitionSpec

from ._jaxpr import JaxprEqn, ShapedArray, Var

# NOTE: ops that take values of different varying axes without JAX's pvary: per-device
# collectives, control flow (JAX casts their carries itself) and shard_map
_NO_CASTS = frozenset({"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "collective_permute", "pvary",
                       "axis_index", "cond", "while", "scan", "manual_computation"})


class _AxisSet(frozenset):
    """A frozenset of axis names printed in sorted order, as JAX's jaxprs show them."""

    def __repr__(self) -> str:
        return "frozenset({" + ", ".join(repr(name) for name in sorted(self)) + "})"


class _Name(str):
    """A name JAX's jaxpr parameters print bare (``axis_name=a``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str(self)


def _spec(sharding: TensorSharding, manual_axes, length: int | None = None) -> PartitionSpec:
    """The PartitionSpec a manual_computation's sharding stands for: ``length`` entries when the
    out_spec's length is known, else without trailing Nones."""
    entries = [tuple(axis.name for axis in dim.axes if axis.name in manual_axes) for dim in sharding.dims]
    while entries and not entries[-1] and (length is None or len(entries) > length):
        entries.pop()
    unreduced = {axis.name for axis in sharding.unreduced}
    return PartitionSpec(*(None if not axes else axes[0] if len(axes) == 1 else axes for axes in entries),
                         unreduced=unreduced)


def _spec_length(builder, result) -> int | None:
    sharding = builder.types.get(result.id)
    return None if sharding is None else sharding.spec_length


def _outer_mesh(builder, op: Op):
    """The abstract mesh the shard_map's operands or results are typed on."""
    for value in (*op.operands, *op.results):
        sharding = builder.types.get(value.id)
        if sharding is not None and not sharding.mesh.empty:
            return sharding.mesh
    return None


def shard_map_body(builder, op: Op) -> tuple[list, dict]:
    """(the body's jaxpr as the only region, the shard_map equation's parameters)."""
    manual_axes = tuple(op.attrs["manual_axes"])
    check_vma = bool(op.attrs.get("check_vma", True))
    saved = builder.check_vma, builder.in_body
    builder.check_vma, builder.in_body = check_vma, True
    try:
        body = builder.sub_jaxpr(op.regions[0])
    finally:
        builder.check_vma, builder.in_body = saved
    if not check_vma:  # NOTE: without check_vma, JAX's body types carry no varying axes
        for var in _body_vars(body):
            var.aval = ShapedArray(var.aval.shape, var.aval.dtype, var.aval.weak_type)
    params = {"check_vma": check_vma,
              "in_specs": tuple(_spec(sharding, manual_axes) for sharding in op.attrs["in_shardings"]),
              "jaxpr": body,
              "newly_manual_axes": _AxisSet(manual_axes),
              "out_specs": tuple(_spec(sharding, manual_axes, _spec_length(builder, result))
                                 for sharding, result in zip(op.attrs["out_shardings"], op.results))}
    mesh = _outer_mesh(builder, op)
    if mesh is not None:
        params["mesh"] = mesh
    return [body], params


def _body_vars(jaxpr) -> list:
    found = list(jaxpr.invars)
    for eqn in jaxpr.eqns:
        found.extend(var for var in eqn.outvars if isinstance(var, Var))
    return found


def pvary_casts(op: Op, invars: list, types: dict, eqns: list) -> list:
    """``invars`` with each operand varying along fewer manual axes than the others cast by a
    ``pvary`` equation (appended to ``eqns``), as JAX stages it under check_vma."""
    if op.name in _NO_CASTS or len(invars) < 2:
        return invars
    shardings = [types.get(value.id) for value in op.operands]
    if any(sharding is None for sharding in shardings):
        return invars
    union = frozenset().union(*(sharding.varying for sharding in shardings))
    cast = []
    for atom, sharding in zip(invars, shardings):
        missing = union - sharding.varying
        if not missing:
            cast.append(atom)
            continue
        order = sharding.mesh.axis_names
        varying = type(sharding)(sharding.mesh, sharding.dims, sharding.unreduced, sharding.reduced, union)
        aval = atom.aval
        var = Var(ShapedArray(aval.shape, aval.dtype, aval.weak_type, varying))
        eqns.append(JaxprEqn("pvary", [atom], [var], {"axes": tuple(axis for axis in order if axis in missing)}))
        cast.append(var)
    return cast


def collective_equation(op: Op, invars: list, types: dict, check_vma: bool):
    """JAX's equation for a per-device collective of a shard_map body (None for other ops): a
    sum over axes is ``psum_invariant`` under check_vma (``psum`` without), a max or min
    ``pmax``/``pmin``; an all_gather is tiled along its dim."""
    axes = tuple(op.attrs.get("axes", ()))
    if op.name == "all_reduce":
        reduction = op.attrs.get("reduction", "sum")
        if reduction == "sum" and check_vma:
            return "psum_invariant", invars, {"axes": axes}
        return {"sum": "psum", "max": "pmax", "min": "pmin"}.get(reduction, reduction), invars, \
            {"axes": axes, "axis_index_groups": None}
    if op.name == "axis_index":
        return "axis_index", invars, {"axis_name": _Name(op.attrs["axis"])}
    if op.name == "all_gather":
        sharding = types.get(op.operands[0].id)
        size = 1
        for name in axes:
            size *= sharding.mesh.shape[name] if sharding is not None and name in sharding.mesh.shape else 1
        return "all_gather", invars, {"all_gather_dimension": int(op.attrs["dim"]), "axis_index_groups": None,
                                      "axis_name": axes, "axis_size": size, "tiled": True}
    return None
