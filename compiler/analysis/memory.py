"""Per-device memory of a partitioned program: the peak bytes live at once.

Arguments stay live for the whole program (the caller holds them); every other value is live
from the op that defines it to its last use, and results to the end. This is the estimate the
automatic sharding search checks against ``memory_budget_bytes``.
"""

from __future__ import annotations

from meshjit.ir import Module
from meshjit.ir.dtypes import to_numpy


def _bytes(value) -> int:
    return value.type.size * to_numpy(value.type.dtype).itemsize


def peak_memory_bytes(module: Module) -> int:
    """The largest number of bytes live at once on one device while ``module``'s entry
    function runs, its arguments included."""
    func = module.main
    ops = func.body.ops
    last_use: dict[int, int] = {}
    for index, op in enumerate(ops):
        for operand in op.operands:
            last_use[operand.id] = index
    for value in func.returns:
        last_use[value.id] = len(ops)
    live = sum(_bytes(arg) for arg in func.args)
    peak = live
    argument_ids = {arg.id for arg in func.args}
    for index, op in enumerate(ops):
        live += sum(_bytes(result) for result in op.results)
        peak = max(peak, live)
        for result in op.results:
            if result.id not in last_use:
                live -= _bytes(result)
        dying = {operand.id: operand for operand in op.operands
                 if last_use.get(operand.id) == index and operand.id not in argument_ids}
        live -= sum(_bytes(value) for value in dying.values())
    return peak
