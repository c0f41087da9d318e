"""Lowering a per-device module to a Plan: one step per op (or per fused group), buffer slots,
and frees at each buffer's last use.

Plan buffers carry the mesh's axes as leading dims, of size 1 where a value is the same on
every device along that axis (see runtime/plan.py), so the analysis here tracks, per value,
which mesh axes it varies along.
"""

from __future__ import annotations

from meshjit.ir import Module
from meshjit.runtime.plan import CollectiveStep, FreeStep, KernelStep, Plan

from .contraction_fusion import ReducedContraction, fuse_contraction_reductions
from .fusion import FusedKernel, fuse_elementwise
from .rules import kernel_rules

_COLLECTIVE_KINDS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "collective_permute")


class _Lowering:
    def __init__(self, module: Module):
        self.func = module.main
        # an unpartitioned function runs on one device: no leading dims
        mesh = module.mesh(self.func.spmd_mesh) if self.func.spmd_mesh else None
        self.axis_names = mesh.axis_names if mesh else ()
        self.mesh_shape = tuple(size for _, size in mesh.axes) if mesh else ()
        self.lead = len(self.mesh_shape)
        self.slot_of: dict[int, int] = {}
        self.steps: list = []

    def slot(self, value) -> int:
        if value.id not in self.slot_of:
            self.slot_of[value.id] = len(self.slot_of)
        return self.slot_of[value.id]

    def axis_positions(self, names) -> tuple[int, ...]:
        return tuple(self.axis_names.index(name) for name in names)

    def varying(self, sharding) -> tuple[int, ...]:
        if sharding is None:
            return ()
        used = {axis.name for dim in sharding.dims for axis in dim.axes} | {axis.name for axis in sharding.unreduced}
        return tuple(position for position, name in enumerate(self.axis_names) if name in used)

    def lower_op(self, op) -> None:
        """One step for an op or a FusedKernel (both have operands and results)."""
        inputs = tuple(self.slot(value) for value in op.operands)
        outputs = tuple(self.slot(value) for value in op.results)
        if isinstance(op, (FusedKernel, ReducedContraction)):
            self.steps.append(KernelStep(op.label, op.function, inputs, outputs))
        elif op.name in _COLLECTIVE_KINDS:
            params = {key: op.attrs[key] for key in ("dim", "reduction", "split_dim", "concat_dim", "pairs")
                      if key in op.attrs}
            self.steps.append(CollectiveStep(op.name, self.axis_positions(op.attrs["axes"]), inputs[0], outputs[0], params))
        elif op.name == "axis_index":
            self.steps.append(CollectiveStep("axis_index", self.axis_positions([op.attrs["axis"]]), -1, outputs[0]))
        elif op.name == "partition_id":
            self.steps.append(CollectiveStep("partition_id", (), -1, outputs[0]))
        else:
            self.steps.append(KernelStep(op.name, kernel_rules[op.name](op, self.lead), inputs, outputs))

    def add_frees(self, results: set[int], ops) -> list:
        last_use: dict[int, int] = {}
        for index, op in enumerate(ops):
            for value in op.operands:
                last_use[self.slot(value)] = index
        frees: dict[int, list[int]] = {}
        for slot, index in last_use.items():
            if slot not in results:
                frees.setdefault(index, []).append(slot)
        steps = []
        for index, step in enumerate(self.steps):
            steps.append(step)
            if index in frees:
                steps.append(FreeStep(tuple(sorted(frees[index]))))
        return steps


def lower(module: Module, donated: frozenset[int] = frozenset(), *, whole_mesh: bool = True) -> Plan:
    """The Plan of a per-device module (``spmd_mesh`` set), or of a one-device program.

    Arguments whose positions are in ``donated`` are freed at their last use like any
    intermediate value (the caller gives up the Arrays they came from). ``whole_mesh`` says the
    buffers hold every device of the mesh (one process): only then may an all_reduce be folded
    into the matmul that feeds it, since across processes the sum needs the other processes."""
    lowering = _Lowering(module)
    func = lowering.func
    arg_slots = tuple(lowering.slot(arg) for arg in func.args)
    ops = func.body.ops
    if whole_mesh:
        ops = fuse_contraction_reductions(ops, func.returns, lowering.axis_names, lowering.mesh_shape)
    ops = fuse_elementwise(ops, func.returns)
    for op in ops:
        lowering.lower_op(op)
    result_slots = tuple(lowering.slot(value) for value in func.returns)
    kept = set(result_slots) | {slot for index, slot in enumerate(arg_slots) if index not in donated}
    steps = lowering.add_frees(kept, ops)
    return Plan(
        mesh_shape=lowering.mesh_shape,
        num_slots=len(lowering.slot_of),
        arg_slots=arg_slots,
        arg_varying=tuple(lowering.varying(sharding) for sharding in func.arg_shardings),
        result_slots=result_slots,
        result_varying=tuple(lowering.varying(sharding) for sharding in func.result_shardings),
        steps=tuple(steps),
        description=f"{len(ops)} steps over mesh {dict(zip(lowering.axis_names, lowering.mesh_shape))}",
    )
