"""What batching rules share: moving and adding batch dims, the generic rules the op families
register (elementwise, dims shifted past the batch dim, no batched operand), and the fallback
that unrolls an op over the batch.

A batching rule is ``rule(op, operands, dims, size) -> (results, result_dims)``: ``operands``
are the batched values (Tracers or arrays) of ``op``'s operands, ``dims[i]`` the dim of
operand ``i`` that is the batch (``None``: not batched, the same for every example), ``size``
the batch size. It emits ops into the current trace and returns the results with their batch
dims. Rules run only when some operand is batched. The op families register them in
``batching_rules`` (``compiler/rules/registries.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from meshjit.ir import Op

from .. import lax_ops as lax
from ..operands import shape_of
from ..trace import bind


def move_dim(x, source: int, target: int):
    """``x`` with dim ``source`` moved to position ``target``, the others in order."""
    if source == target:
        return x
    order = [dim for dim in range(len(shape_of(x))) if dim != source]
    order.insert(target, source)
    return lax.transpose(x, tuple(order))


def at_front(x, dim: int | None, size: int):
    """``x`` with its batch dim first; an unbatched ``x`` is broadcast along a new first dim."""
    if dim is None:
        shape = shape_of(x)
        return lax.broadcast_in_dim(x, (size,) + tuple(shape), tuple(range(1, len(shape) + 1)))
    return move_dim(x, dim, 0)


def shifted(dims: Sequence[int], by: int = 1) -> tuple[int, ...]:
    """Per-example dims as dims of a value whose batch dim is first."""
    return tuple(dim + by for dim in dims)


def emit_like(op: Op, operands: Sequence, attrs: dict | None = None) -> list:
    """Bind ``op``'s name with ``operands`` and ``attrs`` (default ``op``'s), and its regions."""
    return bind(op.name, list(operands), dict(op.attrs if attrs is None else attrs), regions=op.regions)


# --- generic rules ---------------------------------------------------------------------------------


def batch_elementwise(op: Op, operands, dims, size):
    """Elementwise ops (and any op whose operands share the result's shape elementwise): every
    operand's batch dim goes first, unbatched ones are broadcast; a 0-d operand that may stay
    0-d (select's predicate, clamp's bounds) stays so when unbatched and is broadcast to the
    full batched shape when batched."""
    full_shape = (size,) + tuple(op.results[0].type.shape)
    ready = []
    for operand, dim, value in zip(operands, dims, op.operands):
        scalar_slot = value.type.rank == 0 and op.results[0].type.rank > 0
        if dim is None and scalar_slot:
            ready.append(operand)
        elif scalar_slot:
            ready.append(lax.broadcast_in_dim(move_dim(operand, dim, 0), full_shape, (0,)))
        else:
            ready.append(at_front(operand, dim, size))
    results = emit_like(op, ready)
    return results, [0] * len(results)


def shift_attrs(*names: str) -> Callable:
    """A rule for ops with one batched-first operand whose ``names`` attributes count dims
    (a dim, or a tuple of dims): they shift past the batch dim, and the results keep it first."""

    def rule(op: Op, operands, dims, size):
        operand = at_front(operands[0], dims[0], size)
        attrs = dict(op.attrs)
        for name in names:
            value = attrs[name]
            attrs[name] = value + 1 if isinstance(value, int) else shifted(value)
        results = emit_like(op, [operand, *operands[1:]], attrs)
        return results, [0] * len(results)

    return rule


def unrolled(op: Op, operands, dims, size):
    """The fallback for ops without a batched form (dynamic indices that differ per example):
    the op once per example, on that example's operands, and the results stacked. Correct for
    any op; the program grows with the batch size."""
    per_example = []
    for index in range(size):
        pieces = [operand if dim is None else _example(operand, dim, index)
                  for operand, dim in zip(operands, dims)]
        per_example.append(emit_like(op, pieces))
    results = []
    for position in range(len(op.results)):
        stacked = [lax.expand_dims(outputs[position], (0,)) for outputs in per_example]
        results.append(lax.concatenate(stacked, 0))
    return results, [0] * len(results)


def _example(x, dim: int, index: int):
    shape = shape_of(x)
    starts = [0] * len(shape)
    limits = list(shape)
    starts[dim], limits[dim] = index, index + 1
    return lax.reshape(lax.slice(x, tuple(starts), tuple(limits)),
                       tuple(size for position, size in enumerate(shape) if position != dim))
