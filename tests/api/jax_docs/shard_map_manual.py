# JAX docs "Manual parallelism with shard_map" (docs/notebooks/shard_map), in its JAX 0.10 form
# (jax.shard_map, jax.set_mesh, check_vma, jax.lax.pcast). A cell's displayed value is printed.
# NOTE: cells left out: most of the "Collectives tutorial" (psum, all_gather, psum_scatter,
# ppermute, all_to_all) and "Example: collective matmul" cells. In the stored copy of the page
# they lie between inline images of two megabytes in all that the tools of this session could not
# page through, so their code was not read; of them, only the cells defining psum_scatter with
# ppermute and running it (f8) and the tail of "Example 2" (which starts from Example 1's lhs and
# rhs) were. Every cell before the tutorial and the neural network sections after it are here.
import os
os.environ["XLA_FLAGS"] = '--xla_force_host_platform_device_count=8'  # Use 8 CPU devices

import sys
from functools import partial

if sys.argv[1:] == ["meshjit"]:
    import meshjit as jax
    import meshjit.numpy as jnp
    from meshjit.sharding import Mesh, PartitionSpec as P
else:
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, PartitionSpec as P

jax.config.update('jax_num_cpu_devices', 8)
Explicit = jax.sharding.AxisType.Explicit
Auto = jax.sharding.AxisType.Auto

# --- So, let's see a shard_map!
mesh = jax.make_mesh((4, 2), ('x', 'y'))
jax.set_mesh(mesh)

a = jax.device_put(jnp.arange(8 * 16.).reshape(8, 16), P('x', 'y'))
b = jax.device_put(jnp.arange(16 * 4.).reshape(16, 4), P('y', None))


@jax.shard_map(in_specs=(P('x', 'y'), P('y', None)), out_specs=P('x', None))
def matmul_basic(a_block, b_block):
    # a_block: f32[2, 8]
    # b_block: f32[8, 4]
    c_partialsum = jnp.dot(a_block, b_block)
    c_block = jax.lax.psum(c_partialsum, 'y')
    # c_block: f32[2, 4]
    return c_block


c = matmul_basic(a, b)   # c: f32[8, 4]

if sys.argv[1:] == ["meshjit"]:
    from meshjit.tree_util import tree_map, tree_all
else:
    from jax.tree_util import tree_map, tree_all


def allclose(a, b):
    return tree_all(tree_map(partial(jnp.allclose, atol=1e-2, rtol=1e-2), a, b))


print(allclose(c, jnp.dot(a, b, out_sharding=P('x', None))))

jax.debug.visualize_array_sharding(c)

a = jax.device_put(a, P('x', 'y'))
b = jax.device_put(b, P('y', None))


@jax.jit
def matmul_reference(a, b):
    return jnp.dot(a, b, out_sharding=P('x', None))


c_ref = matmul_reference(a, b)
print(allclose(c_ref, jnp.dot(a, b, out_sharding=P('x', None))))

print('a blocks:'); jax.debug.visualize_array_sharding(a)  # noqa: E702 - the page's cell
print('b blocks:'); jax.debug.visualize_array_sharding(b)  # noqa: E702
print('c blocks:'); jax.debug.visualize_array_sharding(c)  # noqa: E702


# --- Rank-reducing vs rank-preserving maps
def check_vmap(f, xs):
    ans = jax.vmap(f, in_axes=(0,), out_axes=0)(xs)
    expected = jnp.stack([f(x) for x in xs])  # vmap reference semantics
    print(allclose(ans, expected))


check_vmap(lambda x: x @ x, jnp.arange(12).reshape(4, 3))

import numpy as np  # noqa: E402 - where the page imports it
devices = np.array(jax.devices()[:4])
mesh = Mesh(devices, ('i',))  # mesh.shape['i'] = 4
jax.set_mesh(mesh)


def check_shmap(f, y):
    ans = jax.shard_map(f, in_specs=P('i'), out_specs=P('i'))(y)
    expected = jnp.concatenate([f(y_blk) for y_blk in jnp.split(y, mesh.shape['i'])])
    print(allclose(ans, expected))


check_shmap(lambda x: x.T @ x, jnp.arange(32).reshape(8, 4))

# --- Controlling how each input is split (unconcatenated) and tiled with in_specs
mesh = jax.make_mesh((4, 2), ('i', 'j'))
jax.set_mesh(mesh)


@jax.shard_map(in_specs=P('i', None), out_specs=P('i', 'j'))
def f1(x_block):
    print(x_block.shape)  # prints (3, 12)
    return x_block


