"""Train a small decoder-only transformer on a ('data', 'model') mesh of 2x4 devices.

The model: a token embedding sharded on the vocabulary, layers stacked on a leading dim and run
with ``lax.scan``, multi-head causal attention with the heads on 'model', a Megatron MLP (first
matrix split on its columns, second on its rows), pre-layer-norm residual blocks with dropout
from ``jax.random``, the embedding reused as the output projection, and cross-entropy; trained
with AdamW written with ``jax.tree`` on a copy task (the second half of each sequence repeats
the first), the batch on 'data'. docs/tutorial-training.md walks through it. With ``--dtype
bfloat16`` (or float16) the parameters and the optimizer stay float32 while the activations and
matmuls run in the narrow type, and the log-softmax and loss in float32.

    python examples/train_transformer.py                       # 8 simulated devices, one process
    python examples/train_transformer.py --dtype bfloat16      # mixed precision
    MESHJIT_NUM_DEVICES=4 mpiexec -n 2 python examples/train_transformer.py
    TRAIN_TRANSFORMER_BACKEND=jax python examples/train_transformer.py    # the same source on JAX

Every function below is plain JAX; only the imports choose the library.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

ON_JAX = os.environ.get("TRAIN_TRANSFORMER_BACKEND", "meshjit") == "jax"
if ON_JAX:
    import jax
    import jax.numpy as jnp
    from jax import lax, nn
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P
else:
    import meshjit as jax
    import meshjit.numpy as jnp
    from meshjit import lax, nn
    from meshjit.sharding import Mesh, NamedSharding
    from meshjit.sharding import PartitionSpec as P


@dataclass(frozen=True)
class Config:
    vocab: int = 512
    d_model: int = 64
    heads: int = 4
    layers: int = 2
    half: int = 8                  # each sequence: a start token, `half` tokens, then them again
    batch: int = 16
    mlp_ratio: int = 4
    dropout: float = 0.1
    learning_rate: float = 1e-2
    beta1: float = 0.9
    beta2: float = 0.98
    epsilon: float = 1e-8
    weight_decay: float = 0.01
    seed: int = 0
    dtype: str = "float32"         # of the activations and matmuls; parameters stay float32
    mesh_shape: tuple[int, int] = field(default=(2, 4))

    @property
    def seq(self) -> int:           # the model's input length; targets are the inputs shifted by one
        return 2 * self.half

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads

    @property
    def mlp(self) -> int:
        return self.mlp_ratio * self.d_model


# ---------------------------------------------------------------------------------------------
# Layout: where every parameter lives on the mesh


def param_specs() -> dict:
    """PartitionSpecs of the parameters: the vocabulary, the heads and the MLP's hidden units on
    'model'; layer norms and the positions replicated. Layer weights have a leading layer dim."""
    layer = {
        "ln1_scale": P(), "ln1_bias": P(),
        "wq": P(None, None, "model", None), "wk": P(None, None, "model", None),
        "wv": P(None, None, "model", None), "wo": P(None, "model", None, None),
        "ln2_scale": P(), "ln2_bias": P(),
        "w1": P(None, None, "model"), "b1": P(None, "model"),
        "w2": P(None, "model", None), "b2": P(),
    }
    return {"embed": P("model", None), "position": P(), "layers": layer,
            "final_scale": P(), "final_bias": P()}


def make_mesh(config: Config) -> Mesh:
    devices = np.array(jax.devices()[: math.prod(config.mesh_shape)]).reshape(config.mesh_shape)
    return Mesh(devices, ("data", "model"))


def shardings(mesh: Mesh, specs):
    return jax.tree.map(lambda spec: NamedSharding(mesh, spec), specs, is_leaf=lambda node: isinstance(node, P))


# ---------------------------------------------------------------------------------------------
# The model


def init_params(config: Config) -> dict:
    """Normal(0, 0.02) matrices (the residual outputs scaled by 1/sqrt(2 layers)), unit layer
    norm scales, zero biases."""
    keys = jax.random.split(jax.random.key(config.seed), 8)
    d, h, k, f, layers = config.d_model, config.heads, config.head_dim, config.mlp, config.layers

    def normal(key, shape, scale=0.02):
        return scale * jax.random.normal(key, shape, jnp.float32)

    out_scale = 0.02 / math.sqrt(2 * layers)
    layer = {
        "ln1_scale": jnp.ones((layers, d)), "ln1_bias": jnp.zeros((layers, d)),
        "wq": normal(keys[2], (layers, d, h, k)), "wk": normal(keys[3], (layers, d, h, k)),
        "wv": normal(keys[4], (layers, d, h, k)), "wo": normal(keys[5], (layers, h, k, d), out_scale),
        "ln2_scale": jnp.ones((layers, d)), "ln2_bias": jnp.zeros((layers, d)),
        "w1": normal(keys[6], (layers, d, f)), "b1": jnp.zeros((layers, f)),
        "w2": normal(keys[7], (layers, f, d), out_scale), "b2": jnp.zeros((layers, d)),
    }
    return {"embed": normal(keys[0], (config.vocab, d)), "position": normal(keys[1], (config.seq, d)),
            "layers": layer, "final_scale": jnp.ones((d,)), "final_bias": jnp.zeros((d,))}


def layer_norm(x, scale, bias):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    variance = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * lax.rsqrt(variance + 1e-5) * scale + bias


def dropout(x, key, rate: float):
    if rate == 0.0:
        return x
    keep = jax.random.bernoulli(key, 1.0 - rate, x.shape)
    return jnp.where(keep, x / (1.0 - rate), 0.0)


def attention(x, layer):
    """Causal multi-head attention; each 'model' device computes its own heads, and the output
    projection sums the heads' contributions (one all_reduce over 'model')."""
    q = jnp.einsum("bsd,dhk->bshk", x, layer["wq"])
    k = jnp.einsum("bsd,dhk->bshk", x, layer["wk"])
    v = jnp.einsum("bsd,dhk->bshk", x, layer["wv"])
    scores = jnp.einsum("bshk,bthk->bhst", q, k) / math.sqrt(q.shape[-1])
    causal = jnp.tril(jnp.ones((x.shape[1], x.shape[1]), dtype=bool))
    probs = nn.softmax(jnp.where(causal, scores, -1e9), axis=-1)
    out = jnp.einsum("bhst,bthk->bshk", probs, v)
    return jnp.einsum("bshk,hkd->bsd", out, layer["wo"])


