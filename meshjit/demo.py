"""``meshjit demo``: the whole pipeline on a Megatron-style MLP over a data x model mesh (2 x 4 with
the default 8 devices)."""

from __future__ import annotations

import time

import numpy as np
from rich.console import Console
from rich.table import Table


# NOTE: the demo is a user program: its traced ops are located at its lines (compiler/frontend/trace.py).
__meshjit_user_program__ = True


def _median_seconds(call, runs: int = 20) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def _gelu(x):
    return 0.5 * x * (1 + np.tanh(np.float32(np.sqrt(2 / np.pi)) * (x + np.float32(0.044715) * (x * x * x))))


def run_demo(console: Console | None = None) -> int:
    import meshjit as jax
    from meshjit import nn
    from meshjit.runtime.visualize import sharding_table
    from meshjit.sharding import Mesh, NamedSharding, PartitionSpec as P

    console = console or Console()
    devices = jax.devices()
    console.print(f"[bold]meshjit {jax.__version__}[/bold]: {len(devices)} simulated CPU devices "
                  f"(process {jax.process_index()} of {jax.process_count()})")
    count = len(devices)
    data = 2 if count % 2 == 0 else 1
    model = count // data
    mesh = Mesh(np.array(devices).reshape(data, model), ("data", "model"))
    console.print("devices:", ", ".join(repr(device) for device in devices))
    console.print(f"mesh: {mesh!r}\n")
    # sizes scale with the mesh so that every sharded dim divides evenly
    batch, width, hidden = 128 * data, 512, 512 * model
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, width)).astype(np.float32)
    w1 = (rng.standard_normal((width, hidden)) / np.sqrt(width)).astype(np.float32)
    w2 = (rng.standard_normal((hidden, width)) / np.sqrt(hidden)).astype(np.float32)
    shardings = (NamedSharding(mesh, P("data", None)), NamedSharding(mesh, P(None, "model")),
                 NamedSharding(mesh, P("model", None)))
    placed = [jax.device_put(value, sharding) for value, sharding in zip((x, w1, w2), shardings)]

    @jax.jit
    def mlp(x, w1, w2):
        return nn.gelu(x @ w1) @ w2

    console.print("[bold]y = gelu(x @ w1) @ w2[/bold]  (batch on 'data', hidden units on 'model')")
    for name, value in zip(("x", "w1", "w2"), placed):
        console.print(f"  {name} {value.shape} {value.sharding.spec}")
    compiled = mlp.lower(*placed).compile()
    output = compiled(*placed)
    console.print(f"  y {output.shape} {output.sharding.spec}  (chosen by propagation)\n")
    console.print("[bold]collectives[/bold]")
    for record in compiled.collectives():
        console.print(f"  {record}")
    console.print("\n[bold]per-device module[/bold]")
    console.print(compiled.as_text(), markup=False, highlight=False)
    console.print("[bold]output layout[/bold]")
    console.print(sharding_table(output.shape, output.sharding))
    expected = _gelu(x @ w1) @ w2
    error = float(np.max(np.abs(np.asarray(output) - expected)))
    meshjit_seconds = _median_seconds(lambda: mlp(*placed))
    numpy_seconds = _median_seconds(lambda: _gelu(x @ w1) @ w2)
    table = Table(title="time per call (median of 20)")
    for column in (f"meshjit on {count} simulated devices", "numpy on one", "ratio", "max |error|"):
        table.add_column(column, justify="right")
    table.add_row(f"{meshjit_seconds * 1e3:.2f} ms", f"{numpy_seconds * 1e3:.2f} ms",
                  f"{meshjit_seconds / numpy_seconds:.2f}", f"{error:.1e}")
    console.print(table)
    return 0
