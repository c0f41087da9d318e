"""Timing helpers: medians over adaptive repetition counts, and peak traced memory."""

from __future__ import annotations

import time
import tracemalloc

import numpy as np


def median_seconds(call, *, budget: float = 1.0, minimum: int = 3, maximum: int = 200) -> float:
    """Median wall time of ``call()``, repeating until ``budget`` seconds or ``maximum`` runs."""
    times = []
    start = time.perf_counter()
    while len(times) < minimum or (time.perf_counter() - start < budget and len(times) < maximum):
        begin = time.perf_counter()
        call()
        times.append(time.perf_counter() - begin)
    return float(np.median(times))


def peak_bytes(call) -> int:
    """Peak memory numpy and Python allocate during one ``call()`` (tracemalloc sees numpy buffers)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
