"""Tiered fused kernels: a kernel step runs at once on a first tier that needs no compilation
while its kernel compiles in a worker process (compile_service.py), and switches to the kernel
between two of its calls. The first tier is the group's ops run one by one in numpy, and it is
only used where that gives the kernel's bits exactly (``has_first_tier``): ops whose numpy
kernel rounds as the fused expression does, the others spelled as the kernel computes them
(tier_ops.py: the transcendental helpers, tier_math.py, with exact FMAs, or the same helpers
compiled in the installation's kernel library, op_library.py), and reductions in their
kernel's order (tier_reductions.py). A group with a float sum or product over its trailing
dims (its kernel's partial sums follow the CPU's vector lanes), or an op calling libm, has no
first tier: its kernel is queued when the plan is built and its first call waits for it.
docs/execution.md "Tiered execution" has the whole design.
"""

from __future__ import annotations

import itertools
import math
import os

import numpy as np
from meshjit.ir import Value
from meshjit.ir.dtypes import to_numpy

from . import kernel_objects
from .launch import empty, parallel_for
from .compile_service import compile_mode, service
from . import op_library
from .tier_ops import costly, identical, library_helper, on_library, tier_kernel
from .tier_reductions import reproducible

_ORDER = itertools.count()
# NOTE: a helper spelled in numpy with emulated FMAs costs 2.3-10 us an element on the first
# tier (hundreds of array passes; float32 tanh, 2^17 elements: 0.8 s on the loaded 2-core
# machine, float64 exp 1.3 s): above this many elements a call on it costs more than compiling
FIRST_TIER_MATH_MAX_ELEMENTS = 1 << 15


def _dtype_text(value: Value) -> str:
    return np.dtype(to_numpy(value.type.dtype)).str


def elementwise_signature(inputs: list[Value], outputs: list[Value]) -> tuple:
    """The argument kinds (kernel_objects._signature) an elementwise launcher calls with."""
    kinds = [("i",)] * 3
    for value in inputs:
        kinds += [("a", _dtype_text(value), 2), ("a", "<i8", 1)]
    return tuple(kinds + [("a", _dtype_text(value), 2) for value in outputs])


def rows_signature(inputs, outputs, scratch) -> tuple:
    """The same for a rows or columns launcher (``inputs``, ``outputs``: (value, kind) pairs)."""
    dims = {"full": 3, "row": 2, "col": 2, "scalar": 2}
    kinds = [("i",)] * (5 if scratch else 4)
    for value, kind in inputs:
        kinds += [("a", _dtype_text(value), dims[kind]), ("a", "<i8", 1)]
    kinds += [("a", _dtype_text(value), dims[kind]) for value, kind in outputs]
    return tuple(kinds + [("a", np.dtype(to_numpy(dtype)).str, 2) for dtype in scratch])


def _compile_elsewhere(kernel, signature, stem: str) -> bool:
    """kernel_objects' hook: in background mode, a kernel about to compile on the calling
    thread waits for a worker instead (first in the queue); False sends it back to Numba here."""
    if compile_mode() != "background":
        return False
    compiler = service()
    job = compiler.submit(kernel.request(signature), (0, next(_ORDER)))
    if job.wait() and os.path.exists(stem + ".json"):
        return True
    compiler.warn_once()
    return False


kernel_objects.compile_elsewhere = _compile_elsewhere


def _exact(group) -> bool:
    """Whether every op's numpy step gives the kernel's bits (tier_ops.py) and the group's
    reductions run in the kernel's order (tier_reductions.py)."""
    return all(identical(op) for op in group.ops) and (group.split is None or reproducible(group))


def _emulated(group) -> list:
    """The ops of ``group`` whose helper the first tier would emulate with FMAs in numpy (not
    built in the kernel library, op_library.py)."""
    return [op for op in group.ops if costly(op) and not on_library(op)]


def has_first_tier(group) -> bool:
    """Whether the first tier gives ``group``'s kernel bits (``_exact``) at a cost below
    compiling: a helper the first tier emulates with FMAs only in a group of at most
    ``FIRST_TIER_MATH_MAX_ELEMENTS`` (the kernel library's helpers at any size)."""
    return _exact(group) and (not _emulated(group) or math.prod(group.shape) <= FIRST_TIER_MATH_MAX_ELEMENTS)


