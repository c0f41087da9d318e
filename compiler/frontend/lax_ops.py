"""meshjit.lax: the IR primitives by their jax.lax names, with lax's strict typing.

Binary ops need operands of one shape and dtype; a Python scalar takes the other operand's
dtype and shape (as in JAX). Promotion and broadcasting belong to meshjit.numpy, not here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from meshjit.ir import DenseAttr
from meshjit.ir.dtypes import DTYPES, from_numpy

from . import lax_complex
from .precision import Precision as Precision
from .precision import check_precision
from .operands import as_operand, canonical_numpy, dtype_of, is_python_scalar, shape_of
from .sharding_ops import layout_of as _layout_of
from ..sharding.sharding_types import ShardingTypeError, resolve_sharding
from .trace import Tracer, bind, operand_sharding_type


def _operand_and_weak(value):
    """``value`` as an operand and whether it is weakly typed (read first: a Python scalar
    becomes a numpy constant, which has no weak flag)."""
    return as_operand(value), dtype_of(value).weak


def _single(name: str, operands, attrs=None, *, weak_type: bool = False, out_sharding=None):
    out_sharding = None if out_sharding is None else [out_sharding]
    return bind(name, operands, attrs, weak_type=weak_type, out_sharding=out_sharding)[0]


def _ir_dtype(dtype) -> str:
    """An IR dtype name from a numpy dtype, a numpy type or an IR name."""
    if isinstance(dtype, str) and dtype in DTYPES:
        return dtype
    from meshjit.ir.dtypes import canonicalize

    from .operands import x64

    return from_numpy(canonicalize(np.dtype(dtype), x64=x64()))


def _unary(name: str):
    def apply(x):
        x = as_operand(x)
        if name in lax_complex.UNARY and lax_complex.is_complex_operand(x):  # complex: real ops
            return lax_complex.UNARY[name](x)
        return _single(name, [x], weak_type=dtype_of(x).weak)

    apply.__name__ = name
    apply.__doc__ = f"Elementwise ``{name}`` (the IR op of the same name)."
    return apply


def _match_scalars(name: str, x, y):
    """Give Python scalars the other operand's dtype and shape; check the rest match."""
    if is_python_scalar(x) and not is_python_scalar(y):
        x = full(shape_of(y), x, dtype_of(y).name, sharding=_layout_of(y))
    elif is_python_scalar(y) and not is_python_scalar(x):
        y = full(shape_of(x), y, dtype_of(x).name, sharding=_layout_of(x))
    x, y = as_operand(x), as_operand(y)
    if shape_of(x) != shape_of(y) or dtype_of(x).name != dtype_of(y).name:
        raise TypeError(
            f"lax.{name} requires arguments to have the same shape and dtype, got "
            f"{dtype_of(x).name}{list(shape_of(x))} and {dtype_of(y).name}{list(shape_of(y))}"
        )
    return x, y


def _binary(name: str, op_name: str | None = None):
    op_name = op_name or name

    def apply(x, y):
        weak = dtype_of(x).weak and dtype_of(y).weak
        x, y = _match_scalars(name, x, y)
        if op_name == "pow" and lax_complex.is_complex_operand(x):
            return lax_complex.power(x, y)
        return _single(op_name, [x, y], weak_type=weak)

    apply.__name__ = name
    apply.__doc__ = f"Elementwise ``{op_name}`` of two operands of one shape and dtype."
    return apply


def _comparison(direction: str):
    def apply(x, y):
        x, y = _match_scalars(direction, x, y)
        return _single("compare", [x, y], {"direction": direction})

    apply.__name__ = direction
    apply.__doc__ = f"Elementwise ``{direction}`` comparison, giving bool."
    return apply


_UNARY = ("neg abs sign exp exp2 log log1p expm1 tanh logistic sin cos tan sqrt rsqrt cbrt "
          "floor ceil erf erf_inv is_finite square").split()
for _name in _UNARY:
    globals()[_name] = _unary(_name)
