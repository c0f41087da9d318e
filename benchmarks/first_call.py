"""Run in a fresh process: ``python -m benchmarks.first_call INDEX`` prints the seconds of the
first call of workload INDEX (tracing, compiling or loading kernels, and running), up to its
result being ready, as ``benchmarks.jax_runner --first`` times JAX's (``block_until_ready``, not
a copy of the result into one host array)."""

from __future__ import annotations

import sys
import time

import meshjit

from .workloads import WORKLOADS, program_source


def main() -> None:
    workload = WORKLOADS[int(sys.argv[1])]
    namespace: dict = {}
    exec(program_source(workload), namespace)
    function, placed = namespace["build"](workload.inputs())
    start = time.perf_counter()
    meshjit.block_until_ready(function(*placed))
    print(f"{time.perf_counter() - start:.6f}")


if __name__ == "__main__":
    main()