x1 = jax.device_put(jnp.arange(12 * 12).reshape(12, 12), P('i', None))
y = f1(x1)


@jax.shard_map(in_specs=P('i', 'j'), out_specs=P('i', 'j'))
def f2(x_block):
    print(x_block.shape)
    return x_block


x = jnp.arange(12 * 12).reshape(12, 12)
x_ = jnp.tile(x, (1, mesh.shape['j']))  # x_ has shape (12, 24)
x_ = jax.device_put(x, P('i', 'j'))
y = f2(x_)  # prints (3,12), and f1(x) == f2(x_)

# --- Controlling how each output is assembled with out_specs
auto_mesh = jax.make_mesh((4, 2), ('i', 'j'), (Auto, Auto))
with jax.set_mesh(auto_mesh):
    x = jnp.array([[3.]])

    z = jax.shard_map(lambda: x, in_specs=(), out_specs=P('i', 'j'))()
    print(z)  # prints the same as jnp.tile(x, (4, 2))

    z = jax.shard_map(lambda: x, in_specs=(), out_specs=P('i', None))()
    print(z)  # prints the same as jnp.tile(x, (4, 1)), or just jnp.tile(x, (4,))

    z = jax.shard_map(lambda: x, in_specs=(), out_specs=P(None, None))()
    print(z)  # prints the same as jnp.tile(x, (1, 1)), or just x


@jax.shard_map(in_specs=P('i', 'j'), out_specs=P('i', None))
def f3(x_block):
    return jax.lax.psum(x_block, 'j')


x = jax.device_put(jnp.arange(12 * 12).reshape(12, 12), P('i', 'j'))
y3 = f3(x)
print(y3.shape)


@jax.shard_map(in_specs=P('i', 'j'), out_specs=P(None, 'j'))
def f4(x_block):
    return jax.lax.psum(x_block, 'i')


x = jax.device_put(jnp.arange(12 * 12).reshape(12, 12), P('i', 'j'))
y4 = f4(x)
print(y4.shape)  # (3,12)


@jax.shard_map(in_specs=P('i', 'j'), out_specs=P(None, None))
def f5(x_block):
    return jax.lax.psum(x_block, ('i', 'j'))


y5 = f5(x)
print(y5.shape)  # (3,6)

# --- Tracking how values vary over manual mesh axes, and check_vma=True
mesh = jax.make_mesh((2,), ('i',))
jax.set_mesh(mesh)


@jax.shard_map(in_specs=P('i'), out_specs=P('i'))
def f(x):
    print(x)
    return 2 * x


x = jax.device_put(jnp.arange(6.), P('i'))
print(f(x))


@jax.shard_map(in_specs=P(), out_specs=P())
def f(x):
    print(x)
    return 2 * x


x = jnp.arange(6.)
print(f(x))


@jax.shard_map(in_specs=P('i'), out_specs=P())
def f(x):
    y = jax.lax.psum(x, 'i')
    print(y)
    return y


x = jax.device_put(jnp.arange(6.), P('i'))
print(f(x))


@jax.shard_map(in_specs=P('i'), out_specs=P())
def f(x):
    print(jax.typeof(x))  # f32[3]{V:i}
    y = jax.lax.psum(x, 'i')
    print(jax.typeof(y))  # f32[3]
    return y


x = jax.device_put(jnp.arange(6.), P('i'))
print(f(x))

mesh = jax.make_mesh((4, 2), ('i', 'j'))
jax.set_mesh(mesh)


@jax.shard_map(in_specs=P('i', 'j'), out_specs=P('i'))
def f(x):
    print(jax.typeof(x))  # f32[2,2]{V:(i,j)}
    y = jax.lax.psum(x, 'j')
    assert jax.typeof(y).manual_axis_type.varying == {'i'}
    print(jax.typeof(y))  # f32[2,2]{V:i}
    return y


x = jax.device_put(jnp.arange(8 * 4.).reshape(8, 4), P('i', 'j'))
print(f(x))

mesh = jax.make_mesh((2,), ('i',))
jax.set_mesh(mesh)

x = jax.device_put(jnp.arange(6.), P('i'))
try:
    y = jax.shard_map(lambda x: x, in_specs=P('i'), out_specs=P())(x)
except Exception as e:
    # NOTE: JAX 0.10 names its internal wrapper '_rem_singleton' here, meshjit the function
    print(str(e).replace("'_rem_singleton'", "'<lambda>'"))


@jax.shard_map(in_specs=P(), out_specs=None)
def f(x):
    print(jax.typeof(x))  # f32[6]
    y = jax.lax.pcast(x, 'i', to='varying')
    print(jax.typeof(y))  # f32[6]{i}