bitwise_not = _unary("not")
bitwise_not.__name__ = "bitwise_not"

_BINARY = ("add sub mul div rem pow max min atan2 nextafter shift_left shift_right_arithmetic "
           "shift_right_logical").split()
for _name in _BINARY:
    globals()[_name] = _binary(_name)
bitwise_and = _binary("bitwise_and", "and")
bitwise_or = _binary("bitwise_or", "or")
bitwise_xor = _binary("bitwise_xor", "xor")
_COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
for _name in _COMPARISONS:
    globals()[_name] = _comparison(_name)


def round(x, rounding_method: str = "away_from_zero"):  # noqa: A001 - lax's name
    methods = {0: "away_from_zero", 1: "to_nearest_even"}
    method = methods.get(rounding_method, rounding_method)
    if method not in methods.values():
        raise ValueError(f"lax.round rounding_method must be away_from_zero or to_nearest_even, got {rounding_method!r}")
    x = as_operand(x)
    return _single("round", [x], {"rounding_method": method}, weak_type=dtype_of(x).weak)


def integer_pow(x, y: int):
    if not isinstance(y, int) or isinstance(y, bool):
        raise TypeError(f"lax.integer_pow exponent must be a Python int, got {y!r}")
    x = as_operand(x)
    return _single("integer_pow", [x], {"y": y}, weak_type=dtype_of(x).weak)


def convert_element_type(operand, new_dtype):
    """Cast to ``new_dtype`` (a numpy dtype or IR name); the result is strongly typed (a weak
    operand of that dtype is converted too, as JAX stages it)."""
    return _convert_element_type(operand, new_dtype, weak_type=False)


def _convert_element_type(operand, new_dtype, weak_type: bool = False):
    """``convert_element_type`` that also sets JAX's weak-type flag (as JAX's internal helper).

    meshjit.numpy uses it to give results of weakly typed operands their weak type. A traced
    weak value made strong stages a convert to its own dtype, as JAX's jaxprs show
    (``convert_element_type[new_dtype=int32 weak_type=False]``); made weak, a Tracer is only
    re-wrapped.
    """
    target = _ir_dtype(new_dtype)
    operand = as_operand(operand)
    current = dtype_of(operand)
    if current.name == target and current.weak == weak_type:
        return operand
    if current.name == target and isinstance(operand, Tracer) and weak_type:
        return Tracer(operand.trace, operand.value, weak_type)
    return _single("convert", [operand], {"new_dtype": target}, weak_type=weak_type)


def bitcast_convert_type(operand, new_dtype):
    """Reinterpret the bits of ``operand`` as ``new_dtype``: same width keeps the shape, a
    narrower type adds a minor dim of the width ratio, a wider one consumes it."""
    operand = as_operand(operand)
    target = _ir_dtype(new_dtype)
    if dtype_of(operand).name == target:
        return operand
    return _single("bitcast_convert_type", [operand], {"new_dtype": target})


def fma(a, b, c):
    """``a * b + c`` rounded once (what XLA's CPU backend computes for a multiply feeding an
    add). Not a jax.lax function: meshjit.random uses it to equal JAX's numbers bit for bit."""
    operands = [as_operand(value) for value in (a, b, c)]
    return _single("fma", operands)


def _array_copy(operand):
    """A new array equal to ``operand`` (as JAX's internal ``lax._array_copy``): a same-dtype
    convert, which on a concrete array runs as its own one-op program and returns a new Array."""
    operand = as_operand(operand)
    dtype = dtype_of(operand)
    return _single("convert", [operand], {"new_dtype": dtype.name}, weak_type=dtype.weak)


def select(pred, on_true, on_false):
    on_true, on_false = _match_scalars("select", on_true, on_false)
    return _single("select", [as_operand(pred), on_true, on_false])


