"""The compiler's rules for pure_callback and io_callback (``ir/ops/callbacks.py``).

Sharding: every operand and result dim is a replication factor, so a sharded operand is gathered
whole before the host function sees it and the results come back replicated (JAX runs the
callback once on device 0 with the gathered value). Inside a shard_map body the op carries the
manual axes' sizes (``devices``) and calls back once per device with its shard, each device
keeping its own results, as JAX's do. Autodiff: JAX's errors (wrap the callback in
``custom_jvp``/``custom_vjp`` to differentiate). vmap: JAX's ``vmap_method``s.
"""

from __future__ import annotations

import numpy as np
from meshjit.ir import Op
from meshjit.ir.ops.callbacks import OPS, call_checked, result_types
from meshjit.ir.ops.debug import callback_of

from ..frontend import lax_ops as lax
from ..frontend.lax_loops import scan
from ..frontend.vmap.batching import at_front, emit_like, unrolled
from ..sharding.factor_rules import FactorRule
from ..tables import (
    batching_rules,
    jvp_rules,
    kernel_rules,
    per_leading_position,
    sharding_rules,
    sharding_type_rules,
    typed,
)

VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all", "legacy_vectorized")


@sharding_rules.register(*OPS)
def _callback(op: Op) -> FactorRule:
    """Every operand and result dim its own replication factor: gathered in, replicated out."""
    sizes, operands, results = [], [], []
    for values, dims in ((op.operands, operands), (op.results, results)):
        for value in values:
            dims.append(tuple((len(sizes) + dim,) for dim in range(value.type.rank)))
            sizes.extend(value.type.shape)
    return FactorRule(sizes=tuple(sizes), kinds=("replication",) * len(sizes), operands=tuple(operands),
                      results=tuple(results))


@sharding_type_rules.register(*OPS)
def _replicated_results(op: Op, operands, mesh) -> list:
    """Explicit mode: any operand layout (it is gathered); the results are unsplit."""
    return typed(mesh, [((),) * result.type.rank for result in op.results])


@kernel_rules.register(*OPS)
def _callback_kernel(op: Op, lead: int):
    devices = op.attrs.get("devices")
    host, types = callback_of(op.attrs["callback"]), result_types(op.name, op.attrs)

    def call(*pieces):
        return call_checked(host, pieces, types)

    run = _per_device(call, devices) if devices and len(devices) == lead else per_leading_position(call, lead)
    # NOTE: runtime/plan_constants.py never folds a per-call step, even on constant inputs
    run.per_call = True
    return run


def device_grid(devices: tuple[int, ...], operands) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Inside a shard_map body: the grid of devices to call back on, and the leading shape of the
    results. Along a mesh dim where some operand's buffer is split, both are that buffer's size
    (this process's devices, also under MPI); where every operand is replicated, the callback
    runs on each of the ``devices`` along it and the results are stored once (size 1)."""
    split = tuple(max((operand.shape[dim] for operand in operands), default=1) for dim in range(len(devices)))
    return tuple(size if size > 1 else count for size, count in zip(split, devices)), split


def _per_device(call, devices: tuple[int, ...]):
    """The kernel inside a shard_map body: the callback on every device's pieces (a replicated
    buffer has size-1 leading dims), each device's results kept."""
    def run(*operands):
        grid, lead = device_grid(devices, operands)
        outputs = None
        for position in np.ndindex(*grid):
            pieces = [operand[tuple(index if size > 1 else 0 for index, size in zip(position, operand.shape))]
                      for operand in operands]
            results = call(*pieces)
            if outputs is None:
                outputs = [np.empty(lead + item.shape, item.dtype) for item in results]
            for output, item in zip(outputs, results):
                output[tuple(index if size > 1 else 0 for index, size in zip(position, lead))] = item
        return tuple(outputs or ())

    return run


def _no_jvp(op: Op, primals, tangents):
    if op.name == "io_callback":
        raise ValueError("IO callbacks do not support JVP.")
    raise ValueError("Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use callbacks "
                     "while taking gradients.")


jvp_rules.register(*OPS)(_no_jvp)


@batching_rules.register(*OPS)
def _batch_callback(op: Op, operands, dims, size):
    """JAX's vmap of a callback: ``sequential`` loops over the examples (a scan), unrolled with
    ``sequential_unrolled``; ``expand_dims`` calls once with the batch dim first and size-1 dims
    added to unbatched operands, ``broadcast_all`` with them broadcast to the batch size. An
    io_callback loops (and cannot be vmapped when ordered)."""
    if op.name == "io_callback":
        if op.attrs.get("ordered"):
            raise ValueError("Cannot `vmap` ordered IO callback.")
        method = "sequential"
    else:
        method = op.attrs.get("vmap_method")
    if method not in VMAP_METHODS:
        raise NotImplementedError(
            f"vmap is only supported for the {op.name} primitive when vmap_method is one of 'sequential', "
            f"'sequential_unrolled', 'expand_dims', 'broadcast_all', or 'legacy_vectorized'. "
            f"Got vmap_method={method!r}.")
    if method == "sequential_unrolled":
        return unrolled(op, operands, dims, size)
    if method == "sequential":
        return _sequential(op, operands, dims)
    return _vectorized(op, operands, dims, size, {"expand_dims": 1, "broadcast_all": size}.get(method))


def _sequential(op: Op, operands, dims):
    """A scan over the batched operands (batch dim first), the unbatched ones closed over."""
    batched = [at_front(operand, dim, 0) for operand, dim in zip(operands, dims) if dim is not None]

    def body(carry, examples):
        examples = iter(examples)
        pieces = [operand if dim is None else next(examples) for operand, dim in zip(operands, dims)]
        return carry, tuple(emit_like(op, pieces))

    _, results = scan(body, (), tuple(batched))
    return list(results), [0] * len(results)


def _leading(operand, dim: int | None, kind, unbatched_size: int | None):
    if dim is not None:
        return at_front(operand, dim, 0)
    if unbatched_size is None:
        return operand
    return lax.broadcast_in_dim(operand, (unbatched_size, *kind.shape), tuple(range(1, kind.rank + 1)))


def _vectorized(op: Op, operands, dims, size: int, unbatched_size: int | None):
    """One call on the whole batch; unbatched operands get a leading dim of ``unbatched_size``
    (None: left as they are, JAX's ``legacy_vectorized``)."""
    ready = [_leading(operand, dim, value.type, unbatched_size) for operand, dim, value in zip(operands, dims, op.operands)]
    types = result_types(op.name, op.attrs)
    attrs = dict(op.attrs, result_shapes=tuple((size, *kind.shape) for kind in types))
    results = emit_like(op, ready, attrs)
    return results, [0] * len(results)
