"""Fusing elementwise ops that share a local shape into one Numba kernel per group.

Ops join the open group of their shape in program order; a group closes (is emitted) as soon as
an op outside it reads one of its values, so no op ever runs before a value it needs. Inside a
kernel every value lives in a register; only values read after the group are written out.
Groups of one op, and groups of fewer elements than ``FUSION_MIN_ELEMENTS``, stay separate ops
(numpy's ufuncs are as fast there, and need no compilation).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

import numpy as np

from meshjit.ir import Op, Value
from meshjit.ir.dtypes import to_numpy

from meshjit.runtime.threads import parallel_for

from .codegen import kernel_source, load_kernel
from .codegen_math import TRANSCENDENTAL

FUSION_MIN_ELEMENTS = int(os.environ.get("MESHJIT_FUSION_MIN_ELEMENTS", "4096"))
# NOTE: below this many elements a kernel runs on the calling thread only; above, its flattened
# range is split over the cores (runtime/threads.py; handing a chunk to a worker costs ~20 µs)
PARALLEL_MIN_ELEMENTS = int(os.environ.get("MESHJIT_PARALLEL_MIN_ELEMENTS", str(1 << 17)))

# NOTE: without Intel's SVML, Numba calls scalar libm for exp, log, tanh, sin, cos and their kin
# (~35 ns an element for tanh), while numpy's ufuncs are SIMD. So exp, log, tanh and logistic
# are fused through the prelude's own vectorisable helpers (codegen_math.py), in float32 and
# float64; the other transcendental functions stay separate numpy steps and split a group. erf
# stays in, since numpy has no vectorised erf and the reference's is slower still.
_FLOAT_UNARY = {
    "sqrt": "math.sqrt({0})", "erf": "math.erf({0})", "floor": "np.floor({0})", "ceil": "np.ceil({0})",
    "rsqrt": "1.0 / math.sqrt({0})", "abs": "abs({0})", "neg": "-{0}", "sign": "_sign({0})",
    "cbrt": "np.cbrt({0})",
}
_FLOAT_BINARY = {"add": "{0} + {1}", "sub": "{0} - {1}", "mul": "{0} * {1}", "div": "{0} / {1}",
                 "max": "_maximum({0}, {1})", "min": "_minimum({0}, {1})", "pow": "{0} ** {1}",
                 "atan2": "math.atan2({0}, {1})"}
_INT_OPS = {"add": "{0} + {1}", "sub": "{0} - {1}", "mul": "{0} * {1}", "neg": "-{0}",
            "max": "max({0}, {1})", "min": "min({0}, {1})", "abs": "abs({0})"}
_BOOL_OPS = {"and": "{0} and {1}", "or": "{0} or {1}", "xor": "{0} != {1}", "not": "not {0}"}
_COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _numpy_name(dtype: str) -> str:
    return "np." + to_numpy(dtype).name.replace("bool", "bool_")


def expression(op: Op, args: list[str]) -> str | None:
    """The Numba expression computing ``op``'s one result, or None when it is not fusible."""
    result = op.result.type.dtype
    operand = op.operands[0].type.dtype if op.operands else result
    cast = _numpy_name(result)
    if op.name == "compare":
        return f"{args[0]} {_COMPARE[op.attrs['direction']]} {args[1]}"
    if op.name == "select":
        return f"{args[1]} if {args[0]} else {args[2]}"
    if op.name == "is_finite":
        return f"math.isfinite({args[0]})"
    if op.name == "convert":
        return _convert(operand, result, args[0])
    if op.name == "integer_pow" and result in ("f32", "f64") and 0 <= op.attrs["y"] <= 4:
        return f"{cast}({' * '.join([args[0]] * op.attrs['y']) or '1.0'})"
    if op.name == "round" and result in ("f32", "f64") and op.attrs.get("rounding_method", "away_from_zero") == "away_from_zero":
        return f"{cast}(_round_away({args[0]}))"
    helper = TRANSCENDENTAL.get(result, {}).get(op.name)
    if helper is not None and operand == result:
        return f"{helper}({args[0]})"
    if result in ("f32", "f64"):
        template = _FLOAT_UNARY.get(op.name) if len(args) == 1 else _FLOAT_BINARY.get(op.name)
        return None if template is None else f"{cast}({template.format(*args)})"
    if result in ("i32", "i64"):
        template = _INT_OPS.get(op.name)
        return None if template is None else f"{cast}({template.format(*args)})"
    if result == "bool" and op.name in _BOOL_OPS:
        return _BOOL_OPS[op.name].format(*args)
    return None


def _convert(source: str, target: str, arg: str) -> str | None:
    cast = _numpy_name(target)
    if target == "bool":
        return f"{arg} != 0"
    if source in ("f32", "f64") and target in ("i32", "i64"):
        bits = 32 if target == "i32" else 64
        return f"{cast}(_float_to_int({arg}, {-(2 ** (bits - 1))}, {2 ** (bits - 1) - 1}))"
    return f"{cast}({arg})"


@dataclass
class FusedKernel:
    """A group of elementwise ops run as one kernel: reads ``inputs``, writes ``outputs``."""

    label: str
    ops: list[Op]
    inputs: list[Value] = field(default_factory=list)
    outputs: list[Value] = field(default_factory=list)
    function: object = None

    @property
    def operands(self):
        return tuple(self.inputs)

    @property
    def results(self):
        return tuple(self.outputs)


def _is_scalar_broadcast(op: Op) -> bool:
    return op.name == "broadcast_in_dim" and op.operands[0].type.rank == 0


