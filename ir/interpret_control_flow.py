"""The reference meaning of the control flow ops (scan, while, cond): the interpreter runs their
regions. In per-device mode (a ``DeviceGrid``) every value has a leading device axis, so a scan
slices and stacks along the axis after it, and a while predicate or a cond index must be the
same on every device (the program branches as one)."""

from __future__ import annotations

import numpy as np

from .core import Op
from .dtypes import to_numpy
from .interpret import _Context, _run_block, region_impls
from .ops.regions import scan_parts


def _uniform_scalar(op: Op, what: str, value: np.ndarray, context: _Context):
    """The scalar ``value`` (one per device in per-device mode, where all must agree)."""
    if context.grid is None:
        return value[()]
    first = value[0]
    if np.any(value != first):
        raise ValueError(f"{op.name}: the {what} differs between devices ({value.tolist()}); "
                         f"control flow needs the same {what} on every device")
    return first[()]


@region_impls.register("scan")
def _scan(op: Op, operands, context: _Context) -> tuple[np.ndarray, ...]:
    attrs = op.attrs
    length, num_carry = attrs["length"], attrs["num_carry"]
    consts, carry, xs = scan_parts(operands, attrs["num_consts"], num_carry)
    axis = 0 if context.grid is None else 1
    lead = () if context.grid is None else (context.grid.size,)
    ys = [np.empty(lead + result.type.shape, to_numpy(result.type.dtype)) for result in op.results[num_carry:]]
    carry = list(carry)
    steps = range(length - 1, -1, -1) if attrs["reverse"] else range(length)
    for step in steps:
        slices = [np.take(x, step, axis=axis) for x in xs]
        returned = _run_block(op.regions[0], list(consts) + carry + slices, context)
        carry = returned[:num_carry]
        for stacked, y in zip(ys, returned[num_carry:]):
            index = (slice(None),) * axis + (step,)
            stacked[index] = y
    return tuple(carry) + tuple(ys)


@region_impls.register("while")
def _while(op: Op, operands, context: _Context) -> tuple[np.ndarray, ...]:
    num_consts = op.attrs["num_consts"]
    consts, carry = list(operands[:num_consts]), list(operands[num_consts:])
    cond, body = op.regions
    while _uniform_scalar(op, "predicate", _run_block(cond, consts + carry, context)[0], context):
        carry = _run_block(body, consts + carry, context)
    return tuple(carry)


@region_impls.register("cond")
def _cond(op: Op, operands, context: _Context) -> tuple[np.ndarray, ...]:
    index = int(_uniform_scalar(op, "branch index", operands[0], context))
    branch = op.regions[min(max(index, 0), len(op.regions) - 1)]
    return tuple(_run_block(branch, list(operands[1:]), context))
