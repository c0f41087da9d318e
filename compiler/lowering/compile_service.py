"""Compiling fused kernels off the calling thread: worker processes (compile_worker.py) turn a
kernel's source into the object code kernel_objects.py links, one job at a time each, highest
priority first, while the program runs (docs/execution.md "Tiered execution").

``MESHJIT_COMPILE`` says how kernels compile:

- ``background`` (the default): a kernel with an identical first tier (tiers.py) runs on it and
  is compiled by the workers once its step is called a second time; a kernel without one is
  queued when its plan is built, ahead of those, and its first call waits for it (the waiting
  thread holds no GIL: the compiler runs in another process);
- ``sync``: every kernel compiles on the calling thread at its first call (the tests' mode and
  the benchmarks' kernel timings);
- ``never``: kernels with an identical first tier never compile; the others compile as in sync.

A worker that dies or fails a job leaves the service broken: one warning, every queued and later
job fails at once, kernels with a first tier stay on it and the others compile in-process.
Workers end with the process (their stdin closes, and they watch their parent).
"""

from __future__ import annotations

import heapq
import itertools
import json
import os
import subprocess
import sys
import threading
import time
import warnings

MODES = ("background", "sync", "never")
_WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "compile_worker.py")


def compile_mode() -> str:
    """``MESHJIT_COMPILE``, checked (read when a plan's kernels are built)."""
    mode = os.environ.get("MESHJIT_COMPILE", "background") or "background"
    if mode not in MODES:
        raise ValueError(f"MESHJIT_COMPILE must be one of {', '.join(MODES)}, got {mode!r}")
    return mode


class Job:
    """One kernel object to compile: ``state`` is "queued", "running", "done" or "failed"."""

    __slots__ = ("request", "priority", "state", "finished")

    def __init__(self, request: dict, priority: tuple):
        self.request, self.priority, self.state = request, priority, "queued"
        self.finished = threading.Event()

    @property
    def done(self) -> bool:
        return self.state == "done"

    def wait(self) -> bool:
        """Whether the object is on disk, once the job has ended."""
        self.finished.wait()
        return self.state == "done"


def _worker_count() -> int:
    configured = os.environ.get("MESHJIT_COMPILE_WORKERS")
    if configured:
        return max(1, int(configured))
    from .launch import thread_count  # NOTE: the one module that meets the thread pool
    return max(1, min(4, thread_count()))


