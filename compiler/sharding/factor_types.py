"""An op's factor rule evaluated on its operands' sharding types, at trace time (explicit mode).

``result_dims`` is JAX's usual sharding rule written over factors: each factor takes the mesh
axes its operand dims agree on (an operand that leaves the dim unsplit agrees with any; two
different splits are an error); a result dim gets the axes of its factors; a reduction factor
drops out (the op sums over it, reducing its axes); a replication factor must arrive unsplit; a
permutation factor (slice, pad, concatenate) keeps its axes only when the result dim still
divides by them. A result naming one mesh axis twice is an error. Families override the rule
where JAX's differs (``sharding_type_rules`` in ``compiler/rules/registries.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

from meshjit.ir.abstract_mesh import AbstractMesh
from meshjit.ir.dtypes import to_numpy

from .factor_rules import FactorRule
from .sharding_types import ShardingTypeError, format_type, is_lenient

Dims = tuple[tuple[str, ...], ...]


class DuplicateAxisError(ShardingTypeError):
    """A result type names one mesh axis on two dims (or twice on one)."""

    def __init__(self, dims: Dims):
        super().__init__(f"mesh axes repeat in {dims}")
        self.dims = dims


def spec_text(dims: Dims) -> str:
    """Dims as JAX prints a spec's partitions: ``('X', None)``, ``(('X', 'Y'), None)``."""
    entries = [None if not axes else axes[0] if len(axes) == 1 else axes for axes in dims]
    return str(tuple(entries))


def _count(mesh: AbstractMesh, axes) -> int:
    sizes = mesh.shape
    total = 1
    for axis in axes:
        total *= sizes[axis]
    return total


def _split_compound(axes: tuple[str, ...], factors, sizes, mesh: AbstractMesh) -> list[tuple[str, ...]]:
    """A compound dim's axes shared out over its factors, major first: a factor takes axes
    while their product divides its size; axes left over have nowhere to go (None)."""
    shares, position = [], 0
    for factor in factors:
        taken, product = [], 1
        while position < len(axes) and sizes[factor] % (product * mesh.shape[axes[position]]) == 0:
            product *= mesh.shape[axes[position]]
            taken.append(axes[position])
            position += 1
        shares.append(tuple(taken))
    if position < len(axes):
        return None
    return shares


def _factor_candidates(rule: FactorRule, operand_dims: Sequence[Dims], operand_shapes,
                       mesh: AbstractMesh) -> dict[int, list[tuple[str, ...]]]:
    """Per factor, the axes each operand dim holding it offers (size-1 dims offer nothing)."""
    candidates: dict[int, list[tuple[str, ...]]] = {factor: [] for factor in range(len(rule.sizes))}
    for dims, shape, factor_dims in zip(operand_dims, operand_shapes, rule.operands):
        for axes, size, factors in zip(dims, shape, factor_dims):
            if not factors:
                continue
            if len(factors) == 1:
                if size != 1 or axes:
                    candidates[factors[0]].append(axes)
                continue
            shares = _split_compound(axes, factors, rule.sizes, mesh)
            if shares is None:
                raise ShardingTypeError(f"the axes {axes} of a dim of size {size} do not split over its parts")
            for factor, share in zip(factors, shares):
                candidates[factor].append(share)
    return candidates


def _consensus(name: str, offers: list[tuple[str, ...]], operand_dims: Sequence[Dims]) -> tuple[str, ...]:
    """The axes the operands agree on: unsplit agrees with anything, two splits must be equal."""
    chosen: tuple[str, ...] = ()
    for axes in offers:
        if not axes:
            continue
        if chosen and axes != chosen:
            if is_lenient():
                return ()
            raise ShardingTypeError(f"{name} got incompatible shardings for broadcasting: "
                                    f"{', '.join(spec_text(dims) for dims in operand_dims)}.")
        chosen = axes
    return chosen


def result_dims(rule: FactorRule, operand_dims: Sequence[Dims], operand_shapes, result_shapes,
                mesh: AbstractMesh, name: str) -> list[Dims]:
    """Every result's dims from the operands' dims under ``rule``; raises ShardingTypeError."""
    candidates = _factor_candidates(rule, operand_dims, operand_shapes, mesh)
    axes_of = {}
    for factor, offers in candidates.items():
        axes = _consensus(name, offers, operand_dims)
        kind = rule.kinds[factor]
        if kind == "replication" and axes:
            if is_lenient():
                axes = ()
            else:
                raise ShardingTypeError(f"{name} needs its operands unsplit along a dim of size "
                                        f"{rule.sizes[factor]}, but they are sharded over {axes}; reshard "
                                        f"them first")
        axes_of[factor] = axes
    results = []
    for factor_dims, shape in zip(rule.results, result_shapes):
        dims = []
        for factors, size in zip(factor_dims, shape):
            axes = tuple(axis for factor in factors if rule.kinds[factor] != "reduction"
                         for axis in axes_of[factor])
            if axes and size % _count(mesh, axes):
                raise ShardingTypeError(
                    f"{name} on sharded dims where out dim ({size}) is not divisible by mesh axes "
                    f"({_count(mesh, axes)}) with spec ({','.join(axes)}) is not implemented.")
            dims.append(axes)
        results.append(tuple(dims))
    for dims in results:
        check_unique(dims)
    return results


def check_unique(dims: Dims) -> None:
    used = [axis for axes in dims for axis in axes]
    if len(set(used)) != len(used):
        raise DuplicateAxisError(dims)


def illegal_result_message(name: str, operand_texts: Sequence[str], result_text: str) -> str:
    return (f"{name} operation with inputs: {', '.join(operand_texts)} produces an illegally sharded result: "
            f"{result_text}")


def short_type(shape, dtype, sharding) -> str:
    return format_type(shape, dtype, sharding, short=True)


def varying_out_shape(name: str, operand, shape, dtype, out_shape):
    """The result type of an op whose result dims may be shorter or longer than its operand's
    (slice, pad, dynamic_slice, split): the operand's, where every changed dim that is split
    still divides by its shard count (JAX's rule for these ops)."""
    for dim, (size, out_size, axes) in enumerate(zip(shape, out_shape, operand.dims)):
        count = _count(operand.mesh, axes)
        if size != out_size and axes and out_size % count:
            entry = axes[0] if len(axes) == 1 else axes
            raise ShardingTypeError(
                f"{name} on sharded dims where out dim ({out_size}) is not divisible by mesh axes ({count}) with "
                f"spec ({entry}) is not implemented. Got input type={short_type(shape, to_numpy(dtype), operand)} and "
                f"output shape={tuple(out_shape)}")
    return operand


def same_unreduced(name: str, operands) -> frozenset[str]:
    """Operands that pass a pending sum on must all hold it over the same axes."""
    specs = {operand.unreduced for operand in operands if operand.unreduced}
    if len(specs) > 1:
        raise ShardingTypeError(f"All operands should be unreduced along the same mesh axes. Got unreduced specs: "
                                f"{specs}")
    return next(iter(specs), frozenset())


def operand_type_text(op, index: int, sharding, *, short: bool = False) -> str:
    """Operand ``index`` of ``op`` printed as JAX prints its type: ``float32[8,16]{U:X}``."""
    value = op.operands[index]
    return format_type(value.type.shape, to_numpy(value.type.dtype), sharding, short=short)
