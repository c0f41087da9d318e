"""Cold start against JAX, in one run: ``python -m benchmarks.cold_start [--rounds N] [words]``.

Each round runs, in fresh processes and alternating: every selected workload's first call with
an empty kernel cache under ``MESHJIT_COMPILE=background`` (the default) and ``sync`` (every
kernel compiled on the calling thread, as before tiers), its first call with the cache the
background run left, and JAX's first call; then ``examples/train_transformer.py --steps 20
--quiet`` end to end with an empty cache (both modes) and on JAX. It prints the medians over the
rounds, the sums of the first calls and the ratios to JAX's; on a shared machine only the ratios
within one run mean much.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

from .workloads import EXAMPLE, WORKLOADS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _jax_python() -> str | None:
    configured = os.environ.get("MESHJIT_BENCH_JAX_PYTHON", "/work/jaxenv/bin/python")
    return configured if os.path.exists(configured) else None


def _run(command: list[str], env: dict, timed: bool) -> float | None:
    """The command's last printed number (``timed=False``) or its wall time."""
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        print(f"  {' '.join(command[-3:])} failed: {result.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return None
    return seconds if timed else float(result.stdout.strip().splitlines()[-1])


def _with_empty_cache(command: list[str], mode: str, timed: bool = False, then_warm: bool = False):
    directory = tempfile.mkdtemp(prefix="meshjit-cold-")
    env = {**os.environ, "MESHJIT_CACHE_DIR": directory, "MESHJIT_COMPILE": mode}
    try:
        cold = _run(command, env, timed)
        return (cold, _run(command, env, timed)) if then_warm else cold
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def one_round(selected: list[int], jax_python: str | None) -> dict:
    """One round's seconds, keyed (name, column)."""
    found = {}
    jax_env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8"}
    for index in selected:
        name = WORKLOADS[index].name
        command = [sys.executable, "-m", "benchmarks.first_call", str(index)]
        found[name, "cold"], found[name, "warm"] = _with_empty_cache(command, "background", then_warm=True)
        found[name, "cold sync"] = _with_empty_cache(command, "sync")
        if jax_python:
            found[name, "jax"] = _run([jax_python, "-m", "benchmarks.jax_runner", "--first", str(index)], jax_env, False)
    training = [sys.executable, EXAMPLE, "--steps", "20", "--quiet"]
    found["training", "cold"] = _with_empty_cache(training, "background", timed=True)
    found["training", "cold sync"] = _with_empty_cache(training, "sync", timed=True)
    if jax_python:
        found["training", "jax"] = _run([jax_python, EXAMPLE, "--steps", "20", "--quiet"],
                                        {**jax_env, "TRAIN_TRANSFORMER_BACKEND": "jax"}, True)
    return found


def _median(rounds: list[dict], key) -> float | None:
    values = [found[key] for found in rounds if found.get(key) is not None]
    return float(np.median(values)) if values else None


def _cell(value) -> str:
    return "-" if value is None else f"{value:.2f} s"


def _ratio(top, bottom) -> str:
    return "-" if top is None or not bottom else f"{top / bottom:.2f}"


def report(rounds: list[dict], names: list[str]) -> str:
    """A markdown table of the medians, with the sums and the training example."""
    columns = ("cold", "cold sync", "warm", "jax")
    lines = ["| program | cold (background) | cold (sync) | warm | JAX | cold / JAX | cold sync / JAX |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    medians = {name: {column: _median(rounds, (name, column)) for column in columns} for name in [*names, "training"]}
    totals = {column: sum(medians[name][column] or 0.0 for name in names) for column in columns}
    for label, row in [*((name, medians[name]) for name in names), ("sum of first calls", totals),
                       ("train_transformer.py --steps 20, end to end", medians["training"])]:
        lines.append(f"| {label} | {_cell(row['cold'])} | {_cell(row['cold sync'])} | {_cell(row['warm'])} | "
                     f"{_cell(row['jax'])} | {_ratio(row['cold'], row['jax'])} | {_ratio(row['cold sync'], row['jax'])} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 3
    words = [word for position, word in enumerate(argv) if word != "--rounds" and
             (position == 0 or argv[position - 1] != "--rounds")]
    selected = [index for index, workload in enumerate(WORKLOADS) if not words or any(w in workload.name for w in words)]
    jax_python = _jax_python()
    load = os.getloadavg()[0]
    results = []
    for number in range(rounds):
        print(f"round {number + 1} of {rounds} ...", file=sys.stderr)
        results.append(one_round(selected, jax_python))
    print(report(results, [WORKLOADS[index].name for index in selected]))
    print(f"\nmedians of {rounds} rounds; load average before {load:.2f}, after {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
