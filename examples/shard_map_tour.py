"""A tour of meshjit.shard_map: the programs docs/shard_map.md shows, with their printed output.

Run with ``python examples/shard_map_tour.py`` (8 simulated CPU devices).
"""

from functools import partial

import numpy as np

import meshjit as jax
from meshjit import lax
from meshjit.sharding import AxisType, NamedSharding
from meshjit.sharding import PartitionSpec as P

mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto, AxisType.Auto))
ring_mesh = jax.make_mesh((8,), ("i",), axis_types=(AxisType.Auto,))
rng = np.random.default_rng(0)


def section(title):
    print(f"\n#### {title}")


section("row sums: psum over y")


@partial(jax.shard_map, mesh=mesh, in_specs=P("x", "y"), out_specs=P("x", None))
def row_sums(block):
    print("per-device block:", block.shape)
    return lax.psum(block.sum(axis=1, keepdims=True), "y")


x = np.arange(32, dtype=np.float32).reshape(4, 8)
result = row_sums(x)
print(result)
print(result.sharding)


section("sharded matmul: psum of partial products")


@partial(jax.shard_map, mesh=mesh, in_specs=(P("x", "y"), P("y", None)), out_specs=P("x", None))
def matmul_psum(a_block, b_block):
    return lax.psum(a_block @ b_block, "y")


a = rng.standard_normal((8, 16), dtype=np.float32)
b = rng.standard_normal((16, 4), dtype=np.float32)
print(np.allclose(matmul_psum(a, b), a @ b, atol=1e-5))
lowered = jax.jit(matmul_psum).lower(a, b)
print(lowered.as_text())
print(lowered.compile().as_text())


section("reduce-scatter matmul: psum_scatter")


@partial(jax.shard_map, mesh=mesh, in_specs=(P(None, "y"), P("y", None)), out_specs=P(None, "y"))
def matmul_reduce_scatter(a_block, b_block):
    return lax.psum_scatter(a_block @ b_block, "y", scatter_dimension=1, tiled=True)


print(np.allclose(matmul_reduce_scatter(a, b), a @ b, atol=1e-5))
print(jax.jit(matmul_reduce_scatter).lower(a, b).compile().as_text())


section("ring all-reduce with ppermute")


@partial(jax.shard_map, mesh=ring_mesh, in_specs=P("i"), out_specs=P("i"))
def ring_all_reduce(block):
    size = lax.axis_size("i")
    right = [(index, (index + 1) % size) for index in range(size)]
    total, message = block, block
    for _ in range(size - 1):
        message = lax.ppermute(message, "i", right)
        total = total + message
    return total


v = np.arange(16, dtype=np.float32).reshape(8, 2)
print(ring_all_reduce(v))
psum_all = jax.shard_map(lambda block: lax.psum(block, "i"), mesh=ring_mesh, in_specs=P("i"), out_specs=P("i"))
print(np.array_equal(ring_all_reduce(v), psum_all(v)))


section("all_to_all: rows split over y become columns split over y")


@partial(jax.shard_map, mesh=mesh, in_specs=P("y", None), out_specs=P(None, "y"))
def rows_to_columns(block):
    return lax.all_to_all(block, "y", 1, 0, tiled=True)


m = np.arange(64, dtype=np.float32).reshape(8, 8)
columns = rows_to_columns(m)
print(np.array_equal(columns, m), columns.sharding)
print(jax.jit(rows_to_columns).lower(m).compile().as_text())


section("collective matmul: ppermute overlapped with local dots")


@partial(jax.shard_map, mesh=ring_mesh, in_specs=(P("i", None), P("i", None)), out_specs=P("i", None))
def collective_matmul(a_block, b_block):
    size, index = lax.axis_size("i"), lax.axis_index("i")
    width = b_block.shape[0]
    to_next = [(source, (source + 1) % size) for source in range(size)]
    result = None
    for step in range(size):
        owner = (index + size - step) % size  # whose block of B this device holds now
        columns = lax.dynamic_slice(a_block, (0, owner * width), (a_block.shape[0], width))
        product = columns @ b_block
        result = product if result is None else result + product
        if step < size - 1:
            b_block = lax.ppermute(b_block, "i", to_next)
    return result


