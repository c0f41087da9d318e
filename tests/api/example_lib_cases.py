"""The jax.example_libraries cases compared with JAX 0.10.2: ``cases(jax)`` maps a name to a
thunk returning a list of arrays, run once under JAX by ``generate_example_lib_values.py``
(``data/jax_example_lib_values.npz``) and under meshjit by ``test_example_libraries.py``."""

import importlib

import numpy as np

RNG = np.random.default_rng(7)
W0 = RNG.standard_normal((3, 4)).astype(np.float32)
B0 = RNG.standard_normal(4).astype(np.float32)
TARGET = RNG.standard_normal((3, 4)).astype(np.float32)
IMG = RNG.standard_normal((2, 6, 6, 3)).astype(np.float32)
SEQ = RNG.standard_normal((2, 5, 3)).astype(np.float32)
XS = RNG.standard_normal((16, 10)).astype(np.float32)
YS = np.eye(4, dtype=np.float32)[RNG.integers(0, 4, 16)]


def _lib(jax, name):
    """``jax.example_libraries.<name>`` of the ``jax`` module given (JAX's or meshjit)."""
    return importlib.import_module(f"{jax.__name__}.example_libraries.{name}")


def _quadratic_loss(jnp, params):
    w, b = params["w"], params["b"]
    return jnp.sum((w * 1.5 + b - TARGET) ** 2) + jnp.sum(b * b * b)


def _run_optimizer(jax, make, steps=6, jit=True):
    """Parameters and state leaves after ``steps`` updates on a small quadratic (jitted unless
    the state holds Python shapes, as sm3's does)."""
    opt_init, opt_update, get_params = make
    grad = jax.grad(lambda p: _quadratic_loss(jax.numpy, p))

    def step(i, state):
        return opt_update(i, grad(get_params(state)), state)
    step = jax.jit(step) if jit else step
    state = opt_init({"w": W0, "b": B0})
    for i in range(steps):
        state = step(i, state)
    return jax.tree_util.tree_leaves(state)


def optimizer_cases(jax):
    opt = _lib(jax, "optimizers")
    sched = opt.exponential_decay(0.1, 3, 0.5)
    makers = {
        "sgd": opt.sgd(0.05), "sgd_sched": opt.sgd(sched), "momentum": opt.momentum(0.05, 0.9),
        "nesterov": opt.nesterov(0.05, 0.8), "adagrad": opt.adagrad(0.3),
        "rmsprop": opt.rmsprop(0.01), "rmsprop_momentum": opt.rmsprop_momentum(0.01),
        "adam": opt.adam(0.01), "adam_sched": opt.adam(opt.inverse_time_decay(0.02, 2, 0.5, True)),
        "adamax": opt.adamax(0.02),
    }
    out = {f"opt.{k}": (lambda m=m: _run_optimizer(jax, m)) for k, m in makers.items()}
    out["opt.sm3"] = lambda: _run_optimizer(jax, opt.sm3(0.1), jit=False)
    return out


def schedule_cases(jax):
    opt = _lib(jax, "optimizers")
    jnp = jax.numpy
    steps = jnp.arange(12)
    scheds = {
        "exponential_decay": opt.exponential_decay(0.1, 4, 0.3),
        "inverse_time_decay": opt.inverse_time_decay(0.1, 4, 0.3),
        "inverse_time_staircase": opt.inverse_time_decay(0.1, 4, 0.3, staircase=True),
        "polynomial_decay": opt.polynomial_decay(1.0, 8, 0.01, power=2.0),
        "piecewise_constant": opt.piecewise_constant([3, 7], [1.0, 0.5, 0.1]),
    }
    out = {f"sched.{k}": (lambda s=s: [jax.vmap(s)(steps), jax.jit(s)(5)])
           for k, s in scheds.items()}
    grads = {"w": W0, "b": B0}
    out["l2_norm"] = lambda: [opt.l2_norm(grads)]
    out["clip_grads"] = lambda: jax.tree_util.tree_leaves(opt.clip_grads(grads, 1.0))
    out["clip_grads_noop"] = lambda: jax.tree_util.tree_leaves(opt.clip_grads(grads, 100.0))
    return out


