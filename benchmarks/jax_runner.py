"""Run under a Python that has JAX: ``python -m benchmarks.jax_runner INDEX`` prints the median
seconds per call of workload INDEX on 8 CPU devices."""

from __future__ import annotations

import os
import sys

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from .timing import median_seconds  # noqa: E402
from .workloads import WORKLOADS, program_source  # noqa: E402


def main() -> None:
    workload = WORKLOADS[int(sys.argv[1])]
    namespace: dict = {}
    exec(program_source(workload, module="jax"), namespace)
    function, placed = namespace["build"](workload.inputs())
    function(*placed).block_until_ready()
    print(f"{median_seconds(lambda: function(*placed).block_until_ready()):.9f}")


if __name__ == "__main__":
    main()
