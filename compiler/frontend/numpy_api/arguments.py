"""Turning jax.numpy-style arguments into what lax accepts: checked axes, dtype arguments, and
operands promoted (JAX's lattice, weak Python scalars) and broadcast (numpy's rule) to one
shape and dtype.
"""

from __future__ import annotations

import numpy as np
from meshjit.ir.dtypes import DTYPES, canonicalize, from_numpy

from ...sharding.factor_types import spec_text
from .. import lax_ops as lax
from ..operands import canonical_numpy, dtype_of, is_python_scalar, shape_of, x64
from ..promotion import DType, is_float, promote_all
from ...sharding.sharding_types import ShardingType, ShardingTypeError
from ..trace import Tracer, is_concrete_array, operand_sharding_type

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "AxisError",
)

AxisError = np.exceptions.AxisError


# -- axes ---------------------------------------------------------------------------------------
def normalize_axis(axis, rank: int, function: str) -> int:
    """``axis`` as a non-negative dim of an array of ``rank`` dims (numpy's AxisError if not)."""
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{function}: axis must be an int, got {type(axis).__name__} {axis!r}")
    axis = int(axis)
    if not -rank <= axis < rank:
        raise AxisError(axis, rank, msg_prefix=function)
    return axis + rank if axis < 0 else axis


def normalize_axes(axis, rank: int, function: str) -> tuple[int, ...]:
    """``axis`` given as None (all dims), an int or a sequence of ints, as sorted unique dims."""
    if axis is None:
        return tuple(range(rank))
    if isinstance(axis, (tuple, list)):
        dims = [normalize_axis(item, rank, function) for item in axis]
        if len(set(dims)) != len(dims):
            raise ValueError(
                f"{function}: repeated axis in {tuple(axis)} for an array of rank {rank}"
            )
        return tuple(sorted(dims))
    return (normalize_axis(axis, rank, function),)


# -- dtype arguments ------------------------------------------------------------------------------
def dtype_argument(dtype, function: str) -> str:
    """An IR dtype name for a user's ``dtype=`` (numpy dtype, type, string or IR name).

    64-bit requests narrow to 32 bits unless x64 is on, as in JAX.
    """
    if isinstance(dtype, str) and dtype in DTYPES:
        return dtype
    try:
        numpy_dtype = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{function}: dtype {dtype!r} is not a dtype") from None
    canonical = canonicalize(numpy_dtype, x64=x64())
    try:
        return from_numpy(canonical)
    except TypeError:
        raise TypeError(
            f"{function}: dtype {numpy_dtype} is not supported; meshjit arrays hold bool, int8, int16, "
            f"int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16, float32 or float64"
        ) from None


# -- array arguments ------------------------------------------------------------------------------
def as_array_argument(value, function: str):
    """Tracers, device arrays and Python scalars pass through (scalars keep their weak type);
    anything else becomes a numpy constant of JAX's canonical dtype. A list or tuple is a
    TypeError, as in JAX (``jnp.asarray`` converts one)."""
    if isinstance(value, Tracer) or is_concrete_array(value) or is_python_scalar(value):
        return value
    if isinstance(value, (list, tuple)):
        raise TypeError(f"{function} requires ndarray or scalar arguments, got {type(value)} at position 0.")
    try:
        return canonical_numpy(value)
    except TypeError as error:
        raise TypeError(f"{function}: {error}") from None


def broadcast_shapes(function: str, *shapes, error: type[Exception] = ValueError) -> tuple[int, ...]:
    """numpy's broadcast of ``shapes``; ``error`` (JAX's type for the caller: ValueError for
    where and broadcast_arrays, TypeError for arithmetic) naming every shape if they do not fit."""
    rank = max((len(shape) for shape in shapes), default=0)
    padded = [(1,) * (rank - len(shape)) + tuple(shape) for shape in shapes]
    result = []
    for dim in range(rank):
        sizes = {shape[dim] for shape in padded if shape[dim] != 1}
        if len(sizes) > 1:
            listed = ", ".join(str(tuple(shape)) for shape in shapes)
            raise error(
                f"{function}: shapes {listed} cannot be broadcast together "
                f"(sizes {sorted(sizes)} meet in dim {dim - rank})"
            )
        result.append(sizes.pop() if sizes else 1)
    return tuple(result)


def broadcast_sharding(values, shape) -> ShardingType | None:
    """The sharding type arrays broadcast together to ``shape`` share in explicit mode (JAX's
    ``broadcast_shardings``): per dim, the axes of the operands that have the dim (a unit dim
    left unsplit agrees with any); None when no operand lives on a mesh with Explicit axes."""
    types = [operand_sharding_type(value) for value in values if not is_python_scalar(value)]
    meshes = [sharding.mesh for sharding in types if sharding.mesh.explicit_axes]
    if not meshes:
        return None
    rank = len(shape)
    padded = [((),) * (rank - sharding.rank) + sharding.dims for sharding in types]
    sizes = [(1,) * (rank - len(shape_of(value))) + tuple(shape_of(value))
             for value in values if not is_python_scalar(value)]
    dims = []
    for dim in range(rank):
        chosen: tuple[str, ...] = ()
        for axes, size in zip((entry[dim] for entry in padded), (entry[dim] for entry in sizes)):
            if not axes:
                continue
            if chosen and axes != chosen:
                raise ShardingTypeError(f"broadcast_shardings got incompatible shardings for broadcasting: "
                                        f"{', '.join(spec_text(entry) for entry in padded)}.")
            chosen = axes
        dims.append(chosen)
    return ShardingType(meshes[0], tuple(dims))