x = jnp.arange(6.)
print(f(x))


@jax.shard_map(in_specs=(P('i'), P()), out_specs=P('i'))
def f(x, y):
    return x * y


x = jax.device_put(jnp.arange(6.), P('i'))
y = jnp.arange(3.)
# NOTE: the page prints this jaxpr (pvary, then mul); meshjit's make_jaxpr gives its own IR, whose
# text differs by design (docs/api.md), so the program traces it without printing.
jaxpr = jax.make_jaxpr(f)(x, y)

mesh = jax.make_mesh((2,), ('i',))
jax.set_mesh(mesh)


@jax.shard_map(in_specs=(P('i'), P()), out_specs=P('i'))
def f(x, y):
    def body(carry, _):
        c1, c2 = carry
        return (c2, c1), ()  # swap the carry
    (x_, y_), _ = jax.lax.scan(body, (x, y), (), length=2)
    return x_, y_


x = jnp.arange(6.)
y = jnp.arange(3.)

try:
    f(x, y)
except Exception as e:
    print(e)

mesh = jax.make_mesh((2,), ('i',))
jax.set_mesh(mesh)


@jax.shard_map(in_specs=(P('i'), P()), out_specs=P('i'))
def f(x, y):
    def body(carry, _):
        c1, c2 = carry
        return (c2, c1), ()  # swap the carry

    y = jax.lax.pcast(y, 'i', to='varying')  # apply pcast to fix the error
    (x_, y_), _ = jax.lax.scan(body, (x, y), (), length=2)
    return x_, y_


x = jax.device_put(jnp.arange(6.), P('i'))
y = jnp.arange(3.)

print(f(x, y))

# --- Collectives tutorial: psum_scatter written with ppermute
# NOTE: the cells that set up this section's mesh were not read (see the top); the page's
# earlier versions use a 1-D mesh of 4 devices named 'i', and x below is not device_put, so the
# mesh's axis is Auto here.
mesh1d = jax.make_mesh((4,), ('i',), (Auto,))
jax.set_mesh(mesh1d)


def psum_scatter(x, axis_name, *, tiled=False):
    size = jax.lax.axis_size(axis_name)
    idx = jax.lax.axis_index(axis_name)  # function instance index along axis_name
    if tiled:
        x = x.reshape(size, -1, *x.shape[1:])  # split leading axis
    shift = partial(jax.lax.ppermute, axis_name=axis_name,
                    perm=[(i, (i - 1) % size) for i in range(size)])
    for i in range(1, size):
        update = shift(x[(idx + i) % size])
        x = x.at[(idx + i + 1) % size].add(update)
    return x[idx]


@jax.shard_map(in_specs=P('i'), out_specs=P('i'))
def f8(x_block):
    print('BEFORE:\n', x_block)
    y_block = psum_scatter(x_block, 'i', tiled=True)
    print('AFTER:\n', y_block)
    return y_block


x = jnp.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 2])
y = f8(x)
print('FINAL RESULT:\n', y)

# --- Neural networks


def predict(params, inputs):
    for W, b in params:
        outputs = jnp.dot(inputs, W) + b
        inputs = jax.nn.relu(outputs)
    return outputs


def loss(params, batch):
    inputs, targets = batch
    predictions = predict(params, inputs)
    return jnp.mean(jnp.sum((predictions - targets) ** 2, axis=-1))


def init_layer(key, n_in, n_out):
    k1, k2 = jax.random.split(key)
    W = jax.random.normal(k1, (n_in, n_out)) / jnp.sqrt(n_in)
    b = jax.random.normal(k2, (n_out,))
    return W, b


def init(key, layer_sizes, batch_size):
    key, *keys = jax.random.split(key, len(layer_sizes))
    params = list(map(init_layer, keys, layer_sizes[:-1], layer_sizes[1:]))

    key, *keys = jax.random.split(key, 3)
    inputs = jax.random.normal(keys[0], (batch_size, layer_sizes[0]))
    targets = jax.random.normal(keys[1], (batch_size, layer_sizes[-1]))

    return params, (inputs, targets)


layer_sizes = [784, 128, 128, 128, 128, 128, 8]
batch_size = 32

params, batch = init(jax.random.key(0), layer_sizes, batch_size)

# 8-way batch data parallelism
if sys.argv[1:] == ["meshjit"]:
    from meshjit.sharding import NamedSharding
else:
    from jax.sharding import NamedSharding

