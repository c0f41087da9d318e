"""Collectives over a vmap axis (``vmap(f, axis_name="i")`` with ``lax.psum(x, "i")`` inside).

While vmap traces ``f`` one example at a time, a collective naming its axis is recorded as a
``vmap_collective`` op (attributes ``kind`` and ``axis_name``; it never reaches the compiler).
The vmap owning the axis rewrites it over the batch dim: psum is a sum over the batch (the same
for every example), all_gather stacks the batch, axis_index is an iota, ppermute moves examples.
Other transformations re-stage it on their values (an inner vmap of another axis, autodiff).
"""

from __future__ import annotations

import numpy as np
from meshjit.ir import TensorType

from .. import lax_ops as lax
from ..operands import as_operand, dtype_of, shape_of
from ..trace import stage
from .batching import move_dim

MARKER = "vmap_collective"
KINDS = ("psum", "pmax", "pmin", "all_gather", "psum_scatter", "ppermute", "axis_index")


def result_type(kind: str, operand: TensorType | None, attrs: dict, size: int) -> TensorType:
    """A collective's per-example result type for a per-example operand type."""
    if kind == "axis_index":
        return TensorType((), "i32")
    shape = list(operand.shape)
    if kind == "all_gather":
        if attrs["tiled"]:
            shape[attrs["axis"]] *= size
        else:
            shape.insert(attrs["axis"], size)
    elif kind == "psum_scatter":
        if attrs["tiled"]:
            shape[attrs["dimension"]] //= size
        else:
            del shape[attrs["dimension"]]
    return operand.with_shape(shape)


def stage_collective(kind: str, operand, axis_name, size: int, **attrs):
    """Record a collective over vmap axis ``axis_name`` (of ``size`` examples) on one example."""
    attrs = {"kind": kind, "axis_name": axis_name, "size": size, **attrs}
    operands = [] if operand is None else [as_operand(operand)]
    operand_type = None if operand is None else TensorType(tuple(shape_of(operands[0])),
                                                           dtype_of(operands[0]).name)
    weak = bool(operands) and dtype_of(operands[0]).weak
    return stage(MARKER, operands, [result_type(kind, operand_type, attrs, size)], attrs,
                 weak_types=[weak])[0]


def restage(op, operand, dim: int | None):
    """``op`` (a collective over another vmap's axis) on a value batched at ``dim`` by this vmap:
    the batch dim goes first and the collective's dims shift past it."""
    attrs = dict(op.attrs)
    if dim is None:
        return [stage_collective(attrs.pop("kind"), operand, attrs.pop("axis_name"), attrs.pop("size"),
                                 **attrs)], [None]
    operand = move_dim(operand, dim, 0)
    kind = attrs.pop("kind")
    for name in ("axis", "dimension"):
        if name in attrs:
            attrs[name] += 1
    return [stage_collective(kind, operand, attrs.pop("axis_name"), attrs.pop("size"), **attrs)], [0]


# --- the owning vmap's rewrite ---------------------------------------------------------------------


def rewrite(op, operands, dims, size):
    """``op`` (a collective over this vmap's axis) as ops over the batch dim."""
    kind = op.attrs["kind"]
    if kind == "axis_index":
        return [lax.iota("i32", size)], [0]
    (operand,), (dim,) = operands, dims
    return _REWRITES[kind](op.attrs, operand, dim, size)


def _reduce(reduction: str):
    def rewrite_reduction(attrs, operand, dim, size):
        if dim is None:
            if reduction != "sum":
                return [operand], [None]
            return [lax.mul(operand, lax.full(shape_of(operand), size, dtype_of(operand).name))], [None]
        name = {"sum": "reduce_sum", "max": "reduce_max", "min": "reduce_min"}[reduction]
        return [getattr(lax, name)(operand, (dim,))], [None]

    return rewrite_reduction


def _all_gather(attrs, operand, dim, size):
    axis, tiled = attrs["axis"], attrs["tiled"]
    if dim is None:
        shape = shape_of(operand)
        stacked = lax.broadcast_in_dim(operand, (size,) + tuple(shape), tuple(range(1, len(shape) + 1)))
        dim = 0
    else:
        stacked = operand
    # every example gets the whole batch: the batch dim becomes dim ``axis`` of one shared value
    gathered = move_dim(stacked, dim, axis)
    if tiled:
        shape = shape_of(gathered)
        gathered = lax.reshape(gathered, shape[:axis] + (shape[axis] * shape[axis + 1],) + shape[axis + 2:])
    return [gathered], [None]


