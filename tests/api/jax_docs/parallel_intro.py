# JAX docs "Introduction to parallel programming" (sharded-computation), with JAX 0.10's names.
import sys
from functools import partial

import numpy as np

if sys.argv[1:] == ["meshjit"]:
    import meshjit as jax
    import meshjit.numpy as jnp
    from meshjit.sharding import AxisType, PartitionSpec as P
else:
    import jax
    import jax.numpy as jnp
    from jax.sharding import AxisType, PartitionSpec as P

jax.config.update('jax_num_cpu_devices', 8)
print(jax.devices())

arr = jnp.arange(32.0).reshape(4, 8)
print(arr.devices())
print(arr.sharding)
jax.debug.visualize_array_sharding(arr)

mesh = jax.make_mesh((2, 4), ('x', 'y'))
sharding = jax.sharding.NamedSharding(mesh, P('x', 'y'))
print(sharding)

arr_sharded = jax.device_put(arr, sharding)
print(arr_sharded)
jax.debug.visualize_array_sharding(arr_sharded)


@jax.jit
def f_elementwise(x):
    return 2 * jnp.sin(x) + 1


result = f_elementwise(arr_sharded)
print("shardings match:", result.sharding == arr_sharded.sharding)


@jax.jit
def f_contract(x):
    return x.sum(axis=0)


result = f_contract(arr_sharded)
jax.debug.visualize_array_sharding(result)
print(result)

some_array = np.arange(8)
print(f"JAX-level type of some_array: {jax.typeof(some_array)}")


@jax.jit
def foo(x):
    print(f"JAX-level type of x during tracing: {jax.typeof(x)}")
    return x + x


print(foo(some_array))

mesh = jax.make_mesh((2, 4), ("X", "Y"), axis_types=(AxisType.Explicit, AxisType.Explicit))
replicated_array = np.arange(8).reshape(4, 2)
sharded_array = jax.device_put(replicated_array, jax.sharding.NamedSharding(mesh, P("X", None)))
print(f"replicated_array type: {jax.typeof(replicated_array)}")
print(f"sharded_array type: {jax.typeof(sharded_array)}")

arg0 = jax.device_put(np.arange(4).reshape(4, 1), jax.sharding.NamedSharding(mesh, P("X", None)))
arg1 = jax.device_put(np.arange(8).reshape(1, 8), jax.sharding.NamedSharding(mesh, P(None, "Y")))


@jax.jit
def add_arrays(x, y):
    ans = x + y
    print(f"x sharding: {jax.typeof(x)}")
    print(f"y sharding: {jax.typeof(y)}")
    print(f"ans sharding: {jax.typeof(ans)}")
    return ans


with jax.set_mesh(mesh):
    print(add_arrays(arg0, arg1))

mesh = jax.make_mesh((8,), ('x',))
f_elementwise_sharded = jax.shard_map(f_elementwise, mesh=mesh, in_specs=P('x'), out_specs=P('x'))
arr = jnp.arange(32)
# NOTE: make_mesh's axes are Explicit in JAX 0.10, so an in_spec must match the argument's type:
try:
    print(f_elementwise_sharded(arr))
except ValueError as e:
    print("ERROR!")
    print(e)
arr = jax.device_put(jnp.arange(32), jax.sharding.NamedSharding(mesh, P('x')))
print(f_elementwise_sharded(arr))

x = arr
print(f"global shape: {x.shape=}")


def f(x):
    print(f"device local shape: {x.shape=}")
    return x * 2


y = jax.shard_map(f, mesh=mesh, in_specs=P('x'), out_specs=P('x'))(x)
print(y)


def f(x):
    return jnp.sum(x, keepdims=True)


print(jax.shard_map(f, mesh=mesh, in_specs=P('x'), out_specs=P('x'))(x))


def f(x):
    sum_in_shard = x.sum()
    return jax.lax.psum(sum_in_shard, 'x')


print(jax.shard_map(f, mesh=mesh, in_specs=P('x'), out_specs=P())(x))


@jax.jit
def layer(x, weights, bias):
    return jax.nn.sigmoid(x @ weights + bias)


rng = np.random.default_rng(0)
x = rng.normal(size=(32,))
weights = rng.normal(size=(32, 4))
bias = rng.normal(size=(4,))
print(layer(x, weights, bias))

mesh = jax.make_mesh((8,), ('x',))
x_sharded = jax.device_put(x, jax.sharding.NamedSharding(mesh, P('x')))
weights_sharded = jax.device_put(weights, jax.sharding.NamedSharding(mesh, P()))
print(layer(x_sharded, weights_sharded, bias))

explicit_mesh = jax.make_mesh((8,), ('X',), axis_types=(AxisType.Explicit,))
x_sharded = jax.device_put(x, jax.sharding.NamedSharding(explicit_mesh, P('X')))
weights_sharded = jax.device_put(weights, jax.sharding.NamedSharding(explicit_mesh, P()))


@jax.jit
def layer_auto(x, weights, bias):
    print(f"x sharding: {jax.typeof(x)}")
    print(f"weights sharding: {jax.typeof(weights)}")
    print(f"bias sharding: {jax.typeof(bias)}")
    out = layer(x, weights, bias)
    print(f"out sharding: {jax.typeof(out)}")
    return out


with jax.set_mesh(explicit_mesh):
    print(layer_auto(x_sharded, weights_sharded, bias))


@jax.jit
@partial(jax.shard_map, mesh=mesh, in_specs=(P('x'), P('x', None), P(None)), out_specs=P(None))
def layer_sharded(x, weights, bias):
    return jax.nn.sigmoid(jax.lax.psum(x @ weights, 'x') + bias)


try:
    print(layer_sharded(x, weights, bias))
except ValueError as e:
    print("ERROR!")
    print(e)
print(layer_sharded(jax.device_put(x, jax.sharding.NamedSharding(mesh, P('x'))),
                    jax.device_put(weights, jax.sharding.NamedSharding(mesh, P('x'))), bias))