mesh = jax.make_mesh((8,), ('batch',))
jax.set_mesh(mesh)

# replicate initial params on all devices, shard data batch over devices
batch = jax.device_put(batch, NamedSharding(mesh, P('batch')))
params = jax.device_put(params, NamedSharding(mesh, P()))


# adapt the loss function to sum the losses across devices
@jax.shard_map(out_specs=P())
def loss_dp(params, local_batch):
    inputs, targets = local_batch
    predictions = predict(params, inputs)  # use reference 'predict`
    local_loss = jnp.mean(jnp.sum((predictions - targets)**2, axis=-1))
    return jax.lax.pmean(local_loss, 'batch')


print(jax.jit(loss)(params, batch))
print(jax.jit(loss_dp)(params, batch))


def allclose(a, b):
    return tree_all(tree_map(partial(jnp.allclose, atol=1e-2, rtol=1e-2), a, b))


print(allclose(jax.jit(jax.grad(loss))(params, batch),
               jax.jit(jax.grad(loss_dp))(params, batch)))

# 8-way fully sharded data parallelism (FSDP)
# shard data batch *and params* over devices
mesh = jax.make_mesh((4,), ('batch',))
jax.set_mesh(mesh)
batch = jax.device_put(batch, P('batch'))
params = jax.device_put(params, P('batch'))


# adapt the prediction function to gather weights just before their use,
# and to re-gather them on the backward pass (rather than saving them)
@partial(jax.remat, policy=lambda op, *_, **__: str(op) != 'all_gather')
def predict_fsdp(params_frag, inputs):
    for W_frag, b_frag in params_frag:
        W = jax.lax.all_gather(W_frag, 'batch', tiled=True)
        b = jax.lax.all_gather(b_frag, 'batch', tiled=True)
        outputs = jnp.dot(inputs, W) + b
        inputs = jax.nn.relu(outputs)
    return outputs


@jax.shard_map(out_specs=P())
def loss_fsdp(local_params, local_batch):
    inputs, targets = local_batch
    predictions = predict_fsdp(local_params, inputs)
    local_loss = jnp.mean(jnp.sum((predictions - targets) ** 2, axis=-1))
    return jax.lax.pmean(local_loss, 'batch')


repl_params = jax.device_put(params, P())
repl_batch = jax.device_put(batch, P())
print(jax.jit(loss)(repl_params, repl_batch))
print(jax.jit(loss_fsdp)(params, batch))

print(allclose(jax.jit(jax.grad(loss))(repl_params, repl_batch),
               jax.jit(jax.grad(loss_fsdp))(params, batch)))

# 8-way tensor parallelism (TP)
mesh = jax.make_mesh((8,), ('feats',))
jax.set_mesh(mesh)

batch = jax.device_put(batch, NamedSharding(mesh, P(None, 'feats')))
params = jax.device_put(params, NamedSharding(mesh, P('feats')))


def predict_tp(params, inputs):
    for W, b in params:
        outputs = gemm_tp(inputs, W, b)
        inputs = jax.nn.relu(outputs)
    return outputs


@jax.shard_map(in_specs=(P(None, 'feats'), P('feats', None), P('feats')),
               out_specs=P(None, 'feats'))
def gemm_tp(inputs, W, b):
    block_result = jnp.dot(inputs, W)
    return jax.lax.psum_scatter(block_result, 'feats',
                                scatter_dimension=1, tiled=True) + b


def loss_tp(params, batch):
    inputs, targets = batch
    predictions = predict_tp(params, inputs)
    return jnp.mean(jnp.sum((predictions - targets) ** 2, axis=-1))  # NOTE psum!


# FSDP + TP, with shard_map at the top level
mesh = jax.make_mesh((4, 2), ('batch', 'feats'))
jax.set_mesh(mesh)

batch = jax.device_put(batch, NamedSharding(mesh, P('batch', 'feats')))
params = jax.device_put(params, NamedSharding(mesh, P(('feats', 'batch'))))


# mostly same as previous predict_fsdp definition, except we call gemm_tp
@partial(jax.remat, policy=lambda op, *_, **__: str(op) != 'all_gather')
def predict_fsdp_tp(params_frag, inputs):
    for W_frag, b_frag in params_frag:
        W = jax.lax.all_gather(W_frag, 'batch', tiled=True)
        b = jax.lax.all_gather(b_frag, 'batch', tiled=True)
        block_result = jnp.dot(inputs, W)
        outputs = jax.lax.psum_scatter(block_result, 'feats',
                                       scatter_dimension=1, tiled=True) + b
        inputs = jax.nn.relu(outputs)
    return outputs


