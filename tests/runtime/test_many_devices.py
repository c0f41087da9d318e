"""No per-device Python loops (issue 21): the same programs at 64 and at 1024 simulated devices
(a non-iota mesh of the same two-axis shape) make as many Python calls to device_put their
inputs, to run their first call and read the result, and to run again, and their values are
numpy's: an MLP, a reshard, an all-gather, a gradient and a shard_map psum. Each count
runs in a fresh process (the device count is fixed when the devices are first made)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

WORKER = r"""
import json, sys
import numpy as np
import meshjit as jax
import meshjit.numpy as jnp
from meshjit.sharding import Mesh, NamedSharding, PartitionSpec as P

count = len(jax.devices())
order = np.random.default_rng(1).permutation(count)
mesh = Mesh(np.array(jax.devices())[order].reshape(count // 8, 8), ("data", "model"))
rng = np.random.default_rng(0)
x_value = rng.standard_normal((256, 16)).astype(np.float32)
w_values = [rng.standard_normal((16, 16)).astype(np.float32) for _ in range(3)]
calls = [0]

def count_calls(frame, event, arg):
    if event in ("call", "c_call"):
        calls[0] += 1

def counted(thunk):
    calls[0] = 0
    sys.setprofile(count_calls)
    try:
        result = thunk()
    finally:
        sys.setprofile(None)
    return result, calls[0]

def put():
    x = jax.device_put(x_value, NamedSharding(mesh, P("data")))
    weights = [jax.device_put(w, NamedSharding(mesh, P(None, "model") if i % 2 == 0 else P("model")))
               for i, w in enumerate(w_values)]
    return x, weights

(x, weights), put_calls = counted(put)
mlp = jax.jit(lambda x, a, b, c: jnp.tanh(jnp.tanh(x @ a) @ b) @ c)
value, first_calls = counted(lambda: np.asarray(mlp(x, *weights)))
_, next_calls = counted(lambda: mlp(x, *weights))
expected = np.tanh(np.tanh(x_value @ w_values[0]) @ w_values[1]) @ w_values[2]
counts = {"put": put_calls, "first": first_calls, "next": next_calls}
# NOTE: a reshard, an all-gather, a gradient (partial sums) and a shard_map psum
others = {
    "reshard": (jax.jit(lambda a: a, out_shardings=NamedSharding(mesh, P(None, "model"))), (x,), x_value),
    "gather": (jax.jit(lambda a: a * 2, out_shardings=NamedSharding(mesh, P())), (x,), x_value * 2),
    "grad": (jax.jit(jax.grad(lambda a, w: jnp.sum(a @ w), argnums=1)), (x, weights[0]),
             np.broadcast_to(x_value.sum(0)[:, None], (16, 16))),
    "psum": (jax.jit(jax.shard_map(lambda a: jax.lax.psum(a, "data"), mesh=mesh, in_specs=P("data"),
                                   out_specs=P())), (x,), x_value.reshape(count // 8, -1, 16).sum(0)),
}
errors = [float(np.abs(value - expected).max())]
for name, (function, arguments, want) in others.items():
    result, counts[name] = counted(lambda: np.asarray(function(*arguments)))
    _, counts[name + " again"] = counted(lambda: function(*arguments))
    errors.append(float(np.abs(result - want).max() / max(1.0, np.abs(want).max())))
print(json.dumps({"counts": counts, "error": max(errors),
                  "blocks": [len(x._blocks)] + [len(w._blocks) for w in weights]}))
"""


def run_worker(devices: int) -> dict:
    env = {**os.environ, "MESHJIT_NUM_DEVICES": str(devices)}
    result = subprocess.run([sys.executable, "-c", WORKER], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def test_calls_do_not_grow_with_the_devices():
    few, many = run_worker(64), run_worker(1024)
    assert few["error"] < 1e-5 and many["error"] < 1e-5
    # NOTE: a replicated operand is stored once per distinct shard: the data's 8 and 128
    # row blocks, each weight's 8 column or row blocks
    assert few["blocks"] == [8, 8, 8, 8] and many["blocks"] == [128, 8, 8, 8]
    assert few["counts"].keys() == many["counts"].keys()
    for phase, calls in few["counts"].items():
        # NOTE: one Python call per device would add 960; allow noise far below that
        assert many["counts"][phase] <= calls * 1.02 + 50, (phase, few, many)