def broadcast_to_shape(value, shape, function: str, sharding: ShardingType | None = None):
    """Broadcast an array (not a Python scalar) to ``shape`` by numpy's rule, laid out as
    ``sharding`` when given (explicit mode; a 0-d value also takes the reduced axes of the
    values it is broadcast against, as JAX's scalars need no broadcast)."""
    shape = tuple(shape)
    current = shape_of(value)
    if current == shape:
        return value
    if broadcast_shapes(function, current, shape) != shape:
        raise ValueError(
            f"{function}: cannot broadcast an array of shape {current} to shape {shape}"
        )
    leading = len(shape) - len(current)
    return lax.broadcast_in_dim(value, shape, tuple(range(leading, len(shape))), out_sharding=sharding)


def broadcast_together(operands, shape, function: str) -> list:
    """The operands broadcast to ``shape`` and to one sharding type (explicit mode; where that
    type would name an axis twice, the op they feed reports it)."""
    shape = tuple(shape)
    if all(shape_of(operand) == shape for operand in operands):
        return list(operands)
    target = broadcast_sharding(operands, shape)
    used = [] if target is None else list(target.used_axes)
    if len(set(used)) != len(used):
        target = None
    if target is not None:
        reduced = frozenset().union(*(operand_sharding_type(operand).reduced for operand in operands
                                      if shape_of(operand) == tuple(shape)))
        scalar_target = ShardingType(target.mesh, target.dims, reduced=reduced)
    results = []
    for operand in operands:
        layout = None
        if target is not None and shape_of(operand) != tuple(shape):
            layout = scalar_target if not shape_of(operand) else target
        results.append(broadcast_to_shape(operand, shape, function, layout))
    return results


def convert_operand(value, dtype: str):
    """``value`` (any accepted argument) in IR dtype ``dtype``; a Python scalar becomes a numpy
    constant (its weak type is the caller's to keep)."""
    if is_python_scalar(value):
        return canonical_numpy(value, dtype)
    if dtype_of(value).name != dtype:
        return lax.convert_element_type(value, dtype)
    return value


def result_dtype(*values) -> DType:
    """JAX's promoted dtype of the (already checked) arguments."""
    return promote_all([dtype_of(value) for value in values], x64())


def promote_and_broadcast(function: str, *values, dtype: str | None = None):
    """The arguments as lax operands of one shape and one dtype, and that promoted dtype.

    ``dtype`` overrides the promoted dtype's name (the weak flag still comes from promotion).
    """
    values = [as_array_argument(value, function) for value in values]
    promoted = result_dtype(*values)
    if dtype is not None:
        promoted = DType(dtype, promoted.weak)
    shapes = [shape_of(value) for value in values]
    # NOTE: JAX's types: lax's TypeError for operands of one rank, jnp's ValueError when ranks differ
    error = TypeError if len({len(shape) for shape in shapes}) == 1 else ValueError
    shape = broadcast_shapes(function, *shapes, error=error)
    operands = [convert_operand(value, promoted.name) for value in values]
    return broadcast_together(operands, shape, function), promoted


def inexact_dtype(dtype: DType) -> DType:
    """JAX's ``to_inexact_dtype``: bool and i32 become f32 and i64 becomes f64, keeping the
    weak flag (so ``sqrt`` of an i32 is f32 even with x64 on, as in JAX)."""
    if is_float(dtype.name) or dtype.name in ("c64", "c128"):
        return dtype
    return DType("f64" if dtype.name == "i64" else "f32", dtype.weak)


def with_weak_type(value, weak: bool):
    """``value`` carrying JAX's weak-type flag ``weak`` (a metadata change under tracing)."""
    if dtype_of(value).weak == weak:
        return value
    return lax._convert_element_type(value, dtype_of(value).name, weak_type=weak)


def array_operand(value, function: str):
    """Any accepted argument as a lax operand of its own dtype (a Python scalar stays weak)."""
    value = as_array_argument(value, function)
    dtype = dtype_of(value)
    return with_weak_type(convert_operand(value, dtype.name), dtype.weak)


def check_dtype_kind(function: str, dtype: DType, allowed: str) -> None:
    """Raise a TypeError unless the IR dtype's kind is one of ``allowed`` ("b", "i", "u", "f", "c")."""
    kind = "b" if dtype.name == "bool" else "f" if is_float(dtype.name) else dtype.name[0]
    if kind not in allowed:
        names = {"b": "bool", "i": "integer", "u": "unsigned integer", "f": "floating", "c": "complex"}
        accepted = ", ".join(names[letter] for letter in allowed)
        raise TypeError(
            f"{function} does not accept dtype {dtype.name}; accepted kinds: {accepted}"
        )


def is_inexact_dtype(dtype) -> bool:
    """A floating or complex numpy dtype, counting ml_dtypes' bfloat16 (numpy files it as void)."""
    dtype = np.dtype(dtype)
    return dtype.kind in "fc" or dtype.name == "bfloat16"
