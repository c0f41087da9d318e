"""Lowering a per-device module to a Plan: one step per op (or per fused group), buffer slots,
and frees at each buffer's last use. Ops with regions (scan, while, cond) become loop and
branch steps over nested plans, lowered the same way (compiler/lower_regions.py), after their
loop-invariant code is hoisted out of the bodies (compiler/loop_invariants.py).

Plan buffers carry the mesh's axes as leading dims, of size 1 where a value is the same on
every device along that axis (see runtime/plan.py), so the analysis here tracks, per value,
which mesh axes it varies along.
"""

from __future__ import annotations

import math

from dataclasses import dataclass

from meshjit.ir import Block, Module
from meshjit.ir.narrow_floats import NUMBA_KERNEL_OPS, has_narrow_float, in_float32, involves_narrow_float, widened_op
from meshjit.runtime.plan import CollectiveStep, FreeStep, KernelStep, Plan

from .contraction_fusion import (
    ContractionChain,
    ReducedContraction,
    fuse_contraction_chains,
    fuse_contraction_reductions,
)
from .fusion import FusedKernel, fuse_kernels
from .loop_invariants import hoist_loop_invariants
from .sibling_contractions import SiblingContractions, fuse_sibling_contractions
from .lower_regions import lower_region_op
from ..tables import collective_steps, kernel_rules, run_per_leading_position



@dataclass(frozen=True)
class MeshLayout:
    """What lowering knows of the mesh: its axis names and sizes (none for one device), and
    whether one process holds all of it (``whole_mesh``)."""

    axis_names: tuple[str, ...]
    mesh_shape: tuple[int, ...]
    whole_mesh: bool = True

    @property
    def lead(self) -> int:
        return len(self.mesh_shape)


class _Lowering:
    def __init__(self, layout: MeshLayout):
        self.layout = layout
        self.axis_names = layout.axis_names
        self.mesh_shape = layout.mesh_shape
        self.lead = layout.lead
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
        if isinstance(op, (FusedKernel, ReducedContraction, ContractionChain, SiblingContractions)):
            self.steps.append(KernelStep(op.label, op.function, inputs, outputs))
        elif op.regions:
            self.steps.append(lower_region_op(op, inputs, outputs, self.lead, self.region_plan))
        elif op.name in collective_steps:
            params = {key: op.attrs[key] for key in ("dim", "reduction", "split_dim", "concat_dim", "pairs")
                      if key in op.attrs}
            self.steps.append(CollectiveStep(op.name, self.axis_positions(op.attrs["axes"]), inputs[0], outputs[0], params))
        elif op.name == "axis_index":
            self.steps.append(CollectiveStep("axis_index", self.axis_positions([op.attrs["axis"]]), -1, outputs[0]))
        elif op.name == "partition_id":
            self.steps.append(CollectiveStep("partition_id", (), -1, outputs[0]))
        elif involves_narrow_float(op):
            kernel = in_float32(kernel_rules[op.name](widened_op(op), self.lead), op)
            self.steps.append(KernelStep(op.name, kernel, inputs, outputs))
        elif op.name in NUMBA_KERNEL_OPS and has_narrow_float(op):
            self.steps.append(KernelStep(op.name, run_per_leading_position(op, self.lead), inputs, outputs))
        else:
            self.steps.append(KernelStep(op.name, kernel_rules[op.name](op, self.lead), inputs, outputs))

    def region_plan(self, block: Block) -> Plan:
        # NOTE: a region's arguments belong to the loop or branch step; its nested plan may
        # drop its own references to them after their last use in one trip.
        return lower_block(block, self.layout, kept_args=())

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


def lower_block(block: Block, layout: MeshLayout, kept_args=None, arg_shardings=(),
                result_shardings=()) -> Plan:
    """The Plan of one block: its arguments are the plan's arguments, its returned values the
    results. Arguments at positions in ``kept_args`` (all, when None) are never freed; the
    others are freed at their last use like intermediates."""
    lowering = _Lowering(layout)
    arg_slots = tuple(lowering.slot(arg) for arg in block.args)
    ops = hoist_loop_invariants(block.ops)
    if layout.whole_mesh and layout.lead:
        ops = fuse_contraction_reductions(ops, block.returns, layout.axis_names, layout.mesh_shape)
    ops = fuse_kernels(ops, block.returns, math.prod(layout.mesh_shape))
    ops = fuse_contraction_chains(ops, block.returns, layout.lead)
    ops = fuse_sibling_contractions(ops, layout.lead)
    for op in ops:
        lowering.lower_op(op)
    result_slots = tuple(lowering.slot(value) for value in block.returns)
    kept_positions = range(len(arg_slots)) if kept_args is None else kept_args
    kept = set(result_slots) | {arg_slots[index] for index in kept_positions}
    steps = lowering.add_frees(kept, ops)
    return Plan(
        mesh_shape=layout.mesh_shape,
        num_slots=len(lowering.slot_of),
        arg_slots=arg_slots,
        arg_varying=tuple(lowering.varying(sharding) for sharding in arg_shardings),
        result_slots=result_slots,
        result_varying=tuple(lowering.varying(sharding) for sharding in result_shardings),
        steps=tuple(steps),
        description=f"{len(ops)} steps over mesh {dict(zip(layout.axis_names, layout.mesh_shape))}",
    )


def lower(module: Module, donated: frozenset[int] = frozenset(), *, whole_mesh: bool = True) -> Plan:
    """The Plan of a per-device module (``spmd_mesh`` set), or of a one-device program.

    Arguments whose positions are in ``donated`` are freed at their last use like any
    intermediate value (the caller gives up the Arrays they came from). ``whole_mesh`` says the
    buffers hold every device of the mesh (one process): only then may an all_reduce be folded
    into the matmul that feeds it, since across processes the sum needs the other processes."""
    func = module.main
    # an unpartitioned function runs on one device: no leading dims
    mesh = module.mesh(func.spmd_mesh) if func.spmd_mesh else None
    layout = MeshLayout(mesh.axis_names if mesh else (), tuple(size for _, size in mesh.axes) if mesh else (),
                        whole_mesh)
    kept = [index for index in range(len(func.args)) if index not in donated]
    return lower_block(func.body, layout, kept, func.arg_shardings, func.result_shardings)
