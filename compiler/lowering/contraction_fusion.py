"""Steps that join a dot_general to what surrounds it, for the executor.

``fuse_contraction_reductions``: on simulated devices the partial products of a sharded
contraction and their sum can be one GEMM over the devices' shards laid side by side
(rules/dot.py ``reduced_contraction``): the same numbers, a bigger and faster BLAS call, and no
partial results held in memory. ``fuse_contraction_chains``: a dot_general, the fused kernel
that alone reads its result and, for a rows kernel, the dot_general that alone reads the
kernel's output (attention's scores, softmax and weighted sum), run one slice at a time so the
intermediates stay in cache (docs/execution.md, "Contraction chains").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from meshjit.ir import Op, Value
from meshjit.ir.dtypes import NARROW_FLOATS, to_numpy

from .fusion import FusedKernel
from .launch import LeadMaps, empty, parallel_for, single_threaded_blas, thread_count
from .matmul_kernels import matmul_operand, reduced_contraction, reduced_left_order
from .tiers import TieredKernel
from ..tables import kernel_rules


@dataclass
class ReducedContraction:
    """A dot_general and the all_reduce (sum) that consumes it, run as one step.
    ``left_order``: the order of the left operand's dims (leading ones included) in which its
    GEMM reads it without a copy, or None (matmul_kernels.reduced_left_order)."""

    label: str
    operands: tuple[Value, ...]
    results: tuple[Value, ...]
    function: object
    left_order: tuple[int, ...] | None = None


def fuse_contraction_reductions(ops, returns, axis_names, mesh_shape: tuple[int, ...]) -> list:
    lead = len(mesh_shape)
    uses = _uses(ops, returns)
    producers = {op.result.id: op for op in ops if isinstance(op, Op) and op.name == "dot_general"}
    fused_dots = set()
    result = []
    for op in ops:
        dot = producers.get(op.operands[0].id) if isinstance(op, Op) and op.name == "all_reduce" else None
        if (dot is None or uses.get(dot.result.id) != 1 or op.attrs["reduction"] != "sum"
                or dot.result.type.dtype in NARROW_FLOATS):  # a narrow dot rounds before the sum
            result.append(op)
            continue
        axes = tuple(axis_names.index(name) for name in op.attrs["axes"])
        function = reduced_contraction(dot, axes, lead, mesh_shape)
        result.append(ReducedContraction("dot_general+all_reduce", dot.operands, op.results, function,
                                         reduced_left_order(dot, axes, lead)))
        fused_dots.add(dot.result.id)
    # the dots now computed inside their reductions are dropped
    return [op for op in result if not (isinstance(op, Op) and op.name == "dot_general" and op.result.id in fused_dots)]


# --- dot_general -> fused kernel [-> dot_general], one slice at a time ---------------------

# NOTE: a chain is formed only when each slice does at least this many multiply-adds: a slice
# costs about 30 µs of Python around its GEMMs and kernel call
CHAIN_MIN_WORK = 1 << 20


@dataclass
class ContractionChain:
    """``kernel(first(a, b), ...)`` with a rows kernel, or ``second(kernel(first(a, b), ...),
    c)`` (attention's scores, softmax and weighted sum), run one (leading position, batch
    index) slice at a time, so that each slice's intermediates stay in cache (see
    ``contraction_chain``)."""

    label: str
    operands: tuple[Value, ...]
    results: tuple[Value, ...]
    function: object


def _uses(ops, returns) -> dict[int, int]:
    uses: dict[int, int] = {}
    for item in ops:
        for operand in item.operands:
            uses[operand.id] = uses.get(operand.id, 0) + 1
    for value in returns:
        uses[value.id] = uses.get(value.id, 0) + 1
    return uses


def _slice_shape(first: Op) -> tuple[int, int, int, int]:
    """(batch dims, lhs free dims, rows, inner) of a dot_general's slices."""
    lhs = first.operands[0].type
    (contracting, _), (batch, _) = first.attrs["contracting_dims"], first.attrs["batch_dims"]
    free = lhs.rank - len(batch) - len(contracting)
    shape = first.result.type.shape
    return len(batch), free, math.prod(shape[len(batch):len(batch) + free]), math.prod(lhs.shape[d] for d in contracting)