def clamp(min, x, max):  # noqa: A002 - lax's argument names
    x = as_operand(x)
    kind = dtype_of(x).name
    bounds = [as_operand(bound, kind) if is_python_scalar(bound) else as_operand(bound) for bound in (min, max)]
    return _single("clamp", [bounds[0], x, bounds[1]], weak_type=dtype_of(x).weak)


# -- creation ----------------------------------------------------------------------------------
def _constant(value):
    """A constant array from a numpy value of an IR dtype, as an op: staged under a trace, and
    run by the eager executor otherwise (so eager results are the executor's arrays)."""
    array = np.asarray(value)
    return _single("constant", [], {"value": DenseAttr.from_array(array)})


def iota(dtype, size: int):
    return broadcasted_iota(dtype, (size,), 0)


def broadcasted_iota(dtype, shape, dimension: int, *, out_sharding=None):
    shape = tuple(int(size) for size in shape)
    sharding = resolve_sharding(out_sharding, len(shape), "broadcasted_iota")
    return _single("iota", [], {"dtype": _ir_dtype(dtype), "shape": shape, "dimension": dimension},
                   out_sharding=sharding)


def full(shape, fill_value, dtype=None, *, sharding=None):
    """An array of ``shape`` filled with ``fill_value`` (a scalar constant broadcast), laid out
    as ``sharding`` when given."""
    shape = tuple(int(size) for size in shape)
    out_sharding = resolve_sharding(sharding, len(shape), "full")
    name = _ir_dtype(dtype) if dtype is not None else dtype_of(fill_value).name
    if is_python_scalar(fill_value) or isinstance(fill_value, (np.ndarray, np.generic)):
        scalar = canonical_numpy(fill_value, name)
        if scalar.ndim:
            raise TypeError(f"lax.full fill_value must be a scalar, got shape {scalar.shape}")
    else:
        scalar = convert_element_type(fill_value, name)
    weak = dtype is None and dtype_of(fill_value).weak
    return _single("broadcast_in_dim", [scalar], {"shape": shape, "broadcast_dimensions": ()}, weak_type=weak,
                   out_sharding=out_sharding)


# -- shape and layout ----------------------------------------------------------------------------
def broadcast_in_dim(operand, shape, broadcast_dimensions, *, out_sharding=None):
    operand, weak = _operand_and_weak(operand)
    shape = tuple(int(s) for s in shape)
    broadcast_dimensions = tuple(broadcast_dimensions)
    unordered = list(broadcast_dimensions) != sorted(broadcast_dimensions)
    if unordered and len(set(broadcast_dimensions)) == len(broadcast_dimensions) == len(shape_of(operand)):
        # as JAX: dims in any order are the operand's dims transposed into increasing order
        order = sorted(range(len(broadcast_dimensions)), key=broadcast_dimensions.__getitem__)
        operand = transpose(operand, order)
        broadcast_dimensions = tuple(sorted(broadcast_dimensions))
    sharding = resolve_sharding(out_sharding, len(shape), "broadcast_in_dim")
    return _single("broadcast_in_dim", [operand], {"shape": shape, "broadcast_dimensions": tuple(broadcast_dimensions)},
                   weak_type=weak, out_sharding=sharding)


def broadcast(operand, sizes):
    """Add leading dims of ``sizes`` (lax.broadcast)."""
    shape = tuple(sizes) + shape_of(operand)
    return broadcast_in_dim(operand, shape, tuple(range(len(sizes), len(shape))))


def reshape(operand, new_sizes, dimensions=None, *, out_sharding=None):
    operand, weak = _operand_and_weak(operand)
    if dimensions is not None:
        operand = transpose(operand, dimensions)
    new_sizes = tuple(int(s) for s in new_sizes)
    sharding = resolve_sharding(out_sharding, len(new_sizes), "reshape")
    return _single("reshape", [operand], {"new_sizes": new_sizes}, weak_type=weak,
                   out_sharding=sharding)


def transpose(operand, permutation):
    operand, weak = _operand_and_weak(operand)
    return _single("transpose", [operand], {"permutation": tuple(permutation)}, weak_type=weak)


