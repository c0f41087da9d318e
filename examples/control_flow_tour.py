"""A tour of control flow on sharded programs: the programs docs/control-flow.md shows, with
their printed output.

Run with ``python examples/control_flow_tour.py`` (8 simulated CPU devices).
"""

import numpy as np

import meshjit as jax
import meshjit.numpy as jnp
from meshjit import lax
from meshjit.sharding import Mesh, NamedSharding
from meshjit.sharding import PartitionSpec as P

mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("data", "model"))
rng = np.random.default_rng(0)


def section(title):
    print(f"\n#### {title}")


def random(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


section("a sharded RNN: one loop, its all_gather inside")


def rnn(w, h, xs):
    def step(h, x):
        h = jnp.tanh(h @ w + x)
        return h, h

    return lax.scan(step, h, xs)


B, D, T = 8, 16, 16
w, h, xs = random(D, D, scale=0.25), random(B, D), random(T, B, D)
shardings = (NamedSharding(mesh, P(None, "model")), NamedSharding(mesh, P("data")),
             NamedSharding(mesh, P(None, "data")))
rnn_jit = jax.jit(rnn, in_shardings=shardings)
compiled = rnn_jit.lower(w, h, xs).compile()
print(compiled.as_text())
for record in compiled.collectives():
    print(record)
last, ys = rnn_jit(w, h, xs)
print(last.sharding.spec, ys.sharding.spec)


section("its gradient: a forward loop, then a reverse loop over the saved residuals")


def loss(w, h, xs):
    last, ys = rnn(w, h, xs)
    return jnp.mean(last ** 2) + jnp.mean(ys)


grad_compiled = jax.jit(jax.grad(loss), in_shardings=shardings).lower(w, h, xs).compile()
print(grad_compiled.as_text())
for record in grad_compiled.collectives():
    print(record)


section("a scanned stack of Megatron MLP layers")

LAYERS, F = 4, 32


def layer(h, w1, w2):
    return jnp.tanh(jnp.maximum(h @ w1, 0.0) @ w2) + h


def stack(x, w1s, w2s):
    return lax.scan(lambda h, weights: (layer(h, *weights), None), x, (w1s, w2s))[0]


def unrolled(x, w1s, w2s):
    for index in range(LAYERS):
        x = layer(x, w1s[index], w2s[index])
    return x


x, w1s, w2s = random(B, D), random(LAYERS, D, F, scale=0.25), random(LAYERS, F, D, scale=0.25)
stack_shardings = (NamedSharding(mesh, P("data")), NamedSharding(mesh, P(None, None, "model")),
                   NamedSharding(mesh, P(None, "model", None)))
stacked = jax.jit(stack, in_shardings=stack_shardings).lower(x, w1s, w2s).compile()
print(stacked.as_text())
print("scanned:")
for record in stacked.collectives():
    print(" ", record)
print("unrolled:")
for record in jax.jit(unrolled, in_shardings=stack_shardings).lower(x, w1s, w2s).compile().collectives():
    print(" ", record)


section("rematerialisation: a checkpointed scan body saves only its carry")


def remat_loss(policy):
    def loss(w, h, xs):
        cell = jax.checkpoint(lambda h, x: jnp.sin(jnp.tanh(h @ w + x)), policy=policy)
        return jnp.sum(lax.scan(lambda h, x: (cell(h, x), None), h, xs)[0] ** 2)
    return loss


for name in ("nothing_saveable", "dots_saveable", "everything_saveable"):
    policy = getattr(jax.checkpoint_policies, name)
    text = jax.jit(jax.grad(remat_loss(policy), argnums=1)).lower(w, h, xs).as_text()
    forward = next(line for line in text.splitlines() if "scan(" in line)
    print(f"{name:20s} forward loop results: {forward.split('=')[0].strip()}")


section("while_loop, cond and switch on sharded values")

targets = jax.device_put(np.linspace(1.0, 9.0, 16).astype(np.float32), NamedSharding(mesh, P(("data", "model"))))


@jax.jit
def newton_sqrt(a):
    def body(state):
        step, x = state
        return step + 1, 0.5 * (x + a / x)

    return lax.while_loop(lambda state: jnp.max(jnp.abs(state[1] ** 2 - a)) > 1e-5, body, (0, a))


steps, roots = newton_sqrt(targets)
print(int(steps), np.asarray(roots)[:4], roots.sharding.spec)
branch = jax.jit(lambda i, v: lax.switch(i, [jnp.sin, jnp.cos, lambda u: u * 2.0], v))
print(np.asarray(branch(7, targets))[:4])
