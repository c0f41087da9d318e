"""One generated Python function per Plan: the steps as straight-line calls on buffer slots
(local variables, or a list when a step needs one), with each step's callable (a kernel, a
collective with its options bound) a global of the function, so a call pays no per-step
interpretation. numpy's floating-point warnings are off for the whole call (float_errors.py),
so kernels need no ``np.errstate`` of their own.

Kernel, collective and free steps are written out; any other step kind (loop and branch steps
over nested plans) is handed back to ``executor.run_step`` with the same slot list, so new step
kinds need no change here; their nested plans run through generated functions of their own
(``call_generated``), made once per plan. Steps on constants alone run once, here
(plan_constants.py).
"""

from __future__ import annotations

from . import inprocess_collectives, mpi_collectives, threads
from .executor import run_step
from .float_errors import quiet_float_errors, restore_float_errors
from .plan import CollectiveStep, FreeStep, KernelStep, Plan
from .plan_constants import fold_constants


def _collective(step: CollectiveStep, mesh_shape):
    """The step's in-process collective as a function of its input buffer."""
    if step.kind == "axis_index":
        value = inprocess_collectives.axis_index(step.axes[0], mesh_shape)
        return lambda _: value
    if step.kind == "partition_id":
        value = inprocess_collectives.partition_id(mesh_shape)
        return lambda _: value
    options = dict(step.params)
    if step.kind != "all_reduce":
        options["lead"] = len(mesh_shape)
    kind, axes = step.kind, step.axes

    def collective(value):
        # NOTE: looked up per call, so the module's functions can be replaced (tests do)
        return getattr(inprocess_collectives, kind)(value, axes, mesh_shape, **options)

    return collective


class _SlotNames:
    """How the generated code names a slot. When every step is written out, slots are local
    variables (``s3``; a folded one is the global ``folded3``), the cheapest names Python has;
    when a step goes to ``run_step`` or to the MPI collectives, which take the slot list, they
    are entries of it (``slots[3]``; the list starts with the folded buffers in place)."""

    def __init__(self, plan: Plan, layout, folded: dict):
        self.as_locals = layout is None and all(isinstance(step, (KernelStep, CollectiveStep, FreeStep))
                                                for step in plan.steps)
        self.folded = folded

    def __call__(self, slot: int) -> str:
        if not self.as_locals:
            return f"slots[{slot}]"
        return f"folded{slot}" if slot in self.folded else f"s{slot}"

    def targets(self, slots) -> str:
        return "".join(f"{self(slot)}, " for slot in slots)

    def freed(self, slots) -> tuple[int, ...]:
        """The slots a free step clears (a folded global is never rebound: it would become a
        local of the function)."""
        return tuple(slot for slot in slots if not (self.as_locals and slot in self.folded))


def call_generated(plan: Plan, arguments: list, layout=None) -> list:
    """A nested plan's results on ``arguments``, through its generated function (made on the
    first call for a layout and kept on the plan)."""
    made = plan.__dict__.get("_generated")
    if made is None or made[0] is not layout:
        made = (layout, compile_plan(plan, layout))
        object.__setattr__(plan, "_generated", made)  # NOTE: a cache, not a field: Plan stays frozen
    return made[1](arguments)


