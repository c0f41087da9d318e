"""float16 and bfloat16 programs partitioned on the meshes (2,), (2,2), (2,4) and (8,) under
several layouts, uneven shapes, 0-d and size-0 arrays included: the per-device program (through
the interpreter and through the compiled plan, its f32 kernels and collectives) equals the
unsharded one, which the numpy interpreter runs as the oracle.

Inputs are 0, +-1/2 and +-1, so every sum and matmul here (at most 48 terms) is exact whatever
the order of its additions and wherever a sharded contraction rounds its partial sums to the
16-bit type; every comparison is exact (padding is poisoned with NaN). (A raw ``reduce_sum`` of
inexact bf16 values does round its per-device partial sums, as XLA's partitioned programs do;
``jnp.sum`` computes in f32, as JAX's.)
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from meshjit.compiler.partitioning.partition import partition
from meshjit.compiler.propagation.normalize_boundaries import normalize_boundaries
from meshjit.compiler.propagation.propagate_shardings import propagate_shardings
from meshjit.ir import TensorType, interpret, verify
from meshjit.ir.dtypes import to_numpy
from meshjit.ir.layout import shard_array, unshard_array
from partition_cases import MESHES
from test_partition_differential import ProgramBuilder, run_compiled

pytestmark = pytest.mark.filterwarnings("ignore::meshjit.compiler.partitioning.partition.FullRematerializationWarning")

HALF = ("f16", "bf16")
_MATMUL = {"contracting_dims": ((1,), (0,)), "batch_dims": ((), ())}


def _chain(builder, x, y):
    product = builder.emit("mul", [x, y], {})[0]
    total = builder.emit("add", [product, x], {})[0]
    return [builder.emit("max", [builder.emit("tanh", [total], {})[0], y], {})[0]]


def _matmul_bias(builder, x, y):
    product = builder.emit("dot_general", [x, builder.emit("transpose", [y], {"permutation": (1, 0)})[0]], _MATMUL)[0]
    return [builder.emit("add", [product, product], {})[0]]


def _reductions(builder, x, y):
    return [builder.emit("reduce_sum", [x], {"axes": (0,)})[0], builder.emit("reduce_max", [y], {"axes": (1,)})[0],
            builder.emit("reduce_sum", [builder.emit("mul", [x, y], {})[0]], {"axes": (0, 1)})[0]]


def _converts(builder, x, y):
    wide = builder.emit("convert", [x], {"new_dtype": "f32"})[0]
    other = "f16" if x.type.dtype == "bf16" else "bf16"
    return [builder.emit("convert", [wide], {"new_dtype": x.type.dtype})[0],
            builder.emit("convert", [y], {"new_dtype": other})[0],
            builder.emit("compare", [x, y], {"direction": "lt"})[0]]


def _scan_like(builder, x, y):
    return [builder.emit("cumsum", [x], {"axis": 0, "reverse": False})[0],
            builder.emit("sort", [y], {"dimension": 1, "is_stable": True, "num_keys": 1})[0]]


PROGRAMS = {"chain": _chain, "matmul": _matmul_bias, "reductions": _reductions, "converts": _converts,
            "scan_sort": _scan_like}
# (shape, layouts of both arguments): even, uneven over the axes, 0-d-producing and empty
SHAPES = {
    "even": ((8, 6), ("x,-", "-,y")),
    "uneven": ((7, 5), ("x,-", "y,x")),
    "both_axes": ((8, 4), ("xy,-", "-,-")),
    "empty": ((0, 4), ("x,-", "-,-")),
}


def _values(rng, shape, dtype: str) -> np.ndarray:
    return rng.choice(np.array([-1.0, -0.5, 0.0, 0.5, 1.0]), shape).astype(to_numpy(dtype))


def _bits(array: np.ndarray) -> np.ndarray:
    """Comparable bits: 16-bit floats as f32 (exact), NaNs of either sign as one NaN."""
    array = np.asarray(array)
    if array.dtype.itemsize == 2 and array.dtype.kind not in "iu":
        array = array.astype(np.float32)
    return array


def _layout(text: str, rank: int, mesh) -> str | None:
    names = {name for name, _ in mesh.axes}
    return text if all(letter in names or not letter.isalpha() for letter in text) and rank == 2 else None


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("shape_name", sorted(SHAPES))
@pytest.mark.parametrize("mesh_name", sorted(MESHES))
@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_sharded_equals_unsharded(program, mesh_name, shape_name, dtype):
    mesh = MESHES[mesh_name]
    shape, texts = SHAPES[shape_name]
    if program == "matmul" and 0 in shape:
        shape = (0, shape[1])
    builder = ProgramBuilder(mesh)
    arguments = [builder.argument(TensorType(shape, dtype), _layout(text, 2, mesh)) for text in texts]
    module = builder.module(PROGRAMS[program](builder, *arguments))
    verify(module)
    rng = np.random.default_rng(zlib.crc32(f"{program}-{mesh_name}-{shape_name}-{dtype}".encode()))
    arrays = [_values(rng, shape, dtype) for _ in arguments]
    expected = interpret(module, *arrays)
    partitioned = partition(normalize_boundaries(propagate_shardings(module)), poison_padding=True)
    verify(partitioned)
    device_mesh = partitioned.mesh(partitioned.main.spmd_mesh)
    stacked = [shard_array(array, sharding, device_mesh)
               for array, sharding in zip(arrays, partitioned.main.arg_shardings)]
    for how, outputs in (("interpreted", interpret(partitioned, *stacked)),
                         ("compiled", run_compiled(partitioned, stacked, device_mesh))):
        for index, (output, sharding, value) in enumerate(zip(outputs, partitioned.main.result_shardings,
                                                              module.main.returns)):
            got = unshard_array(output, sharding, device_mesh, value.type.shape)
            assert got.dtype == expected[index].dtype, f"result {index} ({how})"
            np.testing.assert_array_equal(_bits(got), _bits(expected[index]), err_msg=f"result {index} ({how})")