def _build_library(group) -> None:
    """Queue the kernel library's missing entries that would give ``group`` a first tier, ahead
    of every kernel: the installation's next programs run such groups at once."""
    if _exact(group):
        helpers = {library_helper(op) for op in _emulated(group)} - {None}
        op_library.request_missing(sorted(helpers), lambda request: service().submit(request, (-1, next(_ORDER))))


def tiered(kernel, signature: tuple, launcher, group, inputs: list[Value], outputs: list[Value]):
    """The step function of a fused kernel under ``MESHJIT_COMPILE``: the launcher itself when
    the kernel is in the cache or compiles at its first call (sync, and groups without a first
    tier, which background mode queues now); else a TieredKernel."""
    mode = compile_mode()
    if mode == "sync" or os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0"):
        return launcher  # NOTE: without Numba's compiler the kernel is its Python source: no tiers
    stem = kernel.stem(signature)
    cached = os.path.exists(stem + ".json")
    if not has_first_tier(group):
        if mode == "background" and not cached:
            _build_library(group)
            service().submit(kernel.request(signature), (0, next(_ORDER)))
        return launcher
    if mode == "background" and cached:
        return launcher
    benefit = math.prod(group.shape) * len(group.ops)
    return TieredKernel(launcher, first_tier(group, inputs, outputs), kernel.request(signature),
                        (1, -benefit, next(_ORDER)) if mode == "background" else None)


class TieredKernel:
    """A fused kernel's step: the first tier until the kernel's object code is on disk, then
    the launcher. The kernel is queued at the step's second call (a program called once never
    compiles it), ahead of kernels that save less time per call; a failed job leaves the step
    on the first tier for good."""

    __slots__ = ("launcher", "first", "request", "priority", "job", "calls")

    def __init__(self, launcher, first, request: dict, priority: tuple | None):
        self.launcher, self.first, self.request, self.priority = launcher, first, request, priority
        self.job, self.calls = None, 0

    @property
    def on_kernel(self) -> bool:
        return self.job is not None and self.job.done

    def __call__(self, *buffers):
        job = self.job
        if job is not None:
            if job.done:
                return self.launcher(*buffers)
            if job.state == "failed":
                service().warn_once()
                self.job = self.priority = None
        elif self.priority is not None:
            self.calls += 1
            if self.calls >= 2:
                self.job = service().submit(self.request, self.priority)
        return self.first(*buffers)


def _lifted(buffer: np.ndarray, rank: int) -> np.ndarray:
    """A rank-0 value's buffer with ``rank`` trailing unit dims, to broadcast against the local
    dims (the kernel reads it once, as a scalar)."""
    return buffer.reshape(buffer.shape + (1,) * rank)


def _reusable(values: dict, dying: list[int], operands: list, dtype: np.dtype) -> np.ndarray | None:
    """A buffer among ``dying`` (values no later op reads) that can take the op's result: it
    owns its memory, is C-contiguous, has the result's shape (the operands' broadcast) and dtype,
    and no other value's buffer may share its memory."""
    shape = np.broadcast_shapes(*(operand.shape for operand in operands))
    for number in dying:
        buffer = values[number]
        if not (isinstance(buffer, np.ndarray) and buffer.flags.owndata and buffer.flags.c_contiguous
                and buffer.flags.writeable and buffer.shape == shape and buffer.dtype == dtype and buffer.size):
            continue
        # NOTE: by key, not identity: one buffer may stand for several values (an identity op)
        if not any(np.may_share_memory(other, buffer)
                   for key, other in values.items() if key != number and isinstance(other, np.ndarray)):
            return buffer
    return None


def _input_reads(group, inputs: list[Value], outputs: list[Value]) -> list[list[int]]:
    """Per output, the positions in ``inputs`` of the inputs it is computed from."""
    position = {value.id: index for index, value in enumerate(inputs)}
    position.update([(alias, position[source.id]) for alias, source in group.aliases.items()
                     if source.id in position and alias not in position])
    reads = {key: {index} for key, index in position.items()}
    for op in group.ops:
        reads[op.result.id] = set().union(*(reads.get(operand.id, set()) for operand in op.operands))
    return [sorted(reads.get(value.id, ())) for value in outputs]


# NOTE: a first tier over at least this many elements runs a block of leading (mesh) positions
# at a time, on every core: numpy's ops in one thread made the cold first call of a softmax over
# 2^24 float32 elements several passes over 64 MB arrays, each in fresh pages
BLOCKED_MIN_ELEMENTS = 1 << 17