def _first_of(kernel, producers: dict, uses: dict):
    """The dot_general whose result ``kernel``, a rows kernel, reads as a full input laid out
    as the kernel's rows x columns (batch and left free dims x right free dims), when that is
    its only reader. (An elementwise kernel after a GEMM gains nothing: the Megatron MLP's
    first GEMM and gelu took 1-2% more CPU time chained, the GEMM's operands losing the cache
    to the kernel.)"""
    entry = kernel.rows_entry if isinstance(kernel, FusedKernel) else None
    if entry is None:
        return None
    for value, kind in entry.inputs:
        first = producers.get(value.id)
        if kind != "full" or uses.get(value.id) != 1 or not (isinstance(first, Op) and first.name == "dot_general"):
            continue
        batch, free, rows, _ = _slice_shape(first)
        shape = first.result.type.shape
        dtypes = {operand.type.dtype for operand in (*first.operands, first.result)}
        if (len(dtypes) == 1 and dtypes <= {"f32", "f64"} and entry.rows == math.prod(shape[:batch + free])
                and entry.columns == math.prod(shape[batch + free:])):
            return first
    return None


def _second_of(kernel, first: Op, consumers: dict, uses: dict):
    """The dot_general that contracts the kernel's one full output over its columns, batched
    over the same dims, as its left operand, when it is that output's only reader."""
    if len(kernel.outputs) != 1 or kernel.rows_entry.outputs[0][1] != "full" or uses.get(kernel.outputs[0].id) != 1:
        return None
    second = consumers.get(kernel.outputs[0].id)
    if not (isinstance(second, Op) and second.name == "dot_general" and second.operands[0] is kernel.outputs[0]):
        return None
    batch, free, _, _ = _slice_shape(first)
    rank = first.result.type.rank
    (contracting, _), (second_batch, _) = second.attrs["contracting_dims"], second.attrs["batch_dims"]
    same_dtype = {operand.type.dtype for operand in (*second.operands, second.result)} == {first.result.type.dtype}
    if tuple(second_batch) == tuple(range(batch)) and tuple(contracting) == tuple(range(batch + free, rank)) and same_dtype:
        return second
    return None


def _slice_work(first: Op, second) -> int:
    batch, _, rows, inner = _slice_shape(first)
    columns = math.prod(first.result.type.shape) // max(1, math.prod(first.result.type.shape[:batch]) * rows)
    extra = 0 if second is None else math.prod(second.result.type.shape) // max(
        1, math.prod(second.result.type.shape[:batch]) * rows)
    return rows * columns * (inner + extra)


def fuse_contraction_chains(ops, returns, lead: int) -> list:
    """The items of ``ops`` (ops, fused kernels) with every dot_general -> rows kernel, and
    every dot_general -> rows kernel -> dot_general (``_first_of``, ``_second_of``), replaced
    by one ContractionChain where its last op was."""
    uses = _uses(ops, returns)
    producers = {value.id: item for item in ops for value in item.results}
    consumers = {operand.id: item for item in ops for operand in item.operands}
    replaced: dict[int, ContractionChain] = {}
    dropped: set[int] = set()
    for item in ops:
        first = _first_of(item, producers, uses)
        # NOTE: a dot_general that ends one chain cannot start another (an MLP's second GEMM):
        # the later chain would drop it, and the earlier chain with it
        if first is None or id(first) in replaced:
            continue
        second = _second_of(item, first, consumers, uses)
        if _slice_work(first, second) < CHAIN_MIN_WORK:
            continue
        others = [value for value in item.inputs if value.id != first.result.id]
        label = "dot_general+" + item.label + ("+dot_general" if second else "")
        operands = (*first.operands, *others) + ((second.operands[1],) if second else ())
        order = _result_order(second, consumers, uses, lead) if second else None
        chain = ContractionChain(label, operands, second.results if second else tuple(item.outputs),
                                 contraction_chain(first, item, second, lead, order))
        replaced[id(second or item)] = chain
        dropped |= {id(first)} | ({id(item)} if second else set())
    return [replaced.get(id(item), item) for item in ops if id(item) not in dropped]