def mlp(x, layer):
    """Megatron's MLP: w1's columns and w2's rows on 'model', one all_reduce at the end."""
    hidden = nn.gelu(jnp.einsum("bsd,df->bsf", x, layer["w1"]) + layer["b1"])
    return jnp.einsum("bsf,fd->bsd", hidden, layer["w2"]) + layer["b2"]


def block(h, layer, key, rate: float):
    attention_key, mlp_key = jax.random.split(key)
    h = h + dropout(attention(layer_norm(h, layer["ln1_scale"], layer["ln1_bias"]), layer), attention_key, rate)
    return h + dropout(mlp(layer_norm(h, layer["ln2_scale"], layer["ln2_bias"]), layer), mlp_key, rate)


def loss_fn(params, inputs, targets, key, rate: float, dtype: str = "float32"):
    """Mean cross-entropy of the copied half of each sequence, the model run in ``dtype`` on
    float32 parameters (cast on use; their gradients come back float32)."""
    params = jax.tree.map(lambda param: param.astype(dtype), params)
    h = jnp.take(params["embed"], inputs, axis=0) + params["position"]
    layer_keys = jax.random.split(key, params["layers"]["wq"].shape[0])

    def step(h, layer_and_key):
        layer, layer_key = layer_and_key
        return block(h, layer, layer_key, rate), None

    h, _ = lax.scan(step, h, (params["layers"], layer_keys))
    h = layer_norm(h, params["final_scale"], params["final_bias"])
    logits = jnp.einsum("bsd,vd->bsv", h, params["embed"])
    log_probs = nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    nll = -jnp.sum(log_probs * nn.one_hot(targets, logits.shape[-1], dtype=log_probs.dtype), axis=-1)
    copied = (jnp.arange(targets.shape[1]) >= targets.shape[1] // 2).astype(log_probs.dtype)
    return jnp.sum(nll * copied) / (targets.shape[0] * jnp.sum(copied))


# ---------------------------------------------------------------------------------------------
# AdamW

DECAYED = {"embed", "position", "wq", "wk", "wv", "wo", "w1", "w2"}   # not layer norms or biases


def init_optimizer(params) -> dict:
    return {"step": jnp.zeros((), jnp.int32), "m": jax.tree.map(jnp.zeros_like, params),
            "v": jax.tree.map(jnp.zeros_like, params)}


def adamw(params, grads, state, config: Config):
    """Bias-corrected moments; decoupled weight decay on the matrices."""
    step = state["step"] + 1
    m = jax.tree.map(lambda m, g: config.beta1 * m + (1 - config.beta1) * g, state["m"], grads)
    v = jax.tree.map(lambda v, g: config.beta2 * v + (1 - config.beta2) * g * g, state["v"], grads)
    count = step.astype(jnp.float32)
    m_scale = 1.0 / (1.0 - config.beta1 ** count)
    v_scale = 1.0 / (1.0 - config.beta2 ** count)

    def update(path, p, m, v):
        decay = config.weight_decay if path[-1].key in DECAYED else 0.0
        return p - config.learning_rate * (m * m_scale / (jnp.sqrt(v * v_scale) + config.epsilon) + decay * p)

    return jax.tree.map_with_path(update, params, m, v), {"step": step, "m": m, "v": v}


def train_step(params, opt_state, tokens, config: Config):
    """One step: the loss and its gradient on a batch, then AdamW. Dropout's key is the step's."""
    key = jax.random.fold_in(jax.random.key(config.seed + 1), opt_state["step"])
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    loss, grads = jax.value_and_grad(loss_fn)(params, inputs, targets, key, config.dropout, config.dtype)
    params, opt_state = adamw(params, grads, opt_state, config)
    return params, opt_state, loss


# ---------------------------------------------------------------------------------------------
# Data and the jitted functions


def copy_batch(config: Config, step: int) -> np.ndarray:
    """int32[batch, 2 * half + 1]: token 0, then `half` random tokens, then the same again."""
    rng = np.random.default_rng([config.seed, step])
    first = rng.integers(1, config.vocab, size=(config.batch, config.half), dtype=np.int32)
    start = np.zeros((config.batch, 1), np.int32)
    return np.concatenate([start, first, first], axis=1)


class Trainer:
    """The mesh, the jitted init and step with their shardings."""

    def __init__(self, config: Config):
        self.config = config
        self.mesh = make_mesh(config)
        self.param_shardings = shardings(self.mesh, param_specs())
        replicated = NamedSharding(self.mesh, P())
        self.opt_shardings = {"step": replicated, "m": self.param_shardings, "v": self.param_shardings}
        self.batch_sharding = NamedSharding(self.mesh, P("data", None))
        self.init = jax.jit(lambda: init_params(config), out_shardings=self.param_shardings)
        self.make_optimizer = jax.jit(init_optimizer, out_shardings=self.opt_shardings)
        self.step = jax.jit(lambda params, opt_state, tokens: train_step(params, opt_state, tokens, config),
                            in_shardings=(self.param_shardings, self.opt_shardings, self.batch_sharding),
                            out_shardings=(self.param_shardings, self.opt_shardings, replicated),
                            donate_argnums=(0, 1))

    def initial_state(self):
        params = self.init()
        return params, self.make_optimizer(params)

    def batch(self, step: int):
        """The step's batch, each process placing the rows its devices hold."""
        tokens = copy_batch(self.config, step)
        return jax.make_array_from_callback(tokens.shape, self.batch_sharding, lambda index: tokens[index])


def losses(config: Config, steps: int) -> list[float]:
    """The loss of each of ``steps`` training steps from the initial parameters."""
    trainer = Trainer(config)
    params, opt_state = trainer.initial_state()
    history = []
    for step in range(steps):
        params, opt_state, loss = trainer.step(params, opt_state, trainer.batch(step))
        history.append(float(loss))
    return history


# ---------------------------------------------------------------------------------------------
# The textbook plan: what the step must communicate, derived by hand (docs/tutorial-training.md)


def textbook_collectives(config: Config) -> list[tuple[str, tuple[str, ...], tuple[int, ...], int]]:
    """(kind, mesh axes, per-device operand shape, runs per step) of every collective of one
    training step on this layout, as Megatron-LM does it with data parallelism:

    forward   the embedding's masked local lookup, summed over 'model'; per layer the attention
              output projection's and the MLP's second matmul's partial sums over 'model'; the
              log-softmax's max and sum of exponentials over the vocabulary on 'model'
    backward  the sum over the vocabulary of the log-softmax's cotangent, and the output
              projection's input gradient over 'model'; per layer the gradients entering the
              attention and the MLP (their first matmuls' inputs) over 'model'
    gradients every parameter's gradient summed over 'data' (a layer's once per layer)
    loss      the scalar loss, summed over both axes at once: the target logits' partial sums
              over 'model' ride along to it instead of being reduced as a [batch, seq] array
    """
    data, model = config.mesh_shape
    b, s, d = config.batch // data, config.seq, config.d_model
    layers, local_heads, local_mlp = config.layers, config.heads // model, config.mlp // model
    activations = ("all_reduce", ("model",), (b, s, d))
    plan = [activations + (1,), activations + (1,)]                  # embedding lookup; output projection's input gradient
    plan += [activations + (layers,)] * 4                            # attention and MLP, forward and backward
    plan += [("all_reduce", ("model",), (b, s), 1)] * 3             # max, sum of exponentials, cotangent's sum
    gradients = [(config.vocab // model, d), (s, d), (d,), (d,)]     # embed, position, final layer norm
    layer_gradients = [(d,)] * 5 + [(local_mlp,), (d, local_mlp), (local_mlp, d)]   # norms, b2; b1, w1, w2
    layer_gradients += [(d, local_heads, config.head_dim)] * 3 + [(local_heads, config.head_dim, d)]
    plan += [("all_reduce", ("data",), shape, 1) for shape in gradients]
    plan += [("all_reduce", ("data",), shape, layers) for shape in layer_gradients]
    return plan + [("all_reduce", ("model", "data"), (), 1)]


def ring_bytes(axes, shape, mesh_sizes: dict) -> int:
    """Bytes each device sends for a float32 all_reduce on a ring of the axes' devices."""
    group = math.prod(mesh_sizes[axis] for axis in axes)
    return round(2 * (group - 1) / group * 4 * math.prod(shape))


def collective_table(trainer: Trainer, params, opt_state, tokens) -> str:
    """meshjit's collectives of the step beside the textbook plan's, per (kind, axes, bytes)."""
    compiled = trainer.step.lower(params, opt_state, tokens).compile()
    sizes = dict(zip(("data", "model"), trainer.config.mesh_shape))
    found, expected, shapes = Counter(), Counter(), {}
    for kind, axes, shape, runs in textbook_collectives(trainer.config):
        key = (kind, axes, ring_bytes(axes, shape, sizes))
        expected[key] += runs
        shapes.setdefault(key, shape)
    for record in compiled.collectives():
        key = (record.kind, record.axes, record.bytes)
        found[key] += record.trips
        shapes.setdefault(key, tuple(record.shape))
    lines = [f"{'collective (per-device operand)':48s} {'bytes/device':>12s} {'textbook runs':>13s} {'meshjit runs':>12s}"]
    for key in sorted(shapes, key=lambda key: (key[1], -key[2])):
        kind, axes, sent = key
        mark = "" if expected[key] == found[key] else "   <- differs"
        lines.append(f"{kind + ' over ' + ','.join(axes):28s} f32{list(shapes[key])!s:17s} {sent:12d} "
                     f"{expected[key]:13d} {found[key]:12d}{mark}")
    totals = [sum(key[2] * runs for key, runs in plan.items()) for plan in (expected, found)]
    lines.append(f"{'bytes per device per step':48s} {'':12s} {totals[0]:13d} {totals[1]:12d}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# The command line


def parse_config(argv) -> tuple[Config, argparse.Namespace]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--losses", help="write the losses to this file, one per line")
    parser.add_argument("--quiet", action="store_true", help="no progress bar and no collective table")
    for name, value in vars(Config()).items():
        if not isinstance(value, tuple):
            parser.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value)
    options = parser.parse_args(argv)
    config = Config(**{name: getattr(options, name) for name in vars(Config()) if hasattr(options, name)})
    return config, options


class ProgressBar:
    """rich's progress bar with the loss and the steps per second after the first (compiling)
    step; a line every 50 steps where rich is not installed (a bare JAX environment)."""

    def __init__(self, steps: int):
        self.steps, self.start, self.bar = steps, None, None
        try:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
        except ImportError:
            return
        self.bar = Progress(TextColumn("training"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("loss {task.fields[loss]:.4f}"), TextColumn("{task.fields[rate]:.1f} steps/s"),
                            TimeElapsedColumn())
        self.task = self.bar.add_task("train", total=steps, loss=float("nan"), rate=0.0)
        self.bar.start()

    def update(self, step: int, loss: float) -> None:
        if self.start is None:
            self.start = time.perf_counter()
        rate = step / (time.perf_counter() - self.start) if step else 0.0
        if self.bar is not None:
            self.bar.update(self.task, advance=1, loss=loss, rate=rate)
        elif step % 50 == 0 or step == self.steps - 1:
            print(f"step {step:4d}  loss {loss:.4f}  {rate:.1f} steps/s", flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def train(trainer: Trainer, steps: int, show_progress: bool) -> list[float]:
    params, opt_state = trainer.initial_state()
    progress = ProgressBar(steps) if show_progress else None
    history = []
    for step in range(steps):
        params, opt_state, loss = trainer.step(params, opt_state, trainer.batch(step))
        history.append(float(loss))
        if progress is not None:
            progress.update(step, history[-1])
    if progress is not None:
        progress.close()
    return history


def main(argv=None) -> None:
    config, options = parse_config(argv)
    if not ON_JAX and int(os.environ.get("PMI_SIZE", "1")) > 1:
        jax.distributed.initialize()      # started by mpiexec: join the other processes
    trainer = Trainer(config)
    leader = jax.process_index() == 0
    if leader and not options.quiet:
        print(f"{config}\nmesh {dict(trainer.mesh.shape)} over {jax.process_count()} process(es)")
        if not ON_JAX and config.dtype == "float32":   # JAX's compiled programs do not list theirs
            print(collective_table(trainer, *trainer.initial_state(), trainer.batch(0)))
    history = train(trainer, options.steps, show_progress=leader and not options.quiet)
    if leader:
        print(f"loss: first {history[0]:.4f}, last {history[-1]:.4f} "
              f"(a model that does not copy does no better than log({config.vocab - 1}) = {math.log(config.vocab - 1):.4f})")
    if leader and options.losses:
        with open(options.losses, "w") as file:
            file.write("\n".join(f"{loss!r}" for loss in history) + "\n")


if __name__ == "__main__":
    main()