def slice(operand, start_indices, limit_indices, strides=None):  # noqa: A001 - lax's name
    operand, weak = _operand_and_weak(operand)
    strides = tuple(strides) if strides is not None else (1,) * len(start_indices)
    attrs = {"start_indices": tuple(start_indices), "limit_indices": tuple(limit_indices), "strides": strides}
    return _single("slice", [operand], attrs, weak_type=weak)


def _index_operands(indices, operand, function: str):
    """One start index per dim of ``operand``, as i32 operands; a miscount is JAX's ValueError."""
    indices = list(indices)
    rank = len(shape_of(operand))
    if len(indices) != rank:
        raise ValueError(f"{function}: the number of start indices ({len(indices)}) must match the number of "
                         f"operand dimensions ({rank}, shape {shape_of(operand)})")
    return [convert_element_type(as_operand(index), "i32") if is_python_scalar(index) else as_operand(index)
            for index in indices]


def dynamic_slice(operand, start_indices, slice_sizes):
    operand, weak = _operand_and_weak(operand)
    if len(tuple(slice_sizes)) != len(shape_of(operand)):
        raise ValueError(f"dynamic_slice: slice_sizes {tuple(slice_sizes)} must have one entry per dim of an "
                         f"operand of shape {shape_of(operand)}")
    return _single("dynamic_slice", [operand, *_index_operands(start_indices, operand, "dynamic_slice")],
                   {"slice_sizes": tuple(slice_sizes)}, weak_type=weak)


def dynamic_update_slice(operand, update, start_indices):
    operand, update = as_operand(operand), as_operand(update)
    indices = _index_operands(start_indices, operand, "dynamic_update_slice")
    return _single("dynamic_update_slice", [operand, update, *indices])


def pad(operand, padding_value, padding_config):
    operand, weak = _operand_and_weak(operand)
    value = as_operand(padding_value, dtype_of(operand).name) if is_python_scalar(padding_value) else as_operand(padding_value)
    config = tuple(tuple(int(part) for part in entry) for entry in padding_config)
    return _single("pad", [operand, value], {"padding_config": config}, weak_type=weak)


def concatenate(operands: Sequence, dimension: int):
    operands = [as_operand(operand) for operand in operands]
    if not operands:
        raise ValueError("lax.concatenate needs at least one operand")
    return _single("concatenate", operands, {"dimension": dimension})


def rev(operand, dimensions):
    operand, weak = _operand_and_weak(operand)
    return _single("rev", [operand], {"dimensions": tuple(dimensions)}, weak_type=weak)


def squeeze(array, dimensions):
    array = as_operand(array)
    return _single("squeeze", [array], {"dimensions": tuple(dimensions)}, weak_type=dtype_of(array).weak)


def expand_dims(array, dimensions):
    array = as_operand(array)
    return _single("expand_dims", [array], {"dimensions": tuple(dimensions)}, weak_type=dtype_of(array).weak)