def _result_order(second: Op, consumers: dict, uses: dict, lead: int) -> tuple[int, ...] | None:
    """The layout a full chain writes its result in (an order of its dims, leading ones
    included, outermost first), where its one reader, directly or through a transpose that
    alone reads it, is a ReducedContraction's left operand: the order in which that GEMM reads
    it, so that its left matrix is a view, not a copy (attention's weighted sum, read by the
    output projection as tokens x (devices, heads, head dims)). None for the plain layout, also
    where the order would not keep the last dim (each slice is written as a matrix by BLAS)."""
    value = second.result
    reader = consumers.get(value.id) if uses.get(value.id) == 1 else None
    outer = list(range(lead + value.type.rank))
    if isinstance(reader, Op) and reader.name == "transpose" and uses.get(reader.result.id) == 1:
        outer = list(range(lead)) + [lead + axis for axis in reader.attrs["permutation"]]
        value, reader = reader.result, consumers.get(reader.result.id)
    if not (isinstance(reader, ReducedContraction) and reader.left_order is not None and reader.operands[0] is value
            and value.type.rank == second.result.type.rank == len(second.attrs["batch_dims"][0]) + 2):
        return None
    order = tuple(outer[axis] for axis in reader.left_order)
    return order if order[-1] == lead + value.type.rank - 1 and order != tuple(range(len(order))) else None


def _balanced(slices: int) -> bool:
    # whole slices balance when each thread gets several, or the same number
    threads = thread_count()
    return slices >= 2 * threads or slices % threads == 0


def _kind_shape(kind: str, rows: int, columns: int) -> tuple[int, ...]:
    """The shape of one block of a rows kernel's input or output of ``kind``."""
    return {"full": (rows, columns), "row": (rows,), "col": (columns,), "scalar": (1,)}[kind]


def _slice_views(buffers, kinds, full, lead: int, batches: int, shapes, maps: LeadMaps):
    """The kernel's inputs as it reads one slice (a full or row input viewed as blocks of one
    batch index's rows, so the slice is block ``position * batches + batch``), and per slice
    the block of each input it reads; a ``None`` buffer (a scratch block) reads block 0."""
    slices = math.prod(full) * batches
    views = []
    blocks = np.zeros((slices, len(kinds)), np.int64)
    for index, (buffer, kind) in enumerate(zip(buffers, kinds)):
        if buffer is None:
            views.append(None)
            continue
        views.append(np.ascontiguousarray(buffer).reshape((-1,) + shapes[index]))
        positions = maps(buffer.shape[:lead], full)
        if kind in ("full", "row"):
            blocks[:, index] = (positions[:, None] * batches + np.arange(batches)).ravel()
        else:
            blocks[:, index] = np.repeat(positions, batches)
    return views, blocks


