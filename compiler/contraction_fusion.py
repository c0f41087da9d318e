"""Fusing ``all_reduce(dot_general(...))`` into one matmul for the in-process executor.

On simulated devices the partial products of a sharded contraction and their sum can be one
GEMM over the devices' shards laid side by side (kernels.reduced_contraction): the same
numbers, a bigger and faster BLAS call, and no partial results held in memory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from meshjit.ir import Op, Value
from meshjit.ir.dtypes import to_numpy
from meshjit.runtime.threads import parallel_for, single_threaded_blas, thread_count

from .fusion import FusedKernel
from .launch import LeadMaps
from .rules import kernel_rules
from .rules.dot import matmul_operand, reduced_contraction


@dataclass
class ReducedContraction:
    """A dot_general and the all_reduce (sum) that consumes it, run as one step."""

    label: str
    operands: tuple[Value, ...]
    results: tuple[Value, ...]
    function: object


def fuse_contraction_reductions(ops, returns, axis_names, mesh_shape: tuple[int, ...]) -> list:
    lead = len(mesh_shape)
    uses: dict[int, int] = {}
    for op in ops:
        for operand in op.operands:
            uses[operand.id] = uses.get(operand.id, 0) + 1
    for value in returns:
        uses[value.id] = uses.get(value.id, 0) + 1
    producers = {op.result.id: op for op in ops if isinstance(op, Op) and op.name == "dot_general"}
    fused_dots = set()
    result = []
    for op in ops:
        dot = producers.get(op.operands[0].id) if isinstance(op, Op) and op.name == "all_reduce" else None
        if dot is None or uses.get(dot.result.id) != 1 or op.attrs["reduction"] != "sum":
            result.append(op)
            continue
        axes = tuple(axis_names.index(name) for name in op.attrs["axes"])
        function = reduced_contraction(dot, axes, lead, mesh_shape)
        result.append(ReducedContraction("dot_general+all_reduce", dot.operands, op.results, function))
        fused_dots.add(dot.result.id)
    # the dots now computed inside their reductions are dropped
    return [op for op in result if not (isinstance(op, Op) and op.name == "dot_general" and op.result.id in fused_dots)]


# --- dot_general -> rows kernel -> dot_general, one slice at a time --------------------------

# NOTE: a chain is formed only when each slice does at least this many multiply-adds: a slice
# costs about 30 µs of Python around its two GEMMs and kernel call
CHAIN_MIN_WORK = 1 << 20


@dataclass
class ContractionChain:
    """``second(kernel(first(a, b), ...), c)`` (attention's scores, softmax and weighted sum)
    run one (device, batch index) slice at a time, so each slice's intermediates stay in cache."""

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


def _chain_of(second, producers: dict, uses: dict):
    """``(first, kernel)`` when ``second`` (a dot_general) contracts the only output of a rows
    kernel over its columns, batched over its leading dims, and that kernel reads a
    dot_general's result laid out as its rows x columns; else None."""
    kernel = producers.get(second.operands[0].id)
    if not isinstance(kernel, FusedKernel) or kernel.rows_entry is None or len(kernel.outputs) != 1:
        return None
    entry = kernel.rows_entry
    firsts = [value for value, kind in entry.source.inputs if kind == "full" and uses.get(value.id) == 1
              and isinstance(producers.get(value.id), Op) and producers[value.id].name == "dot_general"]
    if not firsts or entry.source.outputs[0][1] != "full" or uses.get(kernel.outputs[0].id) != 1:
        return None
    first = producers[firsts[0].id]
    (lhs_contracting, _), (lhs_batch, _) = first.attrs["contracting_dims"], first.attrs["batch_dims"]
    batch = len(lhs_batch)
    free = first.operands[0].type.rank - batch - len(lhs_contracting)
    shape = first.result.type.shape
    (contracting, _), (second_batch, _) = second.attrs["contracting_dims"], second.attrs["batch_dims"]
    if (tuple(second_batch) != tuple(range(batch)) or tuple(contracting) != tuple(range(batch + free, len(shape)))
            or entry.rows != math.prod(shape[:batch + free]) or entry.columns != math.prod(shape[batch + free:])):
        return None
    values = [*first.operands, first.result, kernel.outputs[0], *second.operands, second.result]
    if len({value.type.dtype for value in values}) != 1 or values[0].type.dtype not in ("f32", "f64"):
        return None
    slice_work = math.prod(shape[batch:]) * (math.prod(first.operands[0].type.shape[d] for d in lhs_contracting)
                                             + math.prod(second.result.type.shape[batch + free:]))
    return (first, kernel) if slice_work >= CHAIN_MIN_WORK else None


def fuse_contraction_chains(ops, returns, lead: int) -> list:
    """The items of ``ops`` (ops, fused kernels) with every chain dot_general -> rows kernel ->
    dot_general (``_chain_of``) replaced by one ContractionChain where the second dot was."""
    uses = _uses(ops, returns)
    producers = {value.id: item for item in ops for value in item.results}
    replaced: dict[int, ContractionChain] = {}
    dropped: set[int] = set()
    for item in ops:
        if not (isinstance(item, Op) and item.name == "dot_general"):
            continue
        found = _chain_of(item, producers, uses)
        if found is None:
            continue
        first, kernel = found
        others = [value for value in kernel.inputs if value.id != first.result.id]
        operands = (*first.operands, *others, item.operands[1])
        replaced[id(item)] = ContractionChain("dot_general+" + kernel.label + "+dot_general", operands, item.results,
                                              contraction_chain(first, kernel, item, lead))
        dropped |= {id(first), id(kernel)}
    return [replaced.get(id(item), item) for item in ops if id(item) not in dropped]


def _balanced(slices: int) -> bool:
    # whole slices balance when each thread gets several, or the same number
    threads = thread_count()
    return slices >= 2 * threads or slices % threads == 0


_KIND_SHAPES = {"full": lambda rows, columns: (rows, columns), "row": lambda rows, columns: (rows,),
                "col": lambda rows, columns: (columns,), "scalar": lambda rows, columns: (1,)}


def _slice_inputs(buffers, kinds, full, lead: int, batches: int, rows: int, columns: int, maps: LeadMaps):
    """The kernel's inputs as it reads one slice's rows (a full or row input viewed as blocks of
    one batch index's rows, so the slice is block ``position * batches + batch``), and per
    slice the block of each input it reads; ``None`` buffers (the scratch block) read block 0."""
    slices = math.prod(full) * batches
    views = []
    blocks = np.zeros((slices, len(kinds)), np.int64)
    for index, (buffer, kind) in enumerate(zip(buffers, kinds)):
        if buffer is None:
            views.append(None)
            continue
        views.append(np.ascontiguousarray(buffer).reshape((-1,) + _KIND_SHAPES[kind](rows, columns)))
        positions = maps(buffer.shape[:lead], full)
        if kind in ("full", "row"):
            blocks[:, index] = (positions[:, None] * batches + np.arange(batches)).ravel()
        else:
            blocks[:, index] = np.repeat(positions, batches)
    return views, blocks


def contraction_chain(first: Op, kernel: FusedKernel, second: Op, lead: int):
    """The function of a ContractionChain's buffers (``first``'s operands, the kernel's other
    inputs, ``second``'s right operand): per slice (a leading position and a batch index), the
    slice of ``first`` into a scratch block, the kernel over its rows into a second one, and
    ``second``'s GEMM of that block into the result. Where the slices cannot be shared evenly
    over the threads, the three steps run as they would unchained."""
    entry = kernel.rows_entry
    batch_shape = first.result.type.shape[:len(first.attrs["batch_dims"][0])]
    batches = math.prod(batch_shape)
    rows, columns = entry.rows // batches, entry.columns
    position = [value.id for value, _ in entry.source.inputs].index(first.result.id)
    kinds = [kind for _, kind in entry.source.inputs]
    prepare = (matmul_operand(first, lead, 0), matmul_operand(first, lead, 1), matmul_operand(second, lead, 1))
    unchained = (kernel_rules["dot_general"](first, lead), kernel.function, kernel_rules["dot_general"](second, lead))
    dtype = to_numpy(first.result.type.dtype)
    scratch_dtypes = [to_numpy(name) for name in entry.source.scratch]
    result_local = second.result.type.shape
    maps = LeadMaps()

    def run(lhs, rhs, *rest):
        others, value = list(rest[:-1]), rest[-1]
        full = np.broadcast_shapes(*(buffer.shape[:lead] for buffer in (lhs, rhs, value, *others)))
        slices = math.prod(full) * batches
        if not _balanced(slices):
            (product,) = unchained[0](lhs, rhs)
            (weights,) = unchained[1](*others[:position], product, *others[position:])
            return unchained[2](weights, value)
        left, right, last = (np.broadcast_to(array, full + batch_shape + array.shape[-2:])
                             for array in (prepare[0](lhs), prepare[1](rhs), prepare[2](value)))
        views, blocks = _slice_inputs(others[:position] + [None] + others[position:], kinds, full, lead, batches,
                                      rows, columns, maps)
        out = np.empty((slices, rows, last.shape[-1]), dtype)
        threads = thread_count()
        scratch = np.empty((2, threads, 1, rows, columns), dtype)
        scratch_rows = [np.empty((threads, columns), scratch_dtype) for scratch_dtype in scratch_dtypes]
        indices = list(np.ndindex(full + batch_shape))
        slot_argument = (None,) if scratch_dtypes else ()

        def run_slices(start, stop, slot):
            products, weights = scratch[0, slot], scratch[1, slot]
            inputs = [products if view is None else view for view in views]
            head = (0, rows, slot, rows, columns) if slot_argument else (0, rows, rows, columns)
            for index in range(start, stop):
                np.matmul(left[indices[index]], right[indices[index]], out=products[0])
                pairs = [item for number, view in enumerate(inputs) for item in (view, blocks[index, number:number + 1])]
                entry.function(*head, *pairs, weights, *scratch_rows)
                np.matmul(weights[0], last[indices[index]], out=out[index])

        with single_threaded_blas():
            parallel_for(run_slices, slices, (), grain=1, alignment=1, indexed=True)
        return (out.reshape(full + result_local),)

    return run