a2 = rng.standard_normal((16, 32), dtype=np.float32)
b2 = rng.standard_normal((32, 8), dtype=np.float32)
print(np.allclose(collective_matmul(a2, b2), a2 @ b2, atol=1e-4))
text = jax.jit(collective_matmul).lower(a2, b2).compile().as_text()
print("\n".join(line for line in text.splitlines() if "dot_general" in line or "collective_permute" in line))


section("partial manual: axis_names={'x'}")


@partial(jax.shard_map, mesh=mesh, in_specs=P("x"), out_specs=P("x"), axis_names={"x"})
def manual_over_x(block):
    print("per-device block:", block.shape)
    return lax.psum(block, "x") + lax.axis_index("x")


w = np.arange(32, dtype=np.float32).reshape(8, 4)
print(manual_over_x(w))
print(jax.jit(manual_over_x).lower(w).as_text())


section("static arguments and pytree prefixes")


def scale(block, factor, options):
    return block * factor + options["shift"]


scaled = jax.shard_map(scale, mesh=mesh, in_specs=(P("x"), None, None), out_specs=P("x"))
print(scaled(np.ones((4, 2), np.float32), 3, {"shift": 0.5}))


def layer(params, batch):
    hidden = batch["inputs"] @ params["w"]
    return {"out": hidden, "loss": lax.pmean(hidden.sum(), "x")}


params = {"w": np.ones((4, 3), np.float32)}
batch = {"inputs": np.arange(32, dtype=np.float32).reshape(8, 4)}
out = jax.shard_map(layer, mesh=mesh, in_specs=(P(), P("x")), out_specs={"out": P("x"), "loss": P()})(params, batch)
print(out["out"].shape, out["loss"])


section("in_specs inferred on an Explicit mesh")
explicit = jax.make_mesh((2, 4), ("x", "y"))  # axis types are Explicit by default
xs = jax.device_put(np.arange(16, dtype=np.float32).reshape(4, 4), NamedSharding(explicit, P("x", "y")))


def show_block(block, bias):
    print("per-device shapes:", block.shape, bias.shape)
    return block + bias[:2, :1]


print(jax.shard_map(show_block, mesh=explicit, out_specs=P("x", "y"))(xs, np.ones((4, 4), np.float32)))


section("closures inside jit")


@jax.jit
def add_bias(batch, bias):
    return jax.shard_map(lambda block: block + bias, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(batch)


print(add_bias.lower(w, np.ones(4, np.float32)).as_text())


section("check_vma")
try:
    jax.shard_map(lambda block: block * 2, mesh=mesh, in_specs=P("x"), out_specs=P())(w)
except ValueError as error:
    print(f"ValueError: {error}")
try:
    jax.shard_map(lambda block: lax.all_gather(block, "x", tiled=True), mesh=mesh, in_specs=P("x"), out_specs=P())(w)
except ValueError as error:
    print(f"ValueError: {error}")
gather = partial(lax.all_gather, axis_name="x", tiled=True, to="invarying")
print(np.array_equal(jax.shard_map(gather, mesh=mesh, in_specs=P("x"), out_specs=P())(w), w))
first = jax.shard_map(lambda block: block + lax.axis_index("x"), mesh=mesh, in_specs=P(), out_specs=P(),
                      check_vma=False)
print(first(np.zeros((2, 2), np.float32)))


section("errors")
try:
    lax.psum(w, "x")
except NameError as error:
    print(f"NameError: {error}")
try:
    jax.shard_map(lambda block: lax.ppermute(block, "x", [(0, 1), (1, 1)]), mesh=mesh, in_specs=P("x"),
                  out_specs=P("x"))(w)
except ValueError as error:
    print(f"ValueError: {error}")
try:
    jax.shard_map(lambda block: block, mesh=mesh, in_specs=P("y", "x"), out_specs=P("y", "x"))(
        np.zeros((8, 3), np.float32))
except ValueError as error:
    print(f"ValueError: {error}")
