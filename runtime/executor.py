"""Running a per-device program on Arrays: shards in, shards out, all local devices at once.

``run_plan`` executes a compiled Plan on buffers whose leading dims are the mesh's axes (see
plan.py); ``run_spmd`` runs a per-device module through the IR's reference interpreter over a
fully stacked device axis, the oracle the Plan path is checked against.
"""

from __future__ import annotations

import numpy as np

from meshjit.ir import Module, interpret

from . import control_flow_steps, inprocess_collectives, mpi_collectives
from .plan import CollectiveStep, FreeStep, KernelStep, Plan

from .array import Array, index_key
from .float_errors import quiet_float_errors, restore_float_errors
from .sharding import Sharding
from .tiles import local_blocks
from .transfer import to_numpy, shard_numpy


def stack_shards(value, sharding: Sharding) -> np.ndarray:
    """The shards of ``value`` for every device of ``sharding`` in its device order, stacked.

    An Array already laid out equivalently gives its own blocks without copying the data
    twice; anything else is laid out first.
    """
    ndim = np.ndim(value) if not isinstance(value, Array) else value.ndim
    if not (isinstance(value, Array) and value.sharding.is_equivalent_to(sharding, ndim)):
        host, weak = to_numpy(value)
        value = shard_numpy(host, sharding, weak_type=weak)
    return value._blocks[blocks_of_devices(value, sharding._addressable_device_ids)]


def array_from_stack(stacked: np.ndarray, sharding: Sharding, shape, *, weak_type: bool = False) -> Array:
    """An Array from per-device shards stacked in ``sharding``'s device order; replicas share
    the block of the first device that holds them."""
    blocks_layout = local_blocks(sharding, shape)
    if blocks_layout is None:
        return _array_from_stack_by_index(stacked, sharding, shape, weak_type=weak_type)
    _, _, block_of_device = blocks_layout
    # NOTE: blocks are numbered in order of first use, so the first use of each is its row
    _, first_device = np.unique(np.asarray(block_of_device, np.intp), return_index=True)
    blocks = np.ascontiguousarray(stacked[first_device])
    blocks.flags.writeable = False
    return Array(shape, stacked.dtype, sharding, blocks, block_of_device, weak_type=weak_type)


def _array_from_stack_by_index(stacked: np.ndarray, sharding: Sharding, shape, *, weak_type: bool) -> Array:
    indices = sharding.devices_indices_map(tuple(shape))
    rows, row_of_key, block_of_device = [], {}, []
    for position, device in enumerate(sharding._addressable_device_assignment):
        key = index_key(indices[device])
        if key not in row_of_key:
            row_of_key[key] = len(rows)
            rows.append(position)
        block_of_device.append(row_of_key[key])
    blocks = np.ascontiguousarray(stacked[rows])
    blocks.flags.writeable = False
    return Array(shape, stacked.dtype, sharding, blocks, block_of_device, weak_type=weak_type)


def run_spmd(module: Module, arguments, arg_shardings, result_shardings, result_shapes, weak_types) -> list[Array]:
    """Run the partitioned ``module`` on ``arguments`` laid out as ``arg_shardings``."""
    stacked = [stack_shards(value, sharding) for value, sharding in zip(arguments, arg_shardings)]
    outputs = interpret(module, *stacked)
    return [array_from_stack(np.asarray(output), sharding, shape, weak_type=weak)
            for output, sharding, shape, weak in zip(outputs, result_shardings, result_shapes, weak_types)]


_EQUIVALENCE_CACHE: dict = {}


def _equivalent(have: Sharding, want: Sharding, ndim: int) -> bool:
    """``have.is_equivalent_to(want, ndim)``, remembered (it is asked on every call)."""
    if have is want or have == want:
        return True
    key = (have, want, ndim)
    cached = _EQUIVALENCE_CACHE.get(key)
    if cached is None:
        cached = _EQUIVALENCE_CACHE[key] = have.is_equivalent_to(want, ndim)
    return cached


_ROWS_CACHE: dict = {}


def _rows(value: Array, sharding: Sharding, lead_shape, mesh_shape) -> tuple[np.ndarray, bool]:
    """Which of ``value``'s blocks each leading position reads, and whether that is all of them
    in order (so the buffer is a view)."""
    key = (value.sharding, value._block_of_device, sharding, lead_shape)
    cached = _ROWS_CACHE.get(key)
    if cached is None:
        # NOTE: the positions along an axis the argument does not vary over hold replicas:
        # the first one stands for all
        grid = sharding._addressable_device_ids.reshape(mesh_shape)
        wanted = grid[tuple(slice(0, size) for size in lead_shape)].reshape(-1)
        rows = blocks_of_devices(value, wanted)
        in_order = len(rows) == len(value._blocks) and bool((rows == np.arange(len(rows))).all())
        cached = _ROWS_CACHE[key] = (rows, in_order)
    return cached


def blocks_of_devices(value: Array, device_ids: np.ndarray) -> np.ndarray:
    """The block of ``value`` each device of ``device_ids`` (addressable ones of its
    sharding) holds, looked up on arrays."""
    own = value.sharding._addressable_device_ids
    order = np.argsort(own, kind="stable")
    found = np.searchsorted(own, device_ids, sorter=order)
    positions = order[np.minimum(found, len(own) - 1)] if len(own) else found
    if len(device_ids) and (not len(own) or (own[positions] != device_ids).any()):
        missing = sorted(set(device_ids.tolist()) - set(own.tolist()))
        raise ValueError(f"an Array on devices {sorted(own.tolist())} holds no block for devices {missing}")
    return np.asarray(value._block_of_device, dtype=np.intp)[positions]