@jax.shard_map(in_specs=(P(('feats', 'batch')), P('batch', 'feats')),
               out_specs=P())
def loss_fsdp_tp(local_params, local_batch):
    inputs, targets = local_batch
    predictions = predict_fsdp_tp(local_params, inputs)
    sq_err = jax.lax.psum(jnp.sum((predictions - targets) ** 2, axis=-1), 'feats')
    return jax.lax.pmean(jnp.mean(sq_err), 'batch')


repl_params = jax.device_put(params, P())
repl_batch = jax.device_put(batch, P())
print(jax.jit(loss)(repl_params, repl_batch))
print(jax.jit(loss_fsdp_tp)(params, batch))

print(allclose(jax.jit(jax.grad(loss))(repl_params, repl_batch),
               jax.jit(jax.grad(loss_fsdp_tp))(params, batch)))

# SPMD pipeline parallelism (PP)
L = len(params) - 2        # num layers, excluding first and last
N = batch_size             # batch size
F = params[0][0].shape[1]  # num features

# choose some pipeline parameters
S = 2      # number of stages
B = 8      # size of each microbatch
assert L % S == 0, "S (number of stages) must divide L (number of inner layers)"

# compute some useful quantities
M, ragged = divmod(N, B)  # M is number of microbatches
assert not ragged, "B (size of each microbatch) must divide total batch size"
K, ragged = divmod(M, S)  # K is microbatches per stage
assert not ragged, "S (number of stages) must divide number of microbatches"
print(f'{S} stages, {L // S} layer(s) per stage, {L} pipelined layers total')
print(f'{B} examples per microbatch, {M} microbatches total')

mesh = Mesh(jax.devices()[:S], ('stages',))


def predict_pp(params, inputs):
    (W_first, b_first), inner_params, (W_last, b_last) = params
    inputs = jax.nn.relu(jnp.dot(inputs, W_first) + b_first)
    inputs = spmd_pipeline(lambda Wb, x: jax.nn.relu(x @ Wb[0] + Wb[1]),
                           inner_params, inputs)
    outputs = jnp.dot(inputs, W_last) + b_last
    return outputs


@jax.shard_map(in_specs=((P(), P('stages'), P()), P('stages')), out_specs=P())
def loss_pp(params, batch):
    inputs, targets = batch
    predictions = predict_pp(params, inputs.reshape(K, B, -1)).reshape(K * B, -1)
    local_loss = jnp.mean(jnp.sum((predictions - targets)**2, axis=-1))
    return jax.lax.pmean(local_loss, 'stages')


def spmd_pipeline(fn, stage_params, inputs):
    stage = jax.lax.axis_index('stages')
    outputs = jnp.zeros_like(inputs) * jnp.nan
    state = jnp.zeros((L // S, B, F)) * jnp.nan
    for i in range(M + L - 1):
        state = state.at[0].set(jnp.where(stage == 0, inputs[i % K], state[0]))
        state = jax.vmap(fn)(stage_params, state)
        outputs = outputs.at[(i - L + 1) % K].set(jnp.where(stage == S - 1, state[-1], outputs[(i - L + 1) % K]))
        state, inputs, outputs = shift(i, state, inputs, outputs)
    outputs = jax.lax.ppermute(outputs, 'stages', [(i, (i + 1) % S) for i in range(S)])
    return outputs


def shift(i, state, inputs, outputs):
    sh = lambda x, d: jax.lax.ppermute(x, 'stages', [(i, (i + d) % S) for i in range(S)])  # noqa: E731
    state = jnp.roll(state, +1, axis=0).at[0].set(sh(state[-1], +1))
    if (i % K) == (-1 % K):
        inputs = sh(inputs, +1)
    if ((i - L + 1) % K) == (-1 % K):
        outputs = sh(outputs, +1)
    return state, inputs, outputs


first_params, *inner_params, last_params = params
Ws, bs = zip(*inner_params)
params_stacked = jnp.stack(Ws), jnp.stack(bs)
first_params = jax.device_put(first_params, NamedSharding(mesh, P()))
params_stacked = jax.device_put(params_stacked, NamedSharding(mesh, P('stages')))
last_params = jax.device_put(last_params, NamedSharding(mesh, P()))
params_ = first_params, params_stacked, last_params

batch_ = jax.device_put(batch, NamedSharding(mesh, P('stages')))

jax.set_mesh(mesh)
print(jax.jit(loss_pp)(params_, batch_))

_ = jax.jit(jax.grad(loss_pp))(params_, batch_)   # don't crash
