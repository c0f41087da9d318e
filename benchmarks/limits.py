"""The machine's limits, measured in the same run as the workloads: memory bandwidth (numpy
copies of 256 MB, on one thread and on every core at once) and BLAS's float32 GEMM rate."""

from __future__ import annotations

import numpy as np

from meshjit.runtime.threads import parallel_for, thread_count

from .timing import median_seconds

COPY_ELEMENTS = 1 << 26   # 256 MB of float32
GEMM_SIZE = 2048


def _copy_chunk(start: int, stop: int, source: np.ndarray, target: np.ndarray) -> None:
    np.copyto(target[start:stop], source[start:stop])


def bandwidth(threads: int | None = None) -> float:
    """Bytes per second of a large copy: every byte read once and written once (the write also
    reads its cache line first on this hardware, which the count leaves out, as STREAM does)."""
    source = np.ones(COPY_ELEMENTS, np.float32)
    target = np.empty_like(source)
    grain = COPY_ELEMENTS // (threads or thread_count())
    seconds = median_seconds(lambda: parallel_for(_copy_chunk, COPY_ELEMENTS, (source, target), grain=grain),
                             budget=1.0)
    return 2 * source.nbytes / seconds


def gemm_rate() -> float:
    """Float32 FLOP per second of one numpy matmul of two 2048x2048 matrices (BLAS's threads)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((GEMM_SIZE, GEMM_SIZE)).astype(np.float32)
    b = rng.standard_normal((GEMM_SIZE, GEMM_SIZE)).astype(np.float32)
    a @ b
    return 2 * GEMM_SIZE ** 3 / median_seconds(lambda: a @ b, budget=1.0)


def blas_description() -> str:
    """BLAS's library, kernel architecture and threads (threadpoolctl, when installed)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "threadpoolctl not installed"
    found = [f"{info.get('internal_api')} {info.get('version')} {info.get('architecture')}, "
             f"{info.get('num_threads')} threads" for info in threadpool_info() if info.get("user_api") == "blas"]
    return "; ".join(found) or "no BLAS found"