def compile_plan(plan: Plan, layout=None):
    """``run(arguments) -> result buffers`` for ``plan`` (see run_plan for ``layout``)."""
    names: dict = {"run_step": run_step, "plan": plan, "layout": layout, "call_generated": call_generated,
                   "run_collective": mpi_collectives.run_collective,
                   "quiet_float_errors": quiet_float_errors, "restore_float_errors": restore_float_errors}
    folded = fold_constants(plan)
    slot = _SlotNames(plan, layout, folded)
    lines = _steps(plan, layout, names, slot)
    # NOTE: a plan with matmuls holds BLAS to one thread for the whole call (threads.py), so
    # that each matmul's own hold is a counter, not two calls into the BLAS library (~4 us)
    blas = _multiplies(plan)
    names.update(blas_enter=threads._BLAS.enter, blas_exit=threads._BLAS.exit)
    source = "\n".join([
        "def run(arguments):",
        *_start(plan, names, slot),
        "    quiet = quiet_float_errors()",
        *(["    blas_enter()"] if blas else []),
        "    try:",
        *(f"    {line}" for line in lines or ["    pass"]),
        "    finally:",
        *(["        blas_exit()"] if blas else []),
        "        restore_float_errors(quiet)",
        f"    return [{', '.join(slot(result) for result in plan.result_slots)}]",
    ]) + "\n"
    exec(compile(source, f"<plan: {plan.description}>", "exec"), names)
    run = names["run"]
    run.source = source
    return run


def _multiplies(plan: Plan) -> bool:
    """Whether ``plan`` has more than one dot_general step, its nested plans' included."""
    count = 0
    stack = [plan]
    while stack and count < 2:
        for step in stack.pop().steps:
            if isinstance(step, KernelStep) and "dot_general" in step.name:
                count += 1
            stack.extend(value for value in vars(step).values() if isinstance(value, Plan))
            stack.extend(item for value in vars(step).values() if isinstance(value, tuple)
                         for item in value if isinstance(item, Plan))
    return count > 1


def _start(plan: Plan, names: dict, slot: _SlotNames) -> list[str]:
    """The lines that set up the slots: the folded buffers and the arguments."""
    if slot.as_locals:
        names.update({f"folded{index}": value for index, value in slot.folded.items()})
        lines = []
    elif slot.folded:
        initial = [None] * plan.num_slots
        for index, value in slot.folded.items():
            initial[index] = value
        names["initial_slots"] = initial
        lines = ["    slots = initial_slots.copy()"]
    else:
        lines = [f"    slots = [None] * {plan.num_slots}"]
    if plan.arg_slots:
        lines.append(f"    {slot.targets(plan.arg_slots)}= arguments")
    return lines


def _steps(plan: Plan, layout, names: dict, slot: _SlotNames) -> list[str]:
    """The plan's steps as lines of the generated function (but the folded ones, whose buffers
    are there from the start); their callables go into ``names``."""
    lines = []
    for index, step in enumerate(plan.steps):
        if isinstance(step, KernelStep) and step.outputs and step.outputs[0] in slot.folded:
            continue
        if isinstance(step, KernelStep):
            names[f"step{index}"] = step.function
            arguments = ", ".join(slot(input_slot) for input_slot in step.inputs)
            single = getattr(step.function, "single_output", None)
            if single is not None and len(step.outputs) == 1:
                # NOTE: a kernel that is one plain call (a numpy ufunc) is called directly
                names[f"step{index}"] = single
                lines.append(f"    {slot(step.outputs[0])} = step{index}({arguments})")
            elif step.outputs:
                lines.append(f"    {slot.targets(step.outputs)}= step{index}({arguments})")
            else:
                lines.append(f"    step{index}({arguments})")
        elif isinstance(step, CollectiveStep) and layout is not None:
            names[f"step{index}"] = step
            lines.append(f"    {slot(step.output)} = run_collective(step{index}, slots, layout)")
        elif isinstance(step, CollectiveStep):
            names[f"step{index}"] = _collective(step, plan.mesh_shape)
            source = slot(step.input) if step.input >= 0 else "None"
            lines.append(f"    {slot(step.output)} = step{index}({source})")
        elif isinstance(step, FreeStep):
            freed = slot.freed(step.slots)
            if freed:
                lines.append(f"    {' = '.join(slot(freed_slot) for freed_slot in freed)} = None")
        else:
            names[f"step{index}"] = step
            lines.append(f"    run_step(step{index}, slots, plan.mesh_shape, layout, call_generated)")
    return lines
