"""Run under a Python that has JAX (8 CPU devices).

``python -m benchmarks.jax_runner INDEX`` prints the median seconds per call of workload INDEX;
``--first INDEX`` prints the seconds of the first call in this fresh process (tracing and XLA's
compilation included); ``--serve`` answers lines on stdin, so that the JAX timings interleave with
meshjit's and numpy's in one run: ``build INDEX`` (replies ``ready``) and ``time INDEX BUDGET``
(replies the median seconds per call over about BUDGET seconds).
"""

from __future__ import annotations

import os
import sys
import time

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from .timing import median_seconds  # noqa: E402
from .workloads import WORKLOADS, program_source  # noqa: E402


def _build(index: int):
    workload = WORKLOADS[index]
    namespace: dict = {}
    exec(program_source(workload, module="jax"), namespace)
    return namespace["build"](workload.inputs())


def _serve() -> None:
    built: dict = {}
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        index = int(words[1])
        if words[0] == "build":
            function, placed = built[index] = _build(index)
            function(*placed).block_until_ready()
            print("ready", flush=True)
        elif words[0] == "time":
            function, placed = built[index]
            seconds = median_seconds(lambda: function(*placed).block_until_ready(), budget=float(words[2]))
            print(f"{seconds:.9f}", flush=True)


def main() -> None:
    if sys.argv[1] == "--serve":
        _serve()
        return
    if sys.argv[1] == "--first":
        function, placed = _build(int(sys.argv[2]))
        start = time.perf_counter()
        function(*placed).block_until_ready()
        print(f"{time.perf_counter() - start:.6f}")
        return
    function, placed = _build(int(sys.argv[1]))
    function(*placed).block_until_ready()
    print(f"{median_seconds(lambda: function(*placed).block_until_ready()):.9f}")


if __name__ == "__main__":
    main()