def _layer(jax, layer, x, key=0, **kwargs):
    init, apply = layer
    shape, params = init(jax.random.PRNGKey(key), x.shape)
    y = apply(params, x, **kwargs)
    return [np.array(shape), y] + jax.tree_util.tree_leaves(params)


def stax_cases(jax):
    S = _lib(jax, "stax")
    key = jax.random.PRNGKey(3)
    layers = {
        "Dense": (S.Dense(5), XS), "Conv": (S.Conv(4, (3, 3), (2, 1), "SAME"), IMG),
        "ConvValid": (S.Conv(2, (2, 2)), IMG),
        "ConvTranspose": (S.ConvTranspose(2, (3, 3), (2, 2), "SAME"), IMG),
        "ConvTransposeValid": (S.ConvTranspose(2, (3, 2), (2, 1)), IMG),
        "Conv1DTranspose": (S.Conv1DTranspose(4, (2,), (3,)), SEQ),
        "GeneralConv": (S.GeneralConv(("NCHW", "OIHW", "NHWC"), 3, (2, 3), (1, 2), "SAME"), IMG),
        "BatchNorm": (S.BatchNorm(), IMG), "BatchNorm1": (S.BatchNorm(axis=0, center=False), XS),
        "MaxPool": (S.MaxPool((2, 2), (2, 2)), IMG), "SumPool": (S.SumPool((3, 3), padding="SAME"), IMG),
        "AvgPool": (S.AvgPool((3, 2), (2, 1), "SAME"), IMG),
        "AvgPoolSpec": (S.AvgPool((2,), spec="NCH"), SEQ),
        "Flatten": (S.Flatten, IMG), "Identity": (S.Identity, XS),
        "FanOutConcat": (S.serial(S.FanOut(3), S.parallel(S.Dense(2), S.Tanh, S.Identity), S.FanInConcat()), XS),
        "FanOutSum": (S.serial(S.FanOut(2), S.parallel(S.Dense(10), S.Relu), S.FanInSum), XS),
        "shape_dependent": (S.shape_dependent(lambda s: S.Dense(s[-1] * 2)), XS),
    }
    for name in ["Tanh", "Relu", "Exp", "LogSoftmax", "Softmax", "Softplus", "Sigmoid", "Elu",
                 "LeakyRelu", "Selu", "Gelu"]:
        layers[name] = (getattr(S, name), XS)
    out = {f"stax.{k}": (lambda lay=lay, x=x: _layer(jax, lay, x)) for k, (lay, x) in layers.items()}
    out["stax.Dropout"] = lambda: _layer(jax, S.Dropout(0.7), XS, rng=key)
    out["stax.Dropout_test"] = lambda: _layer(jax, S.Dropout(0.7, mode="test"), XS, rng=key)
    out["stax.serial_rng"] = lambda: _layer(
        jax, S.serial(S.Dense(8), S.Dropout(0.5), S.Relu, S.Dense(3), S.LogSoftmax), XS, rng=key)
    return out


def train_mlp(jax, steps=8):
    """Losses of a stax MLP trained with adam on a fixed batch: the end-to-end case."""
    optimizers, stax = _lib(jax, "optimizers"), _lib(jax, "stax")
    jnp = jax.numpy
    init, apply = stax.serial(stax.Dense(32), stax.Relu, stax.Dense(16), stax.Tanh,
                              stax.Dense(4), stax.LogSoftmax)
    _, params = init(jax.random.PRNGKey(0), (-1, 10))
    opt_init, opt_update, get_params = optimizers.adam(1e-2)

    def loss(p, x, y):
        return -jnp.mean(jnp.sum(apply(p, x) * y, axis=1))

    @jax.jit
    def update(i, state, x, y):
        value, grads = jax.value_and_grad(loss)(get_params(state), x, y)
        return value, opt_update(i, grads, state)
    state, losses = opt_init(params), []
    for i in range(steps):
        value, state = update(i, state, XS, YS)
        losses.append(value)
    return [jnp.stack(losses)] + jax.tree_util.tree_leaves(get_params(state))


def cases(jax):
    """name -> thunk returning a list of arrays, using the ``jax`` module given."""
    table = {**optimizer_cases(jax), **schedule_cases(jax), **stax_cases(jax)}
    table["train_mlp"] = lambda: train_mlp(jax)
    return table
