"""Kernel rules: how each op runs on plan buffers (mesh-shaped leading dims + local dims).

A rule takes the op and the number of leading dims and returns a function of the operand
buffers that returns a tuple of result buffers. Ops without a rule of their own use the named
default, ``run_per_leading_position``, which applies the reference implementation once per
distinct leading position.
"""

from __future__ import annotations

import numpy as np

from meshjit.ir import Op
from meshjit.ir.dtypes import to_numpy
from meshjit.ir.reference import reference_impls
from meshjit.ir.registry import Registry


def run_per_leading_position(op: Op, lead: int):
    """The named default: loop over the broadcast leading positions, reference impl each."""
    impl = reference_impls[op.name]
    attrs = op.attrs

    def run(*operands):
        shape = np.broadcast_shapes(*(operand.shape[:lead] for operand in operands)) if operands else (1,) * lead
        outputs = None
        for position in np.ndindex(shape):
            pieces = [operand[tuple(p if size > 1 else 0 for p, size in zip(position, operand.shape[:lead]))]
                      for operand in operands]
            results = impl(attrs, *pieces)
            if outputs is None:
                outputs = [np.empty(shape + result.shape, result.dtype) for result in results]
            for output, result in zip(outputs, results):
                output[position] = result
        return tuple(outputs)

    return run


kernel_rules = Registry("kernel rule", default=run_per_leading_position)


def _lift(operand: np.ndarray, lead: int, rank: int) -> np.ndarray:
    """Give a lower-rank local value (a 0-d select predicate) trailing unit dims to broadcast."""
    missing = rank - (operand.ndim - lead)
    return operand.reshape(operand.shape + (1,) * missing) if missing > 0 else operand


ELEMENTWISE = (
    "neg abs sign exp exp2 log log1p expm1 tanh logistic sin cos tan sqrt rsqrt cbrt floor ceil "
    "round erf is_finite not add sub mul div rem pow max min atan2 and or xor shift_left "
    "shift_right_arithmetic shift_right_logical compare select clamp convert integer_pow"
).split()


@kernel_rules.register(*ELEMENTWISE)
def _elementwise(op: Op, lead: int):
    impl = reference_impls[op.name]
    attrs = op.attrs
    rank = op.result.type.rank

    def run(*operands):
        return impl(attrs, *(_lift(operand, lead, rank) for operand in operands))

    return run


def _shifted(axes, lead: int) -> tuple[int, ...]:
    return tuple(lead + axis for axis in axes)


_REDUCERS = {"reduce_sum": np.sum, "reduce_max": np.max, "reduce_min": np.min, "reduce_prod": np.prod,
             "reduce_and": np.all, "reduce_or": np.any}


@kernel_rules.register(*_REDUCERS)
def _reduce(op: Op, lead: int):
    reducer = _REDUCERS[op.name]
    axes = _shifted(op.attrs["axes"], lead)
    dtype = to_numpy(op.result.type.dtype)
    empty = op.operands[0].type.size == 0 and op.name in ("reduce_max", "reduce_min")
    if empty:
        return run_per_leading_position(op, lead)

    def run(operand):
        return (np.asarray(reducer(operand, axis=axes), dtype=dtype),)

    return run


@kernel_rules.register("transpose")
def _transpose(op: Op, lead: int):
    order = tuple(range(lead)) + _shifted(op.attrs["permutation"], lead)
    return lambda operand: (np.transpose(operand, order),)


@kernel_rules.register("reshape", "squeeze", "expand_dims")
def _reshape(op: Op, lead: int):
    local = op.result.type.shape
    return lambda operand: (operand.reshape(operand.shape[:lead] + local),)


@kernel_rules.register("broadcast_in_dim")
def _broadcast(op: Op, lead: int):
    shape = op.attrs["shape"]
    dims = op.attrs["broadcast_dimensions"]

    def run(operand):
        expanded = [1] * len(shape)
        for operand_dim, result_dim in enumerate(dims):
            expanded[result_dim] = operand.shape[lead + operand_dim]
        reshaped = operand.reshape(operand.shape[:lead] + tuple(expanded))
        return (np.broadcast_to(reshaped, operand.shape[:lead] + tuple(shape)),)

    return run


@kernel_rules.register("slice")
def _slice(op: Op, lead: int):
    index = (slice(None),) * lead + tuple(
        slice(start, limit, stride) for start, limit, stride in
        zip(op.attrs["start_indices"], op.attrs["limit_indices"], op.attrs["strides"]))
    return lambda operand: (operand[index],)


@kernel_rules.register("rev")
def _rev(op: Op, lead: int):
    index = (slice(None),) * lead + tuple(
        slice(None, None, -1) if dim in op.attrs["dimensions"] else slice(None) for dim in range(op.result.type.rank))
    return lambda operand: (operand[index],)


@kernel_rules.register("concatenate")
def _concatenate(op: Op, lead: int):
    axis = lead + op.attrs["dimension"]

    def run(*operands):
        shape = np.broadcast_shapes(*(operand.shape[:lead] for operand in operands))
        full = [np.broadcast_to(operand, shape + operand.shape[lead:]) for operand in operands]
        return (np.concatenate(full, axis=axis),)

    return run


@kernel_rules.register("iota")
def _iota(op: Op, lead: int):
    value = reference_impls["iota"](op.attrs)[0]
    constant = value.reshape((1,) * lead + value.shape)
    constant.flags.writeable = False
    return lambda: (constant,)