# -- contraction, reductions, scans -------------------------------------------------------------
def _check_unreduced_dot(lhs, rhs, contracting, sharding) -> None:
    """A dot whose out_sharding is unreduced keeps the sum over its contracting dims pending:
    they must be split identically on both sides, over exactly the unreduced axes (JAX)."""
    if not sharding.unreduced:
        return
    specs = []
    for operand, dims in zip((lhs, rhs), contracting):
        entries = operand_sharding_type(operand).entries()
        specs.append(tuple(entries[dim] for dim in dims))
    lhs_spec, rhs_spec = specs
    if lhs_spec != rhs_spec:
        raise ShardingTypeError(
            f"lhs and rhs contracting dims should be sharded identically when out_sharding provided to "
            f"dot_general mentions unreduced_axes. Got lhs_contracting_spec={lhs_spec}, "
            f"rhs_contracting_spec={rhs_spec}")
    flat = {axis for entry in lhs_spec if entry is not None for axis in ((entry,) if isinstance(entry, str) else entry)}
    if sharding.unreduced != flat:
        raise ShardingTypeError(
            f"out_sharding's unreduced axes should be equal to the contracting specs. Got unreduced "
            f"axes={sharding.unreduced} and contracting spec={lhs_spec}")


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None, *, out_sharding=None):
    """``dimension_numbers = ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))``;
    ``out_sharding`` gives the result's sharding (explicit mode), which may leave the sum over
    the contracting dims pending (``P(..., unreduced={...})``)."""
    check_precision(precision)
    (lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch) = dimension_numbers
    attrs = {"contracting_dims": (tuple(lhs_contracting), tuple(rhs_contracting)),
             "batch_dims": (tuple(lhs_batch), tuple(rhs_batch))}
    if preferred_element_type is not None:
        attrs["preferred_element_type"] = _ir_dtype(preferred_element_type)
    lhs, rhs = as_operand(lhs), as_operand(rhs)
    rank = len(shape_of(lhs)) + len(shape_of(rhs)) - 2 * len(lhs_contracting) - len(lhs_batch)
    sharding = resolve_sharding(out_sharding, rank, "dot_general")
    if sharding is not None:
        _check_unreduced_dot(lhs, rhs, (lhs_contracting, rhs_contracting), sharding)
    return _single("dot_general", [lhs, rhs], attrs, out_sharding=sharding)


def dot(lhs, rhs, precision=None, preferred_element_type=None, *, out_sharding=None):
    """Vector/matrix dot product of rank-1 or rank-2 operands."""
    lhs_rank = len(shape_of(lhs))
    if lhs_rank not in (1, 2) or len(shape_of(rhs)) not in (1, 2):
        raise TypeError(f"lax.dot needs rank-1 or rank-2 operands, got shapes {shape_of(lhs)} and {shape_of(rhs)}")
    return dot_general(lhs, rhs, (((lhs_rank - 1,), (0,)), ((), ())), precision, preferred_element_type,
                       out_sharding=out_sharding)


def _reduction(name: str):
    def apply(operand, axes):
        operand, weak = _operand_and_weak(operand)
        return _single(name, [operand], {"axes": tuple(axes)}, weak_type=weak)

    apply.__name__ = name
    apply.__doc__ = f"``{name}`` over ``axes``, removing them."
    return apply


_REDUCTIONS = ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or")
for _name in _REDUCTIONS:
    globals()[_name] = _reduction(_name)


def argmax(operand, axis: int, index_dtype):
    return _single("argmax", [as_operand(operand)], {"axis": axis, "index_dtype": _ir_dtype(index_dtype)})


def argmin(operand, axis: int, index_dtype):
    return _single("argmin", [as_operand(operand)], {"axis": axis, "index_dtype": _ir_dtype(index_dtype)})


def _cumulative(name: str):
    def apply(operand, axis: int = 0, reverse: bool = False):
        operand, weak = _operand_and_weak(operand)
        return _single(name, [operand], {"axis": axis, "reverse": bool(reverse)}, weak_type=weak)

    apply.__name__ = name
    apply.__doc__ = f"Inclusive ``{name}`` along ``axis``."
    return apply


_CUMULATIVE = ("cumsum", "cumprod", "cummax", "cummin")
for _name in _CUMULATIVE:
    globals()[_name] = _cumulative(_name)


