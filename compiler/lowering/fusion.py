"""Fusing ops into Numba kernels: each Group (compiler/fusion_groups.py) becomes one kernel
that reads its inputs once and writes only the values read after it.

Groups without a split are elementwise chains over one flattened shape (codegen.py); groups with
a split also hold reductions or row/column broadcasts (codegen_reductions.py). Groups of one op
without a reduction, and groups of fewer elements than ``FUSION_MIN_ELEMENTS`` over the devices
a step serves, stay separate ops (numpy's ufuncs are as fast there, and need no compilation).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

from meshjit.ir import Op, Value

from .codegen import kernel_source, load_kernel
from .codegen_expressions import expression
from .codegen_math import PRELUDE
from .codegen_reductions import row_kernel_source
from .fusion_groups import REDUCERS, Group, group_ops
from .launch import elementwise_launcher, rows_launcher
from ..tables import math_of
from .tiers import elementwise_signature, rows_signature, tiered

FUSION_MIN_ELEMENTS = int(os.environ.get("MESHJIT_FUSION_MIN_ELEMENTS", "4096"))
# NOTE: below this many elements a kernel runs on the calling thread only; above, its range is
# split over the cores (runtime/threads.py; handing a chunk to a worker costs ~20 µs)
PARALLEL_MIN_ELEMENTS = int(os.environ.get("MESHJIT_PARALLEL_MIN_ELEMENTS", str(1 << 17)))


@dataclass(frozen=True)
class RowsEntry:
    """A rows kernel's compiled entry point, for callers that run it on rows of their own
    (compiler/contraction_fusion.py): ``function(start, stop, [slot,] rows, n, in0, map0, ...,
    out0, ..., [scratch rows])`` over (leading position, row) pairs; its inputs and outputs
    with their kinds (``full``, ``row``, ``col``, ``scalar``), the scratch rows' dtypes, and
    the group's rows x columns."""

    function: object
    inputs: tuple[tuple[Value, str], ...]
    outputs: tuple[tuple[Value, str], ...]
    scratch: tuple[str, ...]
    rows: int
    columns: int


@dataclass
class FusedKernel:
    """A group of ops run as one kernel: reads ``inputs``, writes ``outputs``."""

    label: str
    ops: list[Op]
    inputs: list[Value] = field(default_factory=list)
    outputs: list[Value] = field(default_factory=list)
    function: object = None
    rows_entry: RowsEntry | None = None

    @property
    def operands(self):
        return tuple(self.inputs)

    @property
    def results(self):
        return tuple(self.outputs)


def _expression_of(op: Op) -> str | None:
    return expression(op, ["a"] * len(op.operands))


# NOTE: a lone op the family marks ``alone`` (kernel_math) is a kernel too once it is large:
# numpy's loops for them are scalar and on one thread (a lone float32 hyperbolic tangent over
# 4096^2 took 50 ms through numpy, 14 ms fused). Below 2^16 elements numpy takes under 0.2 ms, less than the 30 ms a process
# pays once to load its first kernel.
KERNEL_ALONE_MIN_ELEMENTS = 1 << 16
# NOTE: and these are kernels at any size: their references emulate XLA's fused multiply-adds
# in numpy, dozens of passes an element (a float32 erf_inv of 65536 draws took 0.23 s that way;
# float32 sin and cos, glibc's sinf/cosf with exact FMAs, 7 us an element)
_KERNEL_ALWAYS = {"erf_inv", "fma", "sin", "cos"}
# NOTE: float32 exp, log, tanh, ... are XLA's algorithms, whose references emulate the FMAs too
# (ir/xla_math.py: 0.4 us an element, 22 ms for a lone exp of 60000 against 0.08 ms for numpy's
# own; pow is glibc's powf in numpy, ir/libm_powf.py): kernels from 1024 elements, where the reference still takes under a millisecond
_XLA_FLOAT32 = {"exp", "exp2", "expm1", "log", "log1p", "tanh", "logistic", "erf", "pow"}
XLA_FLOAT32_KERNEL_MIN_ELEMENTS = 1 << 10


def _worth_fusing(group: Group, devices: int = 1) -> bool:
    """Whether ``group`` becomes a kernel: its elements over the ``devices`` one launch serves
    (a step runs every local device's block at once) reach FUSION_MIN_ELEMENTS, and it reduces,
    chains ops, or is a large lone transcendental function; or it holds an op whose reference
    is far slower than any kernel (``_KERNEL_ALWAYS``, XLA's float32 functions from 1024
    elements)."""
    computing = [op for op in group.ops if op.name != "broadcast_in_dim"]
    if not group.inputs or not computing:
        return False
    if any(op.name in _KERNEL_ALWAYS for op in computing):
        return True
    if math.prod(group.shape) >= XLA_FLOAT32_KERNEL_MIN_ELEMENTS and any(
            op.name in _XLA_FLOAT32 and op.result.type.dtype == "f32" for op in computing):
        return True
    if math.prod(group.shape) * devices < FUSION_MIN_ELEMENTS:
        return False
    if group.reduces or len(group.ops) >= 2:
        return True
    return math.prod(group.shape) >= KERNEL_ALONE_MIN_ELEMENTS and any(math_of(op.name).alone for op in computing)


