# JAX docs "Explicit sharding (a.k.a. sharding in types)", with JAX 0.10's names.
import functools
import sys

import numpy as np

if sys.argv[1:] == ["meshjit"]:
    import meshjit as jax
    import meshjit.numpy as jnp
    from meshjit.sharding import AxisType, PartitionSpec as P, auto_axes, explicit_axes, get_abstract_mesh, reshard, set_mesh
else:
    import jax
    import jax.numpy as jnp
    from jax.sharding import AxisType, PartitionSpec as P, auto_axes, explicit_axes, get_abstract_mesh, reshard, set_mesh

jax.config.update('jax_num_cpu_devices', 8)

some_array = np.arange(8)
print(f"JAX-level type of some_array: {jax.typeof(some_array)}")


@jax.jit
def foo(x):
    print(f"JAX-level type of x during tracing: {jax.typeof(x)}")
    return x + x


print(foo(some_array))

mesh = jax.make_mesh((2, 4), ("X", "Y"), axis_types=(AxisType.Explicit, AxisType.Explicit))
set_mesh(mesh)
print(f"Current mesh is: {get_abstract_mesh()}")

replicated_array = np.arange(8).reshape(4, 2)
sharded_array = reshard(replicated_array, P("X", None))
print(f"replicated_array type: {jax.typeof(replicated_array)}")
print(f"sharded_array type: {jax.typeof(sharded_array)}")

arg0 = reshard(np.arange(4).reshape(4, 1), P("X", None))
arg1 = reshard(np.arange(8).reshape(1, 8), P(None, "Y"))
result = arg0 + arg1
print(f"arg0 sharding: {jax.typeof(arg0)}")
print(f"arg1 sharding: {jax.typeof(arg1)}")
print(f"result sharding: {jax.typeof(result)}")


@jax.jit
def add_arrays(x, y):
    ans = x + y
    print(f"x sharding: {jax.typeof(x)}")
    print(f"y sharding: {jax.typeof(y)}")
    print(f"ans sharding: {jax.typeof(ans)}")
    return ans


print(add_arrays(arg0, arg1))

some_x = reshard(np.arange(16).reshape(4, 4), P("X", None))
some_y = reshard(np.arange(16).reshape(4, 4), P(None, "X"))
try:
    some_x + some_y
except Exception as e:
    print("ERROR!")
    print(e)

print("=== try again with auto_axes ===")


@auto_axes
def add_with_out_sharding_kwarg(x, y):
    print(f"We're in auto-sharding mode here. This is the current mesh: {get_abstract_mesh()}")
    return x + y


result = add_with_out_sharding_kwarg(some_x, some_y, out_sharding=P("X", None))
print(f"Result type: {jax.typeof(result)}")
print(result)

print(f"Current mesh is: {get_abstract_mesh()}")


@functools.partial(auto_axes, axes='X')
def g(y):
    print(f'mesh inside g: {get_abstract_mesh()}')
    print(f'y.sharding inside g: {jax.typeof(y) = }', end='\n\n')
    return y * 2


@jax.jit
def f(arr1):
    print(f'mesh inside f: {get_abstract_mesh()}')
    x = jnp.sin(arr1)
    print(f'x.sharding: {jax.typeof(x)}', end='\n\n')
    z = g(x, out_sharding=P("X", "Y"))
    print(f'z.sharding: {jax.typeof(z)}', end="\n\n")
    return z + 1


some_x = reshard(np.arange(16).reshape(4, 4), P("X", "Y"))
print(f(some_x))

auto_mesh = jax.make_mesh((2, 4), ("X", "Y"), axis_types=(AxisType.Auto, AxisType.Auto))


@functools.partial(explicit_axes, axes=('X', 'Y'))
def explicit_g(y):
    print(f'mesh inside g: {get_abstract_mesh()}')
    print(f'y.sharding inside g: {jax.typeof(y) = }')
    z = y * 2
    print(f'z.sharding inside g: {jax.typeof(z) = }', end='\n\n')
    return z


@jax.jit
def f(arr1):
    print(f'mesh inside f: {get_abstract_mesh()}', end='\n\n')
    x = jnp.sin(arr1)
    z = explicit_g(x, in_sharding=P("X", "Y"))
    return z + 1


with set_mesh(auto_mesh):
    some_x = jax.device_put(np.arange(16).reshape(4, 4), P("X", "Y"))
    print(f(some_x))


def compare_shardings(x):
    print(f"=== with mesh: {get_abstract_mesh()} ===")
    print(f"Concrete value sharding: {x.sharding.spec}")
    print(f"Type-specified sharding: {jax.typeof(x).sharding.spec}")


my_array = jnp.sin(reshard(np.arange(8), P("X")))
compare_shardings(my_array)


@auto_axes
def check_in_auto_context(x):
    compare_shardings(x)
    return x


print(check_in_auto_context(my_array, out_sharding=P("X")))