@kernel_rules.register("constant")
def _constant(op: Op, lead: int):
    value = op.attrs["value"].array
    constant = value.reshape((1,) * lead + value.shape)
    constant.flags.writeable = False
    return lambda: (constant,)


# NOTE: pvary only marks a value as varying for shard_map's check; each device keeps its value.
@kernel_rules.register("sharding_constraint", "pvary")
def _identity(op: Op, lead: int):
    return lambda operand: (operand,)


@kernel_rules.register("dot_general")
def _dot_general(op: Op, lead: int):
    """Batch dims and the leading dims become matmul's batch; free dims are flattened to the
    matrix rows and columns, contracting dims to the inner dim: one BLAS call per batch."""
    lhs_type, rhs_type = op.operands[0].type, op.operands[1].type
    (lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch) = op.attrs["contracting_dims"], op.attrs["batch_dims"]
    lhs_free = [d for d in range(lhs_type.rank) if d not in lhs_contracting and d not in lhs_batch]
    rhs_free = [d for d in range(rhs_type.rank) if d not in rhs_contracting and d not in rhs_batch]
    lhs_order = tuple(range(lead)) + _shifted(list(lhs_batch) + lhs_free + list(lhs_contracting), lead)
    rhs_order = tuple(range(lead)) + _shifted(list(rhs_batch) + list(rhs_contracting) + rhs_free, lead)
    batch_shape = tuple(lhs_type.shape[d] for d in lhs_batch)
    rows = int(np.prod([lhs_type.shape[d] for d in lhs_free]))
    inner = int(np.prod([lhs_type.shape[d] for d in lhs_contracting]))
    columns = int(np.prod([rhs_type.shape[d] for d in rhs_free]))
    dtype = to_numpy(op.result.type.dtype)
    result_local = op.result.type.shape

    def run(lhs, rhs):
        left = np.transpose(lhs, lhs_order).reshape(lhs.shape[:lead] + batch_shape + (rows, inner))
        right = np.transpose(rhs, rhs_order).reshape(rhs.shape[:lead] + batch_shape + (inner, columns))
        if left.dtype != dtype:
            left, right = left.astype(dtype), right.astype(dtype)
        if not batch_shape and all(size == 1 for size in rhs.shape[:lead]):
            # the right operand is the same on every device: one GEMM with the devices' rows
            # stacked, instead of one small GEMM per device
            stacked_rows = int(np.prod(lhs.shape[:lead], dtype=int)) * rows
            product = np.matmul(left.reshape(stacked_rows, inner), right.reshape(inner, columns))
            return (product.reshape(lhs.shape[:lead] + result_local),)
        product = np.matmul(left, right)
        return (product.reshape(product.shape[:lead] + result_local),)

    return run


def reduced_contraction(dot: Op, reduce_axes: tuple[int, ...], lead: int):
    """``all_reduce(dot_general(lhs, rhs))`` over the leading dims ``reduce_axes`` as ONE matmul.

    Every device along the reduced axes contracts its shard of K and the all_reduce sums the
    partial products; summed over devices that is the contraction over all the devices' K
    shards laid side by side, so the devices' leading dims join the contracting dim and the
    sum comes out of the GEMM itself (no partial results, no separate reduction pass).
    """
    lhs_type, rhs_type = dot.operands[0].type, dot.operands[1].type
    (lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch) = dot.attrs["contracting_dims"], dot.attrs["batch_dims"]
    lhs_free = [d for d in range(lhs_type.rank) if d not in lhs_contracting and d not in lhs_batch]
    rhs_free = [d for d in range(rhs_type.rank) if d not in rhs_contracting and d not in rhs_batch]
    others = [axis for axis in range(lead) if axis not in reduce_axes]
    lhs_order = others + list(_shifted(list(lhs_batch) + lhs_free, lead)) + list(reduce_axes) + list(
        _shifted(lhs_contracting, lead))
    rhs_order = others + list(_shifted(rhs_batch, lead)) + list(reduce_axes) + list(
        _shifted(list(rhs_contracting) + rhs_free, lead))
    batch_shape = tuple(lhs_type.shape[d] for d in lhs_batch)
    rows = int(np.prod([lhs_type.shape[d] for d in lhs_free]))
    columns = int(np.prod([rhs_type.shape[d] for d in rhs_free]))
    inner = int(np.prod([lhs_type.shape[d] for d in lhs_contracting]))
    dtype = to_numpy(dot.result.type.dtype)
    result_local = dot.result.type.shape

    def run(lhs, rhs):
        full = list(np.broadcast_shapes(lhs.shape[:lead], rhs.shape[:lead]))
        group = int(np.prod([full[axis] for axis in reduce_axes]))
        other_shape = tuple(full[axis] for axis in others)
        left = np.broadcast_to(lhs, tuple(full) + lhs.shape[lead:]).transpose(lhs_order)
        right = np.broadcast_to(rhs, tuple(full) + rhs.shape[lead:]).transpose(rhs_order)
        left = left.reshape(other_shape + batch_shape + (rows, group * inner)).astype(dtype, copy=False)
        right = right.reshape(other_shape + batch_shape + (group * inner, columns)).astype(dtype, copy=False)
        product = np.matmul(left, right)
        lead_shape = tuple(1 if axis in reduce_axes else full[axis] for axis in range(lead))
        return (product.reshape(lead_shape + result_local),)

    return run
