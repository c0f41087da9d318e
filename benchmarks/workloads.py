"""The benchmark workloads: each a meshjit program, the same computation in numpy on one device,
and the JAX source of it for the JAX column. Sizes follow issue 7; the training step is
examples/train_transformer.py's (issue 23), which has no numpy column."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass
class Workload:
    name: str
    shapes: dict[str, tuple[int, ...]]
    mesh_shape: tuple[int, ...]
    mesh_axes: tuple[str, ...]
    in_specs: tuple              # per input: a tuple of PartitionSpec entries
    meshjit_source: str          # body of `def f(...)` using jnp / nn, returning the result
    numpy_function: Callable | None   # None: no numpy column (and no check against it)
    flops: float = 0.0           # for GFLOP/s; else bytes moved gives GB/s
    bytes_moved: float = 0.0
    program: Callable[[str], str] | None = None   # library name -> a whole script defining build()

    def inputs(self, seed: int = 0) -> list[np.ndarray]:
        rng = np.random.default_rng(seed)
        return [rng.standard_normal(shape).astype(np.float32) for shape in self.shapes.values()]


def _gelu(x):
    return 0.5 * x * (1 + np.tanh(np.float32(np.sqrt(2 / np.pi)) * (x + np.float32(0.044715) * (x * x * x))))


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _layer_norm(x, gamma, beta):
    mean = x.mean(-1, keepdims=True)
    centred = x - mean
    variance = (centred * centred).mean(-1, keepdims=True)
    return centred / np.sqrt(variance + np.float32(1e-5)) * gamma + beta


def _cross_entropy(logits, labels):
    shifted = logits - logits.max(-1, keepdims=True)
    log_softmax = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    return -(labels * log_softmax).sum(-1).mean()


def _attention(x, wq, wk, wv, wo):
    q, k, v = (np.einsum("td,dhk->thk", x, w) for w in (wq, wk, wv))
    scores = np.einsum("thk,shk->hts", q, k) / np.float32(np.sqrt(q.shape[-1]))
    return np.einsum("thk,hkd->td", np.einsum("hts,shk->thk", _softmax(scores), v), wo)


N = 4096
M = 2048
B, D, F = 512, 1024, 4096
T, H, DH, DM = 512, 16, 64, 1024

EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples",
                       "train_transformer.py")


def _training_program(module: str) -> str:
    """examples/train_transformer.py's default model, one jitted AdamW step per call on the same
    batch, in ``module`` ("meshjit" or "jax": the same source, its backend chosen at import)."""
    return f'''
import importlib.util
import os
import sys

os.environ["TRAIN_TRANSFORMER_BACKEND"] = "{module}"
spec = importlib.util.spec_from_file_location("train_transformer_{module}", {EXAMPLE!r})
example = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = example
spec.loader.exec_module(example)


def build(arrays):
    trainer = example.Trainer(example.Config())
    state = list(trainer.initial_state())
    tokens = trainer.batch(0)

    def step():
        state[0], state[1], loss = trainer.step(state[0], state[1], tokens)
        return loss

    return step, []
'''


def _training_flops() -> float:
    """Multiply-adds of a forward and backward pass (3x the forward's matmuls) of the default
    model: per token q, k, v, o (4 D^2), the MLP (2 D F), the logits (V D) and causal attention
    (2 S D, half of the scores masked but computed)."""
    vocab, width, layers, seq, batch = 512, 64, 2, 16, 16
    per_token = layers * (4 * width * width + 2 * width * 4 * width + 2 * seq * width) + vocab * width
    return 3 * 2 * per_token * seq * batch


WORKLOADS = [
    Workload("elementwise tanh(a*b+c)*2", {"a": (N, N), "b": (N, N), "c": (N, N)}, (2, 4), ("x", "y"),
             (("x", "y"),) * 3, "return jnp.tanh(a * b + c) * 2",
             lambda a, b, c: np.tanh(a * b + c) * np.float32(2), bytes_moved=4 * N * N * 4),
    Workload("matmul rows sharded", {"a": (M, M), "b": (M, M)}, (8,), ("x",), (("x", None), (None, None)),
             "return a @ b", lambda a, b: a @ b, flops=2 * M ** 3),
    Workload("matmul contracting sharded", {"a": (M, M), "b": (M, M)}, (8,), ("x",), ((None, "x"), ("x", None)),
             "return a @ b", lambda a, b: a @ b, flops=2 * M ** 3),
    Workload("megatron mlp", {"x": (B, D), "w1": (D, F), "w2": (F, D)}, (8,), ("model",),
             ((None, None), (None, "model"), ("model", None)), "return nn.gelu(x @ w1) @ w2",
             lambda x, w1, w2: _gelu(x @ w1) @ w2, flops=2 * 2 * B * D * F),
    Workload("softmax rows sharded", {"x": (N, N)}, (8,), ("x",), (("x", None),),
             "return nn.softmax(x, axis=-1)", _softmax, bytes_moved=2 * N * N * 4),
    Workload("sum over sharded axis", {"x": (N, N)}, (8,), ("x",), (("x", None),),
             "return jnp.sum(x, axis=0)", lambda x: x.sum(0), bytes_moved=N * N * 4),
    Workload("sum over all", {"x": (N, N)}, (8,), ("x",), (("x", None),),
             "return jnp.sum(x)", lambda x: x.sum(), bytes_moved=N * N * 4),
    Workload("layer norm rows sharded", {"x": (N, N), "gamma": (N,), "beta": (N,)}, (8,), ("x",),
             (("x", None), (None,), (None,)),
             "mean = jnp.mean(x, -1, keepdims=True)\n"
             "    variance = jnp.mean(jnp.square(x - mean), -1, keepdims=True)\n"
             "    return (x - mean) * jax.lax.rsqrt(variance + 1e-5) * gamma + beta",
             _layer_norm, bytes_moved=2 * N * N * 4),
    Workload("cross-entropy rows sharded", {"logits": (N, N), "labels": (N, N)}, (8,), ("x",),
             (("x", None), ("x", None)),
             "return -jnp.mean(jnp.sum(labels * nn.log_softmax(logits, axis=-1), axis=-1))",
             _cross_entropy, bytes_moved=2 * N * N * 4),
    Workload("8x8 add sharded", {"a": (64, 8), "b": (64, 8)}, (8,), ("x",), (("x", None),) * 2,
             "return a + b", lambda a, b: a + b, bytes_moved=3 * 64 * 8 * 4),
    Workload("8x8 add unsharded", {"a": (8, 8), "b": (8, 8)}, (), (), ((), ()),
             "return a + b", lambda a, b: a + b, bytes_moved=3 * 8 * 8 * 4),
    Workload("attention heads sharded", {"x": (T, DM), "wq": (DM, H, DH), "wk": (DM, H, DH), "wv": (DM, H, DH),
                                          "wo": (H, DH, DM)}, (8,), ("model",),
             ((None, None), (None, "model", None), (None, "model", None), (None, "model", None), ("model", None, None)),
             "q = jnp.einsum('td,dhk->thk', x, wq)\n    k = jnp.einsum('td,dhk->thk', x, wk)\n"
             "    v = jnp.einsum('td,dhk->thk', x, wv)\n"
             "    scores = jnp.einsum('thk,shk->hts', q, k) / float(np.sqrt(q.shape[-1]))\n"
             "    out = jnp.einsum('hts,shk->thk', nn.softmax(scores, axis=-1), v)\n"
             "    return jnp.einsum('thk,hkd->td', out, wo)",
             _attention, flops=2 * (4 * T * DM * H * DH + 2 * T * T * H * DH)),
    Workload("transformer training step 2x4", {}, (2, 4), ("data", "model"), (), "", None,
             flops=_training_flops(), program=_training_program),
]


def program_source(workload: Workload, module: str = "meshjit") -> str:
    """A self-contained script defining ``build()`` -> (jitted function, inputs placed)."""
    if workload.program is not None:
        return workload.program(module)
    names = ", ".join(workload.shapes)
    specs = ", ".join(f"P{tuple(spec)!r}" if spec else "P()" for spec in workload.in_specs)
    numpy_module = "jax.numpy" if module == "jax" else "meshjit.numpy"
    nn_module = "jax.nn" if module == "jax" else "meshjit.nn"
    mesh = (f"Mesh(np.array(jax.devices()[:{math.prod(workload.mesh_shape)}]).reshape({workload.mesh_shape}), "
            f"{workload.mesh_axes!r})") if workload.mesh_shape else "None"
    return f'''
import numpy as np
import {module} as jax
import {numpy_module} as jnp
import {nn_module} as nn
from {module}.sharding import Mesh, NamedSharding, PartitionSpec as P


def f({names}):
    {workload.meshjit_source}


def build(arrays):
    mesh = {mesh}
    specs = [{specs}]
    if mesh is None:
        placed = [jax.device_put(array) for array in arrays]
        return jax.jit(f), placed
    shardings = [NamedSharding(mesh, spec) for spec in specs]
    placed = [jax.device_put(array, sharding) for array, sharding in zip(arrays, shardings)]
    return jax.jit(f, in_shardings=tuple(shardings)), placed
'''