def _fusible(op) -> bool:
    if not isinstance(op, Op) or len(op.results) != 1 or op.regions:
        return False
    if _is_scalar_broadcast(op):
        return True
    shape = op.result.type.shape
    if any(operand.type.shape not in (shape, ()) for operand in op.operands):
        return False
    return expression(op, ["a"] * len(op.operands)) is not None


class _Grouper:
    def __init__(self):
        self.items: list = []
        self.open: dict[tuple, list[Op]] = {}
        self.group_of: dict[int, tuple] = {}

    def close(self, shape) -> None:
        ops = self.open.pop(shape, None)
        if ops is None:
            return
        for op in ops:
            self.group_of.pop(op.result.id, None)
        self.items.append(ops)

    def close_readers_of(self, op: Op, joining: tuple | None) -> None:
        for operand in op.operands:
            shape = self.group_of.get(operand.id)
            if shape is not None and shape != joining:
                self.close(shape)

    def add(self, op: Op) -> None:
        if _fusible(op):
            shape = op.result.type.shape
            self.close_readers_of(op, shape)
            self.open.setdefault(shape, []).append(op)
            self.group_of[op.result.id] = shape
            return
        self.close_readers_of(op, None)
        self.items.append(op)

    def finish(self, returns) -> list:
        for shape in list(self.open):
            self.close(shape)
        return self.items


def fuse_elementwise(ops, returns=()) -> list:
    """The ops with fusible groups replaced by FusedKernels (see the module docstring)."""
    grouper = _Grouper()
    for op in ops:
        grouper.add(op)
    items = grouper.finish(returns)
    used_after: dict[int, int] = {}
    for position, item in enumerate(items):
        for op in item if isinstance(item, list) else [item]:
            for operand in op.operands:
                used_after[operand.id] = max(used_after.get(operand.id, -1), position)
    for value in returns:
        used_after[value.id] = len(items)
    result = []
    for position, item in enumerate(items):
        if not isinstance(item, list):
            result.append(item)
        elif len(item) < 2 or math.prod(item[-1].result.type.shape) < FUSION_MIN_ELEMENTS:
            result.extend(item)
        else:
            result.append(_build_kernel(item, position, used_after))
    return result


def _build_kernel(ops: list[Op], position: int, used_after: dict[int, int]) -> FusedKernel:
    defined = {op.result.id for op in ops}
    kernel = FusedKernel("fused(" + ",".join(op.name for op in ops) + ")", ops)
    names: dict[int, str] = {}
    rows: list[str] = []
    lines: list[str] = []
    parameters: list[str] = []
    for op in ops:
        for operand in op.operands:
            if operand.id in defined or operand.id in names:
                continue
            index = len(kernel.inputs)
            kernel.inputs.append(operand)
            parameters += [f"in{index}", f"map{index}"]
            if operand.type.shape:
                rows.append(f"row{index} = in{index}[map{index}[lead]]")
                names[operand.id] = f"row{index}[k]"
            else:
                rows.append(f"x{index} = in{index}[map{index}[lead], 0]")
                names[operand.id] = f"x{index}"
        args = [names[operand.id] for operand in op.operands]
        value = args[0] if _is_scalar_broadcast(op) else expression(op, args)
        # NOTE: locals are numbered within the kernel, never by global value ids, so that the
        # same program traced again gives the same source and hits the on-disk cache
        local = f"v{len(lines)}"
        names[op.result.id] = local
        lines.append(f"{local} = {value}")
    for op in ops:
        if used_after.get(op.result.id, -1) > position:
            index = len(kernel.outputs)
            kernel.outputs.append(op.result)
            parameters.append(f"out{index}")
            rows.append(f"target{index} = out{index}[lead]")
            lines.append(f"target{index}[k] = {names[op.result.id]}")
    function = load_kernel(kernel_source(rows, lines, parameters))
    kernel.function = _launcher(function, kernel)
    return kernel


def _launcher(function, kernel: FusedKernel):
    """The plan step: lines up leading dims, views buffers as 2-d, allocates outputs, runs the
    flattened range on the cores."""
    local_shape = kernel.ops[-1].result.type.shape
    size = math.prod(local_shape)
    output_dtypes = [to_numpy(value.type.dtype) for value in kernel.outputs]
    input_sizes = [max(1, math.prod(value.type.shape)) for value in kernel.inputs]
    maps: dict[tuple, np.ndarray] = {}

    def lead_map(lead_shape, full) -> np.ndarray:
        key = (lead_shape, full)
        if key not in maps:
            maps[key] = np.ascontiguousarray(
                np.broadcast_to(np.arange(math.prod(lead_shape)).reshape(lead_shape), full).ravel())
        return maps[key]

    def run(*buffers):
        lead = buffers[0].ndim - len(kernel.inputs[0].type.shape)
        full = np.broadcast_shapes(*(buffer.shape[:lead] for buffer in buffers))
        count = math.prod(full)
        arguments = [size]
        for buffer, elements in zip(buffers, input_sizes):
            arguments.append(np.ascontiguousarray(buffer).reshape(-1, elements))
            arguments.append(lead_map(buffer.shape[:lead], full))
        outputs = [np.empty((count, size), dtype) for dtype in output_dtypes]
        parallel_for(function, count * size, (*arguments, *outputs), grain=PARALLEL_MIN_ELEMENTS)
        return tuple(output.reshape(full + local_shape) for output in outputs)

    return run
