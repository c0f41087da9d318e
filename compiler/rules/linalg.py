"""The compiler's rules for the linear algebra ops (cholesky, triangular_solve, lu, qr, eigh,
svd, eig, hessenberg, schur): batch dims pass through sharded; the matrix dims are replication factors, so a matrix dim
that arrives sharded is all-gathered first (the generic partitioner, with the collective's
reason in the dump), except the columns of a left-side triangular solve's right-hand side (the
rows of a right-side one), which are solved independently and stay sharded. Kernels call the
reference (numpy's LAPACK) once on every device's batch at once; vmap moves the batch dim first.
The derivative rules are in linalg_autodiff.py and linalg_eig_autodiff.py."""

from __future__ import annotations

import numpy as np
from meshjit.ir import Op
from meshjit.ir.reference import reference_impls

from ..frontend.vmap.batching import at_front, emit_like
from ..sharding.factor_rules import FactorRule, joined, letters
from ..sharding.sharding_types import ShardingTypeError, is_lenient, spec_repr
from ..tables import (
    batching_rules,
    factor_rule,
    factor_sharding_types,
    kernel_rules,
    sharding_rules,
    sharding_type_rules,
)

OPS = ("cholesky", "triangular_solve", "lu", "qr", "eigh", "svd", "eig", "hessenberg", "schur")

# NOTE: the matrix factors' names; batch factors are d0, d1, ... (letters), so these never clash.
_MATRIX = ("rows", "columns", "inner", "solved", "free")


def _replicated(op: Op, spec: str, batch_rank: int) -> FactorRule:
    """The rule of ``spec`` (``B`` standing for the batch factors) with every matrix factor a
    replication factor except ``free``."""
    text = spec.replace("B", " ".join(letters(batch_rank)))
    kinds = {name: "replication" for name in _MATRIX if name != "free"}
    used = {name: kind for name, kind in kinds.items() if f" {name}" in f" {text}"}
    return factor_rule(op, text.strip(), used)


def _batch_rank(op: Op) -> int:
    return op.operands[0].type.rank - 2


@sharding_rules.register("cholesky")
def _cholesky(op: Op) -> FactorRule:
    return _replicated(op, "B rows columns -> B rows columns", _batch_rank(op))


@sharding_rules.register("triangular_solve")
def _triangular_solve(op: Op) -> FactorRule:
    # a is [.., solved, inner]; the solved dim of b meets a's, the other dim of b is free
    if op.attrs["left_side"]:
        return _replicated(op, "B solved inner, B solved free -> B inner free", _batch_rank(op))
    return _replicated(op, "B solved inner, B free solved -> B free inner", _batch_rank(op))


@sharding_rules.register("lu")
def _lu(op: Op) -> FactorRule:
    return _replicated(op, "B rows columns -> B rows columns, B inner, B rows", _batch_rank(op))


@sharding_rules.register("qr")
def _qr(op: Op) -> FactorRule:
    return _replicated(op, "B rows columns -> B rows inner, B inner columns", _batch_rank(op))


@sharding_rules.register("eigh")
def _eigh(op: Op) -> FactorRule:
    return _replicated(op, "B rows columns -> B rows columns, B columns", _batch_rank(op))


@sharding_rules.register("eig")
def _eig(op: Op) -> FactorRule:
    vectors = ", B rows columns" * (len(op.results) - 1)
    return _replicated(op, "B rows columns -> B columns" + vectors, _batch_rank(op))


@sharding_rules.register("hessenberg")
def _hessenberg(op: Op) -> FactorRule:
    # the reflectors' taus have a dim of their own (n - 1 long)
    return _replicated(op, "B rows columns -> B rows columns, B solved", _batch_rank(op))


@sharding_rules.register("schur")
def _schur(op: Op) -> FactorRule:
    vectors = ", B rows columns" * (len(op.results) - 1)
    return _replicated(op, "B rows columns -> B rows columns" + vectors, _batch_rank(op))


@sharding_rules.register("svd")
def _svd(op: Op) -> FactorRule:
    # s is [.., k]; u is [.., m, m or k]; vh is [.., n or k, n]: the inner dims of u and vh are
    # factors of their own when their sizes differ from k
    batch_rank = _batch_rank(op)
    if len(op.results) == 1:
        return _replicated(op, "B rows columns -> B inner", batch_rank)
    batch = letters(batch_rank)
    names = batch + ["rows", "columns"]
    u_inner, vh_inner = op.results[1].type.shape[-1], op.results[2].type.shape[-2]
    inner = op.results[0].type.shape[-1]
    u_name = "inner" if u_inner == inner else "u_inner"
    vh_name = "inner" if vh_inner == inner else "vh_inner"
    spec = (f"{joined(names)} -> {joined(batch + ['inner'])}, {joined(batch + ['rows', u_name])}, "
            f"{joined(batch + [vh_name, 'columns'])}")
    kinds = {name: "replication" for name in ("rows", "columns", "inner", u_name, vh_name)}
    return factor_rule(op, spec, kinds)


# --- explicit mode ------------------------------------------------------------------------------


def _whole_dims(op: Op, index: int) -> tuple[int, ...]:
    """The dims of operand ``index`` that must arrive unsharded: its matrix dims, but for the
    free dim of a triangular solve's right-hand side."""
    rank = op.operands[index].type.rank
    if op.name == "triangular_solve" and index == 1:
        return (rank - 2,) if op.attrs["left_side"] else (rank - 1,)
    return (rank - 2, rank - 1)


def _unsharded_matrix_message(op: Op, index: int, operand) -> str:
    if op.name != "triangular_solve":
        return f"Input {index} to {op.name} must be unsharded on non-batch dimensions, but got {spec_repr(operand)}."
    return (f"triangular solve input `{'ab'[index]}` must be unsharded on the contracting axis, but got "
            f"{spec_repr(operand)} with left_side={op.attrs['left_side']} and transpose_a={op.attrs['transpose_a']}.")


@sharding_type_rules.register(*OPS)
def _linalg_type(op: Op, operands, mesh) -> list:
    """JAX's rule: the matrix dims must arrive unsharded (ShardingTypeError naming the input);
    the batch dims pass through."""
    for index, operand in enumerate(operands):
        if not is_lenient() and any(operand.dims[dim] for dim in _whole_dims(op, index)):
            raise ShardingTypeError(_unsharded_matrix_message(op, index, operand))
    return factor_sharding_types(op, operands, mesh)


# --- kernels ------------------------------------------------------------------------------------


@kernel_rules.register(*OPS)
def _whole_batch_kernel(op: Op, lead: int):
    """The reference once over the plan buffers: the leading mesh dims are more batch dims (a
    value stored once for a replicated dim is broadcast against the other operand's)."""
    impl, attrs = reference_impls[op.name], op.attrs

    def run(*operands):
        shape = np.broadcast_shapes(*(operand.shape[:lead] for operand in operands))
        ready = [np.broadcast_to(operand, shape + operand.shape[lead:]) for operand in operands]
        return tuple(np.ascontiguousarray(result) for result in impl(attrs, *ready))

    return run


# --- vmap ----------------------------------------------------------------------------------------


@batching_rules.register(*OPS)
def _batch(op: Op, operands, dims, size):
    """Every operand's batch dim goes first (unbatched ones are broadcast): one more batch dim."""
    ready = [at_front(operand, dim, size) for operand, dim in zip(operands, dims)]
    results = emit_like(op, ready)
    return results, [0] * len(results)