def first_tier(group, inputs: list[Value], outputs: list[Value]):
    """``run(*input buffers) -> output buffers``: the group's ops as their numpy kernels, over
    all leading positions at once, or (large groups) a block of them at a time on every core."""
    functions: dict[int, list] = {}
    # a scalar broadcast's rank: the group's, or a row value's in a rows group
    ranks = {operand.id: operand.type.rank for op in group.ops for operand in op.operands if operand.id in group.aliases}

    def kernels(lead: int) -> list:
        found = functions.get(lead)
        if found is None:
            found = functions[lead] = [tier_kernel(op, lead, group.leading) for op in group.ops]
        return found

    # an intermediate the group reads last at op ``index`` (never an input or an output): its
    # buffer may take that op's result (a large first tier allocates fresh pages for each array)
    produced = {op.result.id for op in group.ops} - {value.id for value in outputs}
    last_reads = {operand.id: index for index, op in enumerate(group.ops) for operand in op.operands}
    dying = [[operand.id for operand in op.operands if operand.id in produced and last_reads[operand.id] == index]
             for index, op in enumerate(group.ops)]
    result_dtypes = [np.dtype(to_numpy(op.result.type.dtype)) for op in group.ops]
    output_dtypes = [np.dtype(to_numpy(value.type.dtype)) for value in outputs]
    reads = _input_reads(group, inputs, outputs)

    def values_of(buffers, lead: int, targets: dict) -> dict:
        """Every value's buffer, each op's result written into ``targets[its id]`` (an output's
        block) where it can be, else into a dying intermediate's buffer."""
        values = {value.id: buffer for value, buffer in zip(inputs, buffers)}
        for alias, source in group.aliases.items():
            if source.id in values and alias in ranks:
                values[alias] = _lifted(values[source.id], ranks[alias])
        for index, (op, function) in enumerate(zip(group.ops, kernels(lead))):
            operands = [values[operand.id] for operand in op.operands]
            into = getattr(function, "into", None)
            out = None
            if into is not None:
                # NOTE: an output's block has the op's dtype (it is the op's result) but may be
                # broadcast to a larger shape than the operands give
                out = targets.get(op.result.id)
                if out is not None and out.shape != np.broadcast_shapes(*(operand.shape for operand in operands)):
                    out = None
                if out is None and dying[index]:
                    out = _reusable(values, dying[index], operands, result_dtypes[index])
            (values[op.result.id],) = function(*operands) if out is None else into(out, *operands)
        return values

    def run(*buffers):
        lead = buffers[0].ndim - inputs[0].type.rank
        if lead and max(buffer.size for buffer in buffers) >= BLOCKED_MIN_ELEMENTS:
            full = np.broadcast_shapes(*(buffer.shape[:lead] for buffer in buffers))
            if full[0] > 1:
                return in_blocks(buffers, lead, full)
        values = values_of(buffers, lead, {})
        results = []
        for value in outputs:
            result = values[value.id]
            if result.shape[lead:] != value.type.shape:
                result = np.broadcast_to(result, result.shape[:lead] + value.type.shape)
            results.append(result)
        return tuple(results)

    def in_blocks(buffers, lead: int, full: tuple):
        """The outputs, allocated whole, filled a block of first leading positions at a time
        (each block's ops run as above, on whichever thread takes it): the leading dims are the
        mesh's, which no op of a group mixes."""
        kernels(lead)  # NOTE: built here, once, not by two blocks at once (library entries link)
        results = []
        for value, dtype, positions in zip(outputs, output_dtypes, reads):
            own = np.broadcast_shapes(*(buffers[index].shape[:lead] for index in positions)) if positions else (1,) * lead
            results.append(empty(own + value.type.shape, dtype))

        def block(start: int, stop: int) -> None:
            sliced = [buffer[start:stop] if buffer.shape[0] > 1 else buffer for buffer in buffers]
            # an output the same along the first leading dim is written by the first block alone
            mine = [result[start:stop] if result.shape[0] > 1 else (result if start == 0 else None)
                    for result in results]
            targets = {value.id: target for value, target in zip(outputs, mine) if target is not None}
            values = values_of(sliced, lead, targets)
            for value, target in zip(outputs, mine):
                if target is not None and values[value.id] is not target:
                    target[...] = values[value.id]

        parallel_for(block, full[0], (), grain=1, alignment=1, chunks=full[0])
        return tuple(results)

    return run