class CompileService:
    """The process's compile workers and their queue of jobs (one job per object stem)."""

    def __init__(self, command=None, workers: int | None = None):
        self.command = command or [sys.executable, _WORKER, str(os.getpid())]
        self.size = workers
        self.lock = threading.Condition()
        self.queue: list = []
        self.jobs: dict[str, Job] = {}
        self.order = itertools.count()
        self.processes: list[subprocess.Popen] = []
        self.broken: str | None = None
        self.warned = False
        self.closed = False
        self.busy = 0
        # (stem, start, end, worker index) of every finished job, for tests and measurements
        self.history: list[tuple[str, float, float, int]] = []

    def submit(self, request: dict, priority: tuple) -> Job:
        """The job making ``request["stem"]``'s object, queued with ``priority`` (lower runs
        first) unless it is known already (then raised to ``priority`` if that is higher)."""
        with self.lock:
            job = self.jobs.get(request["stem"])
            if job is not None:
                if job.state == "queued" and priority < job.priority:
                    job.priority = priority
                    heapq.heappush(self.queue, (priority, next(self.order), job))
                return job
            job = self.jobs[request["stem"]] = Job(request, priority)
            if self.broken is not None or self.closed:
                self._fail(job)
                return job
            heapq.heappush(self.queue, (priority, next(self.order), job))
            self._start_workers()
            self.lock.notify()
            return job

    def idle(self, timeout: float | None = None) -> bool:
        """Wait until no job is queued or running; whether that happened within ``timeout``."""
        with self.lock:
            return self.lock.wait_for(lambda: not self.busy and not any(
                entry[2].state == "queued" for entry in self.queue), timeout)

    def _start_workers(self) -> None:
        """Start a worker for each queued job beyond the workers there are, up to the count: a
        program with one kernel to compile starts one (each pays Numba's import and set-up)."""
        size = self.size or _worker_count()
        queued = sum(1 for _, _, job in self.queue if job.state == "queued")
        while len(self.processes) < size and len(self.processes) - self.busy < queued:
            try:
                process = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                           stderr=subprocess.DEVNULL, text=True)
            except OSError as error:
                self._break(f"could not start a compile worker ({error})")
                return
            self.processes.append(process)
            threading.Thread(target=self._serve, args=(process, len(self.processes)), daemon=True,
                             name=f"meshjit-compile-{len(self.processes)}").start()

    def _next(self) -> Job | None:
        with self.lock:
            while True:
                if self.broken is not None or self.closed:
                    return None
                if not self.queue:
                    self.lock.wait()
                    continue
                priority, _, job = heapq.heappop(self.queue)
                if job.state != "queued" or priority != job.priority:
                    continue  # an entry left behind when the job's priority was raised
                job.state = "running"
                self.busy += 1
                return job

    def _serve(self, process: subprocess.Popen, index: int) -> None:
        """One worker's thread: hand it jobs, one at a time, until the service ends or breaks."""
        while True:
            job = self._next()
            if job is None:
                process.stdout.close()
                _exit_code(process)
                return
            answer, start = None, time.perf_counter()
            try:
                process.stdin.write(json.dumps(job.request) + "\n")
                process.stdin.flush()
                line = process.stdout.readline()
                answer = json.loads(line) if line else None
            except (OSError, ValueError):
                answer = None
            with self.lock:
                self.busy -= 1
                self.history.append((job.request["stem"], start, time.perf_counter(), index))
                if answer is not None and answer.get("ok"):
                    job.state = "done"
                    job.finished.set()
                else:
                    reason = (answer or {}).get("error") or f"the compile worker ended (exit code {_exit_code(process)})"
                    self._fail(job)
                    self._break(f"compiling {os.path.basename(job.request['stem'])} failed: {reason}")
                self.lock.notify_all()

    def _fail(self, job: Job) -> None:
        job.state = "failed"
        job.finished.set()

    def _break(self, reason: str) -> None:
        """Called with the lock held: fail every queued job, warn once, stop the workers."""
        if self.broken is not None:
            return
        self.broken = reason
        self._drain()

    def warn_once(self) -> None:
        """Warn (on the caller's thread) that the service broke, the first time anyone asks."""
        with self.lock:
            if self.broken is None or self.warned:
                return
            self.warned = True
        warnings.warn(f"meshjit: background kernel compilation stopped, {self.broken}; programs keep running "
                      "on their first tier and compile what they must on the calling thread", RuntimeWarning,
                      stacklevel=3)

    def _stop_processes(self) -> None:
        for process in self.processes:
            try:
                process.stdin.close()
            except OSError:
                pass
            if process.poll() is None:
                process.kill()

    def close(self) -> None:
        """End the workers (at exit): queued jobs fail, nothing waits for them."""
        with self.lock:
            self.closed = True
            self._drain()

    def _drain(self) -> None:
        """Called with the lock held: fail every queued job and stop the workers."""
        for _, _, job in self.queue:
            if job.state == "queued":
                self._fail(job)
        self.queue.clear()
        self.lock.notify_all()
        self._stop_processes()


def _exit_code(process: subprocess.Popen):
    try:
        return process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        return None


_SERVICE: CompileService | None = None
_SERVICE_LOCK = threading.Lock()


def service() -> CompileService:
    """The process's compile service (workers start with its first job)."""
    global _SERVICE
    with _SERVICE_LOCK:
        if _SERVICE is None or _SERVICE.closed:
            import atexit
            _SERVICE = CompileService()
            atexit.register(_SERVICE.close)
        return _SERVICE


def replace_service(new: CompileService | None) -> CompileService | None:
    """Install ``new`` as the process's service (tests: a worker that fails); the old one."""
    global _SERVICE
    with _SERVICE_LOCK:
        old, _SERVICE = _SERVICE, new
        return old