def fuse_kernels(ops, returns=(), devices: int = 1) -> list:
    """The ops with fusible groups replaced by FusedKernels (see the module docstring);
    ``devices``: how many devices' blocks each step runs (the mesh's size)."""
    items = group_ops(ops, returns, _expression_of, lambda group: _worth_fusing(group, devices))
    used_after: dict[int, int] = {}
    for position, item in enumerate(items):
        for operand in (item.inputs_read() if isinstance(item, Group) else item.operands):
            used_after[operand.id] = max(used_after.get(operand.id, -1), position)
    for value in returns:
        used_after[value.id] = len(items)
    result = []
    for position, item in enumerate(items):
        if not isinstance(item, Group):
            result.append(item)
            continue
        outputs = [op.result for op in item.ops if used_after.get(op.result.id, -1) > position
                   or (item.leading and op.name in REDUCERS)]
        build = _build_rows_kernel if item.split is not None else _build_elementwise_kernel
        result.append(build(item, outputs))
    return result


def _dependencies(group: Group, inputs: list[Value], outputs: list[Value]) -> list[tuple[int, ...]]:
    """For each output, the positions in ``inputs`` of the inputs it is computed from."""
    position = {value.id: index for index, value in enumerate(inputs)}
    reads: dict[int, frozenset] = {}
    for op in group.ops:
        found: set = set()
        for operand in op.operands:
            operand = group.aliases.get(operand.id, operand)
            if operand.id in position:
                found.add(position[operand.id])
            found |= reads.get(operand.id, frozenset())
        reads[op.result.id] = frozenset(found)
    return [tuple(sorted(reads.get(value.id, {position.get(value.id)} - {None}))) for value in outputs]


def _label(group: Group) -> str:
    return "fused(" + ",".join(op.name for op in group.ops) + ")"


def _build_elementwise_kernel(group: Group, outputs: list[Value]) -> FusedKernel:
    inputs = [value for value, _ in group.inputs.values()]
    names = {value.id: (f"row{index}[k]" if kind == "full" else f"x{index}")
             for index, (value, kind) in enumerate(group.inputs.values())}
    rows = [f"row{index} = in{index}[map{index}[lead], first:last]" if kind == "full"
            else f"x{index} = in{index}[map{index}[lead], 0]" for index, (_, kind) in enumerate(group.inputs.values())]
    parameters = [name for index in range(len(inputs)) for name in (f"in{index}", f"map{index}")]
    lines = []
    for index, op in enumerate(group.ops):
        args = [names[group.aliases.get(operand.id, operand).id] for operand in op.operands]
        # NOTE: locals are numbered within the kernel, never by global value ids, so that the
        # same program traced again gives the same source and hits the on-disk cache
        names[op.result.id] = f"v{index}"
        lines.append(f"v{index} = {args[0] if op.name == 'broadcast_in_dim' else expression(op, args)}")
    for index, value in enumerate(outputs):
        parameters.append(f"out{index}")
        rows.append(f"target{index} = out{index}[lead, first:last]")
        lines.append(f"target{index}[k] = {names[value.id]}")
    function = load_kernel(kernel_source(rows, lines, parameters))
    launcher = elementwise_launcher(function, inputs, outputs, group.shape, PARALLEL_MIN_ELEMENTS,
                                    _dependencies(group, inputs, outputs))
    step = tiered(function, elementwise_signature(inputs, outputs), launcher, group, inputs, outputs)
    return FusedKernel(_label(group), group.ops, inputs, outputs, step)


def _build_rows_kernel(group: Group, outputs: list[Value]) -> FusedKernel:
    source = row_kernel_source(group, outputs)
    function = load_kernel(PRELUDE + "\n\n" + source.entry)
    dependencies = _dependencies(group, [value for value, _ in source.inputs], [value for value, _ in source.outputs])
    launcher = rows_launcher(function, source.inputs, source.outputs, group.rows, group.columns, group.leading,
                             PARALLEL_MIN_ELEMENTS, source.scratch, dependencies)
    launcher = tiered(function, rows_signature(source.inputs, source.outputs, source.scratch), launcher, group,
                      [value for value, _ in source.inputs], [value for value, _ in source.outputs])
    entry = None if group.leading else RowsEntry(function, tuple(source.inputs), tuple(source.outputs),
                                                 tuple(source.scratch), group.rows, group.columns)
    return FusedKernel(_label(group), group.ops, [value for value, _ in source.inputs],
                       [value for value, _ in source.outputs], launcher, entry)
