"""dot_generals of one left operand run as one step: attention's q, k and v projections of the
same activations. Each would hand its devices' GEMMs to the threads and wait for the last one
before the next begins; as one step every GEMM of every sibling goes to the threads in one job,
so the threads wait once, and a thread that another process slows leaves fewer GEMMs undone
at each wait (measured on the attention workload: the three waits took 2.5 ms each on average
on the shared 2-core machine). The GEMMs are the very calls each dot_general would make (the
same matrices, strides and BLAS on one thread), so the numbers are the same bits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from meshjit.ir import Op, Value
from meshjit.ir.narrow_floats import has_narrow_float, involves_narrow_float

from .launch import empty, matmul_split, parallel_for, single_threaded_blas, thread_count
from .matmul_kernels import dot_kernel, matmul_operand


@dataclass
class SiblingContractions:
    """dot_generals with the same left operand, attributes and types, as one step whose
    operands are the shared left operand and each dot's right operand."""

    label: str
    operands: tuple[Value, ...]
    results: tuple[Value, ...]
    function: object


def _key(op: Op):
    """What siblings share: the left operand, the attributes and every type."""
    return (op.operands[0].id, repr(sorted(op.attrs.items())), op.operands[1].type, op.result.type)


def _candidate(item) -> bool:
    return (isinstance(item, Op) and item.name == "dot_general" and len(item.operands) == 2
            and not involves_narrow_float(item) and not has_narrow_float(item))


def fuse_sibling_contractions(ops, lead: int) -> list:
    """The items of ``ops`` with each group of sibling dot_generals (``_key``) replaced by one
    SiblingContractions where the first of them was. A sibling joins only when its right
    operand is defined before that place, so the step reads nothing computed after it."""
    defined_at: dict[int, int] = {}
    for position, item in enumerate(ops):
        for value in item.results:
            defined_at[value.id] = position
    groups: dict[tuple, list[int]] = {}
    for position, item in enumerate(ops):
        if _candidate(item):
            groups.setdefault(_key(item), []).append(position)
    replaced: dict[int, SiblingContractions] = {}
    dropped: set[int] = set()
    for positions in groups.values():
        first = positions[0]
        members = [position for position in positions if defined_at.get(ops[position].operands[1].id, -1) < first]
        if len(members) < 2 or members[0] != first:
            continue
        dots = [ops[position] for position in members]
        operands = (dots[0].operands[0],) + tuple(dot.operands[1] for dot in dots)
        replaced[first] = SiblingContractions(f"dot_general x{len(dots)}", operands,
                                              tuple(dot.result for dot in dots), sibling_contractions(dots, lead))
        dropped |= set(members[1:])
    return [replaced.get(position, item) for position, item in enumerate(ops) if position not in dropped]


def _run_gemms(start: int, stop: int, gemms) -> None:
    for left, right, out in gemms[start:stop]:
        np.matmul(left, right, out=out)


def sibling_contractions(dots: list[Op], lead: int):
    """The function of a SiblingContractions step: ``(lhs, *rhs) -> results``. Where every
    dot's GEMMs would be handed to the threads whole (``matmul_split`` says "batch"), all of
    them go in one job; otherwise each dot runs its own kernel, as it would alone."""
    left_operand = matmul_operand(dots[0], lead, 0)
    right_operands = [matmul_operand(dot, lead, 1) for dot in dots]
    plain = [dot_kernel(dot, lead) for dot in dots]
    result_local = dots[0].result.type.shape
    jobs: dict[tuple, bool] = {}

    def run_plain(lhs, rights):
        return tuple(kernel(lhs, rhs)[0] for kernel, rhs in zip(plain, rights))

    def joins(lhs, rights) -> bool:
        left = left_operand(lhs)
        return not _stacks_rows(lhs, rights, lead) and all(
            matmul_split(left.shape, operand(rhs).shape)[0] == "batch" for operand, rhs in zip(right_operands, rights))

    def run(lhs, *rights):
        key = (lhs.shape, tuple(rhs.shape for rhs in rights), thread_count())
        joined = jobs.get(key)
        if joined is None:
            joined = jobs[key] = joins(lhs, rights)
        if not joined:
            return run_plain(lhs, rights)
        left = left_operand(lhs)
        matrices = [operand(rhs) for operand, rhs in zip(right_operands, rights)]
        gemms, results = [], []
        for right in matrices:
            batch = np.broadcast_shapes(left.shape[:-2], right.shape[:-2])
            out = empty(batch + (left.shape[-2], right.shape[-1]), np.result_type(left, right))
            full_left = np.broadcast_to(left, batch + left.shape[-2:])
            full_right = np.broadcast_to(right, batch + right.shape[-2:])
            gemms += [(full_left[index], full_right[index], out[index]) for index in np.ndindex(batch)]
            results.append(out.reshape(out.shape[:lead] + result_local))
        with single_threaded_blas():
            parallel_for(_run_gemms, len(gemms), (gemms,), grain=1, alignment=1, chunks=len(gemms))
        return tuple(results)

    return run


def _stacks_rows(lhs: np.ndarray, rights, lead: int) -> bool:
    """Whether a dot's own kernel might stack its devices' rows into one GEMM (dot_kernel does
    for small GEMMs whose right operand is the same along leading axes the left varies on):
    those run as they would alone, so their GEMMs stay the same."""
    return any(rhs.shape[axis] == 1 < lhs.shape[axis] for rhs in rights for axis in range(lead))