def _psum_scatter(attrs, operand, dim, size):
    dimension, tiled = attrs["dimension"], attrs["tiled"]
    total = _reduce("sum")(attrs, operand, dim, size)[0][0]
    if not tiled:
        # example j keeps entry j of ``dimension``: that dim is the batch
        return [total], [dimension]
    shape = shape_of(total)
    split = shape[:dimension] + (size, shape[dimension] // size) + shape[dimension + 1:]
    return [lax.reshape(total, split)], [dimension]


def _ppermute(attrs, operand, dim, size):
    # example ``target`` takes example ``source``'s value; untargeted examples get zeros
    operand = move_dim(operand, dim, 0) if dim is not None else lax.broadcast_in_dim(
        operand, (size,) + tuple(shape_of(operand)), tuple(range(1, len(shape_of(operand)) + 1)))
    sources = np.zeros(size, np.int32)
    received = np.zeros(size, bool)
    for source, target in attrs["pairs"]:
        sources[target], received[target] = source, True
    moved = lax.gather_along_axis(operand, sources, 0, mode="clip")
    shape = shape_of(moved)
    mask = lax.broadcast_in_dim(received, shape, (0,))
    zeros = lax.full(shape, 0, dtype_of(operand).name)
    return [lax.select(mask, moved, zeros)], [0]


_REWRITES = {
    "psum": _reduce("sum"), "pmax": _reduce("max"), "pmin": _reduce("min"),
    "all_gather": _all_gather, "psum_scatter": _psum_scatter, "ppermute": _ppermute,
}


# --- the lax functions over a vmap axis ------------------------------------------------------------


def _leaves_map(function, tree):
    import optree

    leaves, treedef = optree.tree_flatten(tree, namespace="meshjit")
    return optree.tree_unflatten(treedef, [function(as_operand(leaf)) for leaf in leaves])


def reduce(x, axis, reduction: str):
    """psum / pmax / pmin of a pytree over vmap axis ``axis`` (bools: psum counts, pmax is any)."""
    kind = {"sum": "psum", "max": "pmax", "min": "pmin"}[reduction]

    def reduce_leaf(leaf):
        is_bool = dtype_of(leaf).name == "bool"
        if is_bool:
            leaf = lax.convert_element_type(leaf, "i32")
        result = stage_collective(kind, leaf, axis.name, axis.size)
        return lax.convert_element_type(result, "bool") if is_bool and reduction != "sum" else result

    return _leaves_map(reduce_leaf, x)


def all_gather(x, axis, *, dim: int, tiled: bool):
    """Every example's leaf, stacked at ``dim`` (or concatenated along it when ``tiled``)."""
    def gather(leaf):
        rank = len(shape_of(leaf)) + (0 if tiled else 1)
        position = dim + rank if dim < 0 else dim
        return stage_collective("all_gather", leaf, axis.name, axis.size, axis=position, tiled=tiled)

    return _leaves_map(gather, x)


def psum_scatter(x, axis, *, dimension: int, tiled: bool):
    """The sum over the examples, of which example ``j`` keeps block ``j`` along ``dimension``."""
    def scatter(leaf):
        shape = shape_of(leaf)
        position = dimension + len(shape) if dimension < 0 else dimension
        expected = shape[position] % axis.size == 0 if tiled else shape[position] == axis.size
        if not expected:
            raise ValueError(f"psum_scatter: dim {position} of an operand of shape {shape} must "
                             f"{'divide by' if tiled else 'equal'} the vmap axis size {axis.size}")
        return stage_collective("psum_scatter", leaf, axis.name, axis.size, dimension=position, tiled=tiled)

    return _leaves_map(scatter, x)


def ppermute(x, axis, pairs):
    """Example ``target`` takes example ``source``'s leaf for each pair; others get zeros."""
    return _leaves_map(lambda leaf: stage_collective("ppermute", leaf, axis.name, axis.size, pairs=pairs), x)


def axis_index(axis):
    return stage_collective("axis_index", None, axis.name, axis.size)


# --- derivatives -------------------------------------------------------------------------------------


def _register_derivatives():
    from ..autodiff.evaluate import emit
    from ...tables import jvp_rules, transpose_rules

    @jvp_rules.register(MARKER)
    def _collective_jvp(op, primals, tangents):
        outputs = emit(op, primals)
        kind, tangent = op.attrs["kind"], tangents[0] if tangents else None
        if kind == "axis_index" or tangent is None:
            return outputs, [None]
        if kind in ("pmax", "pmin"):
            # the tangents of the examples attaining the extreme, averaged over them
            dtype = dtype_of(primals[0]).name
            hit = lax.convert_element_type(lax.eq(primals[0], outputs[0]), dtype)
            name, size = op.attrs["axis_name"], op.attrs["size"]
            count = stage_collective("psum", hit, name, size)
            return outputs, [lax.div(stage_collective("psum", lax.mul(tangent, hit), name, size), count)]
        return outputs, emit(op, [tangent])

    @transpose_rules.register(MARKER)
    def _collective_transpose(op, cotangents, operands):
        attrs = dict(op.attrs)
        kind, name, size = attrs.pop("kind"), attrs.pop("axis_name"), attrs.pop("size")
        cotangent = cotangents[0]
        if cotangent is None:
            return [None]
        if kind == "psum":
            return [stage_collective("psum", cotangent, name, size)]
        if kind == "all_gather":
            return [stage_collective("psum_scatter", cotangent, name, size, dimension=attrs["axis"],
                                     tiled=attrs["tiled"])]
        if kind == "psum_scatter":
            return [stage_collective("all_gather", cotangent, name, size, axis=attrs["dimension"],
                                     tiled=attrs["tiled"])]
        if kind == "ppermute":
            inverse = tuple((target, source) for source, target in attrs["pairs"])
            return [stage_collective("ppermute", cotangent, name, size, pairs=inverse)]
        raise AssertionError(f"autodiff internal error: {kind} over a vmap axis is not linear")


_register_derivatives()