class ArgumentMemo:
    """The layout ``to_buffer`` worked out for one argument position last time: a call that
    passes an Array with the very same sharding object and block map reuses it (the dispatch
    fast path pays no sharding comparisons). The state is one tuple, replaced whole, so
    concurrent calls never see half an update."""

    __slots__ = ("state",)

    def __init__(self):
        self.state = None

    def lookup(self, value: Array, sharding: Sharding):
        state = self.state
        if state is None or state[0] is not value._sharding or state[2] is not sharding:
            return None
        block_of_device = value._block_of_device
        return state[3:] if state[1] is block_of_device or state[1] == block_of_device else None


def to_buffer(value, sharding: Sharding, mesh_shape, varying, memo: ArgumentMemo | None = None) -> np.ndarray:
    """A plan buffer for ``value`` laid out as ``sharding``: one block per position along the
    axes it varies over (a view of the Array's blocks when they are already in that order)."""
    remembered = memo.lookup(value, sharding) if memo is not None and type(value) is Array else None
    if remembered is not None:
        value._check_alive()
        lead_shape, rows, in_order = remembered
    else:
        if not isinstance(value, Array) or not _equivalent(value.sharding, sharding, value.ndim):
            host, weak = to_numpy(value)
            value = shard_numpy(host, sharding, weak_type=weak)
        value._check_alive()
        lead_shape = tuple(size if axis in varying else 1 for axis, size in enumerate(mesh_shape))
        rows, in_order = _rows(value, sharding, lead_shape, mesh_shape)
        if memo is not None:
            memo.state = (value._sharding, value._block_of_device, sharding, lead_shape, rows, in_order)
    blocks = value._blocks
    if in_order:
        # NOTE: over one mesh axis (or none varying) the blocks are the buffer as they are
        return blocks if blocks.shape[:1] == lead_shape else blocks.reshape(lead_shape + blocks.shape[1:])
    return blocks[rows].reshape(lead_shape + blocks.shape[1:])


def _run_collective(step: CollectiveStep, buffers, mesh_shape):
    lead = len(mesh_shape)
    if step.kind == "axis_index":
        return inprocess_collectives.axis_index(step.axes[0], mesh_shape)
    if step.kind == "partition_id":
        return inprocess_collectives.partition_id(mesh_shape)
    value = buffers[step.input]
    function = getattr(inprocess_collectives, step.kind)
    options = dict(step.params)
    if step.kind != "all_reduce":
        options["lead"] = lead
    return function(value, step.axes, mesh_shape, **options)


def run_step(step, buffers: list, mesh_shape, layout=None, call=None) -> None:
    """Run one step of a plan on the slot list ``buffers`` (plan_function.py calls this for the
    step kinds it does not write out). ``call`` runs the nested plans of loop and branch steps
    (default: ``call_plan``, interpreted)."""
    if isinstance(step, KernelStep):
        outputs = step.function(*(buffers[slot] for slot in step.inputs))
        for slot, output in zip(step.outputs, outputs):
            buffers[slot] = output
    elif isinstance(step, CollectiveStep) and layout is not None:
        buffers[step.output] = mpi_collectives.run_collective(step, buffers, layout)
    elif isinstance(step, CollectiveStep):
        buffers[step.output] = _run_collective(step, buffers, mesh_shape)
    elif isinstance(step, FreeStep):
        for slot in step.slots:
            buffers[slot] = None
    else:
        # loop and branch steps over nested plans
        control_flow_steps.run(step, buffers, layout, call or call_plan)


def run_plan(plan: Plan, arguments: list[np.ndarray], layout=None) -> list[np.ndarray]:
    """Execute ``plan`` on argument buffers; returns the result buffers.

    ``layout`` (a ProcessLayout) is given when the mesh spans several processes: the buffers
    then cover this process's block of the mesh and collectives go through mpi_collectives.
    numpy's floating-point warnings are off meanwhile, as in the generated function.
    """
    buffers: list = [None] * plan.num_slots
    for slot, value in zip(plan.arg_slots, arguments):
        buffers[slot] = value
    quiet = quiet_float_errors()
    try:
        run_steps(plan, buffers, layout)
    finally:
        restore_float_errors(quiet)
    return [buffers[slot] for slot in plan.result_slots]


def run_steps(plan: Plan, buffers: list, layout=None) -> None:
    """Run ``plan``'s steps on ``buffers`` (one entry per slot, arguments already in place)."""
    for step in plan.steps:
        run_step(step, buffers, plan.mesh_shape, layout)


def call_plan(plan: Plan, arguments: list, layout=None) -> list:
    """A nested plan's results on ``arguments``, its steps interpreted (floating-point warnings
    are already off: the enclosing plan switched them off)."""
    buffers: list = [None] * plan.num_slots
    for slot, value in zip(plan.arg_slots, arguments):
        buffers[slot] = value
    run_steps(plan, buffers, layout)
    return [buffers[slot] for slot in plan.result_slots]