def contraction_chain(first: Op, kernel: FusedKernel, second: Op | None, lead: int,
                      result_order: tuple[int, ...] | None = None):
    """The function of a ContractionChain's buffers (``first``'s operands, the kernel's other
    inputs, and ``second``'s right operand when there is a second dot): per slice (a leading
    position and a batch index of ``first``), ``first``'s GEMM into a scratch block, the kernel
    over that block into the kernel's outputs or, with a second dot, into a second scratch
    block, and ``second``'s GEMM of that block into the result. Where the slices cannot be
    shared evenly over the threads, or ``first``'s right operand is the same over leading axes
    along which its left one varies (the dot kernel then stacks those rows into one GEMM), or
    the kernel's object is not in yet (its step runs on its first tier), the steps run as they
    would unchained. ``result_order``: the layout of ``second``'s result
    (``_result_order``; None: row-major)."""
    entry = kernel.rows_entry
    batch, _, rows, _ = _slice_shape(first)
    batch_shape = first.result.type.shape[:batch]
    batches = math.prod(batch_shape)
    columns = math.prod(first.result.type.shape) // (batches * rows)
    position = [value.id for value, _ in entry.inputs].index(first.result.id)
    kinds = [kind for _, kind in entry.inputs]
    input_shapes = [_kind_shape(kind, rows, columns) for kind in kinds]
    # the kernel's leading arguments for one slice: its range of rows, then rows and n
    head = (0, rows, rows, columns)
    prepare = [matmul_operand(first, lead, 0), matmul_operand(first, lead, 1)]
    unchained = [kernel_rules["dot_general"](first, lead), kernel.function]
    if second is not None:
        prepare.append(matmul_operand(second, lead, 1))
        unchained.append(kernel_rules["dot_general"](second, lead))
    dtype = to_numpy(first.result.type.dtype)
    outputs = [(_kind_shape(kind, rows, columns), to_numpy(value.type.dtype), value.type.shape)
               for value, kind in entry.outputs]
    scratch_dtypes = [to_numpy(name) for name in entry.scratch]
    maps = LeadMaps()

    def run_unchained(lhs, rhs, others, last):
        (product,) = unchained[0](lhs, rhs)
        results = unchained[1](*others[:position], product, *others[position:])
        return results if second is None else unchained[2](results[0], last)

    def run(lhs, rhs, *rest):
        others, last = (list(rest[:-1]), rest[-1]) if second is not None else (list(rest), None)
        buffers = (lhs, rhs, *others) + (() if last is None else (last,))
        full = np.broadcast_shapes(*(buffer.shape[:lead] for buffer in buffers))
        slices = math.prod(full) * batches
        stacked = not batch and any(rhs.shape[axis] == 1 < lhs.shape[axis] for axis in range(lead))
        # NOTE: the chain calls the rows kernel's entry itself: until the kernel's object is in,
        # its steps run unchained, the kernel's step on its first tier (tiers.py), same bits
        waiting = isinstance(unchained[1], TieredKernel) and not unchained[1].on_kernel
        if stacked or waiting or not _balanced(slices):
            return run_unchained(lhs, rhs, others, last)
        operands = [np.broadcast_to(array, full + batch_shape + array.shape[-2:])
                    for array in (prepare[0](lhs), prepare[1](rhs))]
        if last is not None:
            operands.append(np.broadcast_to(prepare[2](last), full + batch_shape + (columns, prepare[2](last).shape[-1])))
        views, blocks = _slice_views(others[:position] + [None] + others[position:], kinds, full, lead, batches,
                                     input_shapes, maps)
        threads = thread_count()
        scratch = empty((2, threads, 1, rows, columns), dtype)
        scratch_rows = [np.empty((threads, columns), scratch_dtype) for scratch_dtype in scratch_dtypes]
        if second is None:
            results = [empty((slices,) + shape, output_dtype) for shape, output_dtype, _ in outputs]
        else:
            results = [_laid_out(full + batch_shape, (rows, operands[2].shape[-1]), result_order, dtype)]
        indices = list(np.ndindex(full + batch_shape))

        def run_slices(start, stop, slot):
            products, weights = scratch[0, slot], scratch[1, slot]
            inputs = [products if view is None else view for view in views]
            arguments = (*head[:2], slot, *head[2:]) if scratch_dtypes else head
            for index in range(start, stop):
                np.matmul(operands[0][indices[index]], operands[1][indices[index]], out=products[0])
                pairs = [item for number, view in enumerate(inputs) for item in (view, blocks[index, number:number + 1])]
                targets = [weights] if second is not None else [result[index:index + 1] for result in results]
                entry.function(*arguments, *pairs, *targets, *scratch_rows)
                if second is not None:
                    out = results[0][index] if result_order is None else results[0][indices[index]]
                    np.matmul(weights[0], operands[2][indices[index]], out=out)

        with single_threaded_blas():
            parallel_for(run_slices, slices, (), grain=1, alignment=1, indexed=True, chunks=slices)
        if second is not None:
            return (results[0].reshape(full + second.result.type.shape),)
        return tuple(result.reshape(full + shape) for result, (_, _, shape) in zip(results, outputs))

    return run


def _laid_out(outer: tuple, matrix: tuple[int, int], order: tuple[int, ...] | None, dtype) -> np.ndarray:
    """The chain's result as one (rows, columns) block per slice (``outer``: the leading and
    batch dims), row-major as (slice, rows, columns); or, with ``order`` (a result of one rows
    and one columns dim), of shape ``outer + matrix`` with its dims in memory in ``order``,
    outermost first."""
    if order is None:
        return empty((math.prod(outer),) + matrix, dtype)
    shape = outer + matrix
    return empty(tuple(shape[axis] for axis in order), dtype).transpose(np.argsort(order))

