"""The programs the MPI tests run, each on 8 devices whatever the process count: a case builds
its inputs (the same on every process), runs a jitted program and returns its outputs by name.

tests/mpi/test_mpi.py runs every case in one process as the reference and compares it with
``run_cases.py`` under ``mpiexec -n 1, 2, 4``; ``EXACT`` lists the outputs whose collectives
involve no floating-point sum, which must match bit for bit.
"""

from __future__ import annotations

import numpy as np

import meshjit as jax
import meshjit.numpy as jnp
from meshjit import nn
from meshjit.experimental import io_callback
from meshjit.sharding import Mesh, NamedSharding
from meshjit.sharding import PartitionSpec as P

DEVICE_COUNT = 8


def _meshes():
    devices = np.array(jax.devices())
    return Mesh(devices.reshape(8), ("x",)), Mesh(devices.reshape(2, 4), ("x", "y"))


def _data(*shape, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def megatron_mlp() -> dict:
    """gelu(x @ w1) @ w2 with the hidden dim sharded: an all_reduce over the model axis, across
    processes on the 1-d mesh, and inside each process for the 2-d mesh with 2 processes."""
    line, grid = _meshes()
    x, w1, w2 = _data(16, 32, seed=1), _data(32, 64, seed=2), _data(64, 32, seed=3)
    outputs = {}
    for name, mesh, data_axis, model_axis in (("line", line, None, "x"), ("grid", grid, "x", "y")):
        placed = [jax.device_put(value, NamedSharding(mesh, spec)) for value, spec in
                  ((x, P(data_axis, None)), (w1, P(None, model_axis)), (w2, P(model_axis, None)))]
        outputs[f"mlp_{name}"] = jax.jit(lambda a, b, c: nn.gelu(a @ b) @ c)(*placed)
    return outputs


def sharded_reduction() -> dict:
    """Reductions over a sharded axis: all_reduce sum and max, reduce_scatter, a full sum."""
    _, grid = _meshes()
    y = jax.device_put(_data(16, 32, seed=4), NamedSharding(grid, P("x", "y")))
    scattered = jax.jit(lambda v: jnp.sum(v, axis=0), out_shardings=NamedSharding(grid, P(("y", "x"))))
    return {
        "sum_axis0": jax.jit(lambda v: jnp.sum(v, axis=0))(y),
        "max_axis0": jax.jit(lambda v: jnp.max(v, axis=0))(y),
        "sum_scattered": scattered(y),
        "sum_all": jax.jit(jnp.sum)(y),
    }


def reshards() -> dict:
    """Reshards that need all_to_all (rows to columns) and all_gather (to replicated)."""
    line, grid = _meshes()
    z = jax.device_put(_data(16, 32, seed=5), NamedSharding(line, P("x", None)))
    w = jax.device_put(_data(16, 32, seed=6), NamedSharding(grid, P("y", "x")))

    def to_columns(mesh, spec):
        return jax.jit(lambda v: jax.lax.with_sharding_constraint(v * 2, NamedSharding(mesh, spec)))

    # NOTE: resharding an Array that spans processes happens inside jit (device_put refuses it)
    w_rows = jax.jit(lambda v: v, out_shardings=NamedSharding(grid, P("y", None)))(w)
    return {
        "all_to_all_line": to_columns(line, P(None, "x"))(z),
        "all_to_all_grid": to_columns(grid, P("x", "y"))(w_rows),
        "all_gather_grid": jax.jit(lambda v: v + 1, out_shardings=NamedSharding(grid, P()))(w),
    }


def ring_all_reduce() -> dict:
    """A shard_map ring all-reduce with ppermute, a shard_map all_to_all over both grid axes,
    and axis_index."""
    shard_map = getattr(jax, "shard_map", None)
    if shard_map is None:
        from meshjit.shard_map_api import shard_map
    line, grid = _meshes()

    def ring(block):
        total, current = block, block
        for _ in range(7):
            current = jax.lax.ppermute(current, "x", [(i, (i + 1) % 8) for i in range(8)])
            total = total + current
        return total

    x = jax.device_put(_data(16, 4, seed=7), NamedSharding(line, P("x")))
    g = jax.device_put(_data(16, 8, seed=8), NamedSharding(grid, P(("x", "y"))))
    h = jax.device_put(_data(16, 8, seed=8), NamedSharding(grid, P("x", "y")))
    exchange = shard_map(lambda v: jax.lax.all_to_all(v, ("x", "y"), 1, 0, tiled=True), mesh=grid,
                         in_specs=P(("x", "y")), out_specs=P(None, ("x", "y")))
    positions = shard_map(lambda v: v + 10.0 * jax.lax.axis_index("y") + jax.lax.axis_index("x"), mesh=grid,
                          in_specs=P("x", "y"), out_specs=P("x", "y"))
    return {
        "ring": jax.jit(shard_map(ring, mesh=line, in_specs=P("x"), out_specs=P("x")))(x),
        "all_to_all_two_axes": jax.jit(exchange)(g),
        "axis_index": jax.jit(positions)(h),
    }


def halos_and_lookups() -> dict:
    """Halo exchange across processes (a roll and a 3x3 convolution with rows split over 8
    devices: collective_permutes between neighbours) and a vocab-parallel lookup (a masked local
    gather and one all_reduce)."""
    line, grid = _meshes()
    rows = NamedSharding(line, P("x", None))
    a = jax.device_put(_data(16, 6, seed=7), rows)
    image = jax.device_put(_data(2, 16, 5, 3, seed=8), NamedSharding(line, P(None, "x", None, None)))
    kernel = _data(3, 3, 3, 2, seed=9)
    table = jax.device_put(_data(32, 4, seed=10), NamedSharding(grid, P(("x", "y"), None)))
    ids = np.array([3, 31, 0, 17, 17], np.int32)
    conv = jax.jit(lambda x: jax.lax.conv_general_dilated(x, kernel, (1, 1), "SAME",
                                                          dimension_numbers=("NHWC", "HWIO", "NHWC")))
    return {
        "roll": jax.jit(lambda v: jnp.roll(v, 3, axis=0), out_shardings=rows)(a),
        "conv_halo": conv(image),
        "lookup": jax.jit(lambda t: t[ids])(table),
    }


def control_flow() -> dict:
    """Loops and branches whose collectives run inside them: the sharded RNN (batch on x, W on
    y) and its gradient, a while loop whose predicate reduces over every device, and a cond on
    a sharded operand."""
    line, grid = _meshes()
    w, h, xs = _data(16, 16, seed=9) / 4, _data(8, 16, seed=10), _data(6, 8, 16, seed=11)
    shardings = (NamedSharding(grid, P(None, "y")), NamedSharding(grid, P("x")), NamedSharding(grid, P(None, "x")))

    def rnn(w, h, xs):
        return jax.lax.scan(lambda h, x: (jnp.tanh(h @ w + x), h), h, xs)

    def loss(w, h, xs):
        last, ys = rnn(w, h, xs)
        return jnp.sum(last ** 2) + jnp.sum(ys)

    def newton(a):
        def body(state):
            return state[0] + 1, 0.5 * (state[1] + a / state[1])
        return jax.lax.while_loop(lambda state: jnp.max(jnp.abs(state[1] * state[1] - a)) > 1e-5, body, (0, a))

    targets = jax.device_put(np.linspace(1.0, 9.0, 16).astype(np.float32), NamedSharding(line, P("x")))
    v = jax.device_put(_data(16, 8, seed=12), NamedSharding(grid, P("x", "y")))
    branch = jax.jit(lambda v: jax.lax.cond(jnp.sum(v) > 0, lambda u: u @ u.T, lambda u: -u @ u.T, v))
    last, ys = jax.jit(rnn, in_shardings=shardings)(w, h, xs)
    steps, roots = jax.jit(newton)(targets)
    return {"rnn_last": last, "rnn_ys": ys, "rnn_grad": jax.jit(jax.grad(loss), in_shardings=shardings)(w, h, xs),
            "newton_steps": steps, "newton_roots": roots, "cond": branch(v)}


def half_floats() -> dict:
    """float16 and bfloat16 through every kind of collective (MPI has no 16-bit float type):
    psums (bf16 in f32 rounded once, f16 in member order), a sum over a sharded axis, a
    reshard, a gather and a ring of ppermutes. Results are returned in f32 (exactly) for the
    npz files."""
    shard_map = getattr(jax, "shard_map", None)
    if shard_map is None:
        from meshjit.shard_map_api import shard_map
    line, grid = _meshes()
    outputs = {}
    for dtype in ("float16", "bfloat16"):
        x = jax.device_put(_data(16, 8, seed=13).astype(dtype), NamedSharding(line, P("x")))
        y = jax.device_put(_data(16, 32, seed=14).astype(dtype), NamedSharding(grid, P("x", "y")))
        psum = shard_map(lambda v: jax.lax.psum(v, "x"), mesh=line, in_specs=P("x"), out_specs=P())
        ring = shard_map(lambda v: jax.lax.ppermute(v, "x", [(i, (i + 1) % 8) for i in range(8)]), mesh=line,
                         in_specs=P("x"), out_specs=P("x"))
        results = {
            "psum": jax.jit(psum)(x),
            "sum_axis0": jax.jit(lambda v: jnp.sum(v, axis=0))(y),
            "raw_sum_axis0": jax.jit(lambda v: jax.lax.reduce_sum(v, (0,)))(y),
            "to_columns": jax.jit(lambda v: jax.lax.with_sharding_constraint(v * 2, NamedSharding(line, P(None, "x"))))(x),
            "gathered": jax.jit(lambda v: v + 1, out_shardings=NamedSharding(grid, P()))(y),
            "ring": jax.jit(ring)(x),
        }
        outputs.update({f"{name}_{dtype}": value.astype(jnp.float32) for name, value in results.items()})
    return outputs
def complex_values() -> dict:
    """complex64 across processes: a psum in shard_map, a contraction over a sharded dim (an
    all_reduce of complex partial sums), an fft whose sharded transform dim is all-gathered, and
    an all_to_all of complex rows."""
    line, grid = _meshes()
    z = (_data(16, 32, seed=11) + 1j * _data(16, 32, seed=12)).astype(np.complex64)
    rows = jax.device_put(z, NamedSharding(line, P("x", None)))
    blocks = jax.device_put(z, NamedSharding(grid, P("x", "y")))
    psum = jax.shard_map(lambda v: jax.lax.psum(v, "x"), mesh=line, in_specs=P("x", None), out_specs=P())
    return {
        "complex_psum": jax.jit(psum)(rows),
        "complex_matmul": jax.jit(lambda v: v @ jnp.conj(v).T)(blocks),
        "complex_fft": jax.jit(jnp.fft.fft)(blocks),
        "complex_columns": jax.jit(lambda v: v * 1j, out_shardings=NamedSharding(line, P(None, "x")))(rows),
    }


def host_callbacks() -> dict:
    """pure_callback and io_callback on a value sharded across processes: gathered, every process
    calls back with the whole value and keeps its result (a pure host function gives every process
    the same); inside shard_map each process calls back for its own devices' shards."""
    _, grid = _meshes()
    x = jax.device_put(_data(16, 8, seed=9), NamedSharding(grid, P("x", "y")))

    def sort_rows(value):
        return np.sort(np.asarray(value), axis=-1)

    def with_callback(callback_op):
        return lambda a: callback_op(sort_rows, jax.ShapeDtypeStruct(a.shape, a.dtype), a)

    per_device = jax.shard_map(with_callback(jax.pure_callback), mesh=grid, in_specs=P("x", "y"),
                               out_specs=P("x", "y"))
    return {
        "callback_whole": jax.jit(lambda a: with_callback(jax.pure_callback)(a) + a)(x),
        "callback_io": jax.jit(with_callback(io_callback))(x),
        "callback_per_device": jax.jit(per_device)(x),
    }


CASES = {"megatron_mlp": megatron_mlp, "sharded_reduction": sharded_reduction, "reshards": reshards,
         "ring_all_reduce": ring_all_reduce, "halos_and_lookups": halos_and_lookups,
         "control_flow": control_flow, "half_floats": half_floats, "complex_values": complex_values,
         "host_callbacks": host_callbacks}

# Outputs whose collectives move or compare values without adding floats across processes (the
# ring adds in program order, so it is exact too).
EXACT = {"max_axis0", "all_to_all_line", "all_to_all_grid", "all_gather_grid", "ring", "all_to_all_two_axes",
         "axis_index", "roll", "lookup", "newton_steps", "complex_fft", "complex_columns", "callback_whole",
         "callback_io", "callback_per_device"} | {
    f"{name}_{dtype}" for name in ("psum", "sum_axis0", "raw_sum_axis0", "to_columns", "gathered", "ring")
    for dtype in ("float16", "bfloat16")}