def sort(operand, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
    """Sort one array, or a sequence of arrays lexicographically by the first ``num_keys``."""
    single = not isinstance(operand, (list, tuple))
    operands = [as_operand(item) for item in ([operand] if single else operand)]
    rank = len(shape_of(operands[0]))
    dimension = dimension + rank if dimension < 0 else dimension
    results = bind("sort", operands, {"dimension": dimension, "is_stable": bool(is_stable), "num_keys": num_keys})
    return results[0] if single else tuple(results)


def sort_key_val(keys, values, dimension: int = -1, is_stable: bool = True):
    """``values`` (and ``keys``) ordered by ``keys`` along ``dimension``, as lax.sort_key_val."""
    return sort((keys, values), dimension, is_stable, num_keys=1)


def gather_along_axis(operand, indices, axis: int, mode: str = "fill", fill_value=None):
    """``jnp.take(operand, indices, axis)`` as a ``gather`` of single elements along ``axis``:
    the result is ``operand.shape[:axis] + indices.shape + operand.shape[axis + 1:]``; indices
    out of range are clamped (``mode="clip"``) or give ``fill_value`` (``mode="fill"``)."""
    operand, indices = as_operand(operand), as_operand(indices)
    shape, index_rank = shape_of(operand), len(shape_of(indices))
    if shape[axis] == 0 and math.prod(shape_of(indices)) > 0:
        raise IndexError("Cannot do a non-empty jnp.take() from an empty axis.")
    vectors = _single("expand_dims", [indices], {"dimensions": (index_rank,)})
    attrs = {"offset_dims": tuple(range(axis)) + tuple(range(axis + index_rank, len(shape) - 1 + index_rank)),
             "collapsed_slice_dims": (axis,), "start_index_map": (axis,), "operand_batching_dims": (),
             "start_indices_batching_dims": (),
             "slice_sizes": tuple(1 if dim == axis else size for dim, size in enumerate(shape)), "mode": mode}
    if fill_value is not None and mode == "fill":
        attrs["fill_value"] = fill_value
    return _single("gather", [operand, vectors], attrs, weak_type=dtype_of(operand).weak)


def gather_elements_along_axis(operand, indices, axis: int, mode: str = "fill", fill_value=None):
    """``jnp.take_along_axis``: ``operand`` at ``indices`` along ``axis``, elementwise in every
    other dim (both have the result's shape there). A ``gather`` whose other dims are batching
    dims, as JAX emits it, so each of them keeps its sharding and a sharded ``axis`` can be
    looked up where it lies."""
    operand, indices = as_operand(operand), as_operand(indices)
    rank = len(shape_of(operand))
    others = tuple(dim for dim in range(rank) if dim != axis)
    vectors = _single("expand_dims", [indices], {"dimensions": (rank,)})
    attrs = {"offset_dims": (), "collapsed_slice_dims": (axis,), "start_index_map": (axis,),
             "operand_batching_dims": others, "start_indices_batching_dims": others,
             "slice_sizes": (1,) * rank, "mode": mode}
    if fill_value is not None and mode == "fill":
        attrs["fill_value"] = fill_value
    return _single("gather", [operand, vectors], attrs, weak_type=dtype_of(operand).weak)


def with_sharding_constraint_ir(x, sharding):
    """Constrain ``x`` to an IR TensorSharding (the facade converts user shardings)."""
    x = as_operand(x)
    return _single("sharding_constraint", [x], {"sharding": sharding}, weak_type=dtype_of(x).weak)


del _name


# NOTE: the public names, re-exported by ``meshjit.lax``: the table-generated primitives above
# and the functions defined one by one.
__all__ = (
    *_UNARY, *_BINARY, *_COMPARISONS, *_REDUCTIONS, *_CUMULATIVE,
    "argmax",
    "argmin",
    "bitwise_and",
    "bitwise_not",
    "bitwise_or",
    "bitwise_xor",
    "broadcast",
    "broadcast_in_dim",
    "broadcasted_iota",
    "clamp",
    "concatenate",
    "convert_element_type",
    "dot",
    "dot_general",
    "dynamic_slice",
    "dynamic_update_slice",
    "expand_dims",
    "full",
    "gather_along_axis",
    "gather_elements_along_axis",
    "integer_pow",
    "iota",
    "pad",
    "Precision",
    "reshape",
    "rev",
    "round",
    "select",
    "slice",
    "sort",
    "squeeze",
    "transpose",
    "bitcast_convert_type",
    "sort_key_val",
)
