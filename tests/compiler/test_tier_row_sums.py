"""Float sums over rows (softmax's, layer norm's, a loss's mean): the kernel's ``_lane_sum``
(compiler/lowering/codegen_lanes.py) and the first tier's ``lane_sum`` add in one order fixed by
construction, so call 1 (numpy) and call 100 (the kernel) give the same bits on any CPU.

Nothing here depends on the vector ISA: the expected bits come from the order written out
element by element in plain Python floats of the dtype (``_written_out``), not from the CPU."""

from __future__ import annotations

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit.compiler.lowering.codegen import kernel_source, load_kernel
from meshjit.compiler.lowering.codegen_lanes import LANES
from meshjit.compiler.lowering.tier_reductions import lane_sum
from meshjit.sharding import Mesh, NamedSharding, PartitionSpec as P
from tier_helpers import bits, tiered_steps

pytestmark = pytest.mark.usefixtures("restore_runtime_state")

LENGTHS = (0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 512, 1000, 4096, 4097)
DTYPES = ("f32", "f64")


def _written_out(row: np.ndarray) -> np.generic:
    """The documented order one scalar addition at a time: lane k mod L from +0 over the whole
    blocks of L, then the lanes folded by halves down to one, each fold to w lanes followed by
    the next w elements lane by lane when w or more are left."""
    lanes = LANES["f32" if row.dtype == np.float32 else "f64"]
    position = len(row) - len(row) % lanes
    acc = [row.dtype.type(0)] * lanes
    for k in range(position):
        acc[k % lanes] = acc[k % lanes] + row[k]
    while len(acc) > 1:
        half = len(acc) // 2
        acc = [acc[j] + acc[j + half] for j in range(half)]
        if len(row) - position >= half:
            acc = [acc[j] + row[position + j] for j in range(half)]
            position += half
    return acc[0]


def _rows(dtype: str, length: int, count: int = 3) -> np.ndarray:
    """Rows with magnitudes from 1e-6 to 1e6 (so the order shows in the bits), a -0 row and a
    row holding an infinity."""
    rng = np.random.default_rng(length)
    numpy_dtype = np.float32 if dtype == "f32" else np.float64
    rows = rng.standard_normal((count, length)) * 10.0 ** rng.integers(-6, 7, (count, length))
    rows = rows.astype(numpy_dtype)
    if length:
        rows[1] = -0.0
        rows[2, length // 2] = np.inf
    return rows


def _kernel_lane_sums(rows: np.ndarray) -> np.ndarray:
    """``_lane_sum`` of each row, in a kernel built from the prelude every fused kernel uses."""
    kernel = load_kernel(kernel_source(["row0 = in0[lead]", "target0 = out0[lead]", "target0[0] = _lane_sum(row0, n)"],
                                       ["pass"], ["in0", "out0"]))
    out = np.empty((rows.shape[0], 1), rows.dtype)
    kernel(0, rows.size, rows.shape[1], rows, out)
    return out[:, 0]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("length", LENGTHS)
def test_kernel_and_numpy_lane_sums_follow_the_written_out_order(dtype, length):
    rows = _rows(dtype, length)
    expected = np.array([_written_out(row) for row in rows], rows.dtype)
    assert bits(lane_sum(rows, dtype)) == bits(expected)
    if length:
        assert bits(_kernel_lane_sums(rows)) == bits(expected)


def _bits_on_both_tiers(monkeypatch, program, *arguments):
    """The results on the first tier (MESHJIT_COMPILE=never) and on the kernels (sync) agree
    bit for bit (some sizes run other steps: the emulated-FMA tiers' size cap, narrow rows)."""
    results = {}
    for mode in ("never", "sync"):
        monkeypatch.setenv("MESHJIT_COMPILE", mode)
        function = jax.jit(program)
        results[mode] = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(function(*arguments))]
    for first, kernel in zip(results["never"], results["sync"]):
        assert first.dtype == kernel.dtype and first.shape == kernel.shape
        assert bits(first) == bits(kernel)


def _layer_norm(x, y):
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    return centred / jnp.sqrt((centred * centred).mean(axis=-1, keepdims=True) + 1e-5) * y


ROW_PROGRAMS = {
    "sum": lambda x, y: (x * y).sum(axis=-1),
    "softmax": lambda x, y: jax.nn.softmax(x * y, axis=-1),
    "layer_norm": _layer_norm,
    "loss": lambda x, y: -(jax.nn.log_softmax(x, axis=-1) * y).mean(axis=-1),
    "sum_of_trailing_two": lambda x, y: (x * y).reshape(x.shape[0], 1, -1).sum(axis=-1),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("length", [7, 9, 33, 129, 1000])
@pytest.mark.parametrize("name", sorted(ROW_PROGRAMS))
def test_row_sum_programs_give_the_kernels_bits(monkeypatch, name, length, dtype):
    if dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(length)
    shape = (max(64, -(-8192 // length)), length)  # large enough to fuse (FUSION_MIN_ELEMENTS)
    x = (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape)).astype(dtype)
    y = rng.standard_normal(shape).astype(dtype)
    _bits_on_both_tiers(monkeypatch, ROW_PROGRAMS[name], x, y)


@pytest.mark.parametrize("name", sorted(ROW_PROGRAMS))
def test_row_sum_programs_run_on_the_first_tier(monkeypatch, name):
    monkeypatch.setenv("MESHJIT_COMPILE", "never")
    x = np.ones((64, 129), np.float32)
    assert tiered_steps(jax.jit(ROW_PROGRAMS[name]), x, x)


def test_row_sums_on_sharded_buffers(monkeypatch):
    mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))
    rng = np.random.default_rng(2)
    x = jax.device_put(rng.standard_normal((64, 136)).astype(np.float32), NamedSharding(mesh, P("x", None)))
    y = jax.device_put(rng.standard_normal((64, 136)).astype(np.float32), NamedSharding(mesh, P("x", "y")))
    for name in ("softmax", "layer_norm", "sum"):
        monkeypatch.setenv("MESHJIT_COMPILE", "never")
        assert tiered_steps(jax.jit(ROW_PROGRAMS[name]), x, y)
        _bits_on_both_tiers(monkeypatch, ROW_PROGRAMS[name], x, y)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(300, 2048), (1, 70000), (4, 2, 4160), (2048, 96)])
@pytest.mark.parametrize("layout", ["C", "F"])
def test_numpy_lane_sums_add_whole_blocks_in_order_over_many_rows(dtype, shape, layout):
    """numpy's ``lane_sum`` adds the whole blocks one after another in every lane, however many
    rows and blocks there are and however the rows lie in memory (the written-out order above,
    vectorised over rows and lanes; the tail's fold as in ``lane_sum``)."""
    rng = np.random.default_rng(sum(shape))
    numpy_dtype = np.float32 if dtype == "f32" else np.float64
    rows = (rng.standard_normal(shape) * 10.0 ** rng.integers(-6, 7, shape)).astype(numpy_dtype)
    rows = np.asfortranarray(rows) if layout == "F" else rows
    lanes = LANES[dtype]
    whole = shape[-1] - shape[-1] % lanes
    acc = np.zeros(shape[:-1] + (lanes,), numpy_dtype)
    for start in range(0, whole, lanes):
        acc = acc + rows[..., start:start + lanes]
    expected = lane_sum(np.concatenate([acc, rows[..., whole:]], axis=-1), dtype)
    assert bits(lane_sum(rows, dtype)) == bits(expected)
