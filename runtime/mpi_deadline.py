"""Waiting on MPI requests with a deadline, and the arrival check that runs before every
cross-process collective: a deadlock becomes an error naming the collective and the processes
that did not arrive, and processes that reach different collectives are told so.

Every wait polls nonblocking requests until ``collective_timeout`` seconds
(``MESHJIT_COLLECTIVE_TIMEOUT``) have passed.
"""

from __future__ import annotations

import pickle
import time
from collections import defaultdict

import numpy as np

from meshjit.ir.config import config

_ARRIVAL_TAG = 31_415
_LABEL_BYTES = 240
# NOTE: per peer, how many arrival checks this process has made with it; both sides count the
# same collectives in the same order, so the counts must agree.
_arrivals_with: defaultdict[int, int] = defaultdict(int)


class CollectiveTimeoutError(TimeoutError):
    """Some processes did not reach a collective within ``collective_timeout`` seconds."""


class CollectiveMismatchError(RuntimeError):
    """Processes reached different collectives: their programs diverged."""


def _timeout(timeout: float | None) -> float:
    return config.read("collective_timeout") if timeout is None else float(timeout)


def wait(requests, what: str, processes, *, timeout: float | None = None) -> None:
    """Poll ``requests`` until all complete; ``processes[i]`` is the process ``requests[i]``
    waits on (a tuple for collectives). Raises CollectiveTimeoutError naming the processes whose
    requests are still open at the deadline."""
    seconds = _timeout(timeout)
    deadline = time.monotonic() + seconds
    open_positions = list(range(len(requests)))
    polls = 0
    while open_positions:
        open_positions = [position for position in open_positions if not requests[position].Test()]
        if not open_positions:
            return
        if time.monotonic() > deadline:
            missing = sorted({process for position in open_positions for process in _as_tuple(processes[position])})
            raise CollectiveTimeoutError(
                f"meshjit collective timed out after {seconds:g} s: {what}: process(es) {missing} did "
                f"not arrive (raise MESHJIT_COLLECTIVE_TIMEOUT or config 'collective_timeout' if they "
                f"are only slow)"
            )
        polls += 1
        # NOTE: spin briefly for latency, then back off so oversubscribed cores stay usable.
        time.sleep(0 if polls < 200 else min(1e-5 * (polls - 199), 1e-3))


def _as_tuple(processes) -> tuple:
    return processes if isinstance(processes, tuple) else (processes,)


def _encode(count: int, label: str) -> np.ndarray:
    token = np.zeros(8 + _LABEL_BYTES, np.uint8)
    token[:8] = np.frombuffer(np.int64(count).tobytes(), np.uint8)
    text = label.encode()[:_LABEL_BYTES]
    token[8:8 + len(text)] = np.frombuffer(text, np.uint8)
    return token


def _decode(token: np.ndarray) -> tuple[int, str]:
    count = int(np.frombuffer(token[:8].tobytes(), np.int64)[0])
    return count, token[8:].tobytes().rstrip(b"\0").decode(errors="replace")


def check_arrival(communicator, processes, label: str, *, timeout: float | None = None) -> None:
    """Exchange a token with every other process of ``processes`` (ranks of ``communicator``,
    this one included), so all of them are known to be at collective ``label`` before any data
    moves. Raises CollectiveTimeoutError or CollectiveMismatchError.

    NOTE: always called on meshjit's world communicator, so peers are job process indices.
    """
    me = communicator.Get_rank()
    peers = [process for process in processes if process != me]
    outgoing = {peer: _encode(_arrivals_with[peer], label) for peer in peers}
    incoming = {peer: np.empty(8 + _LABEL_BYTES, np.uint8) for peer in peers}
    sends = [communicator.Isend(outgoing[peer], dest=peer, tag=_ARRIVAL_TAG) for peer in peers]
    receives = [communicator.Irecv(incoming[peer], source=peer, tag=_ARRIVAL_TAG) for peer in peers]
    wait(receives, f"{label} on process {me}", peers, timeout=timeout)
    for peer in peers:
        if not np.array_equal(incoming[peer], outgoing[peer]):
            count, other_label = _decode(incoming[peer])
            raise CollectiveMismatchError(
                f"process {me} is at collective {label!r} (number {_arrivals_with[peer]} with process "
                f"{peer}), but process {peer} is at {other_label!r} (number {count}): the processes "
                f"are running different programs"
            )
        _arrivals_with[peer] += 1
    wait(sends, f"{label} on process {me}", peers, timeout=timeout)


def allgather_objects(communicator, value, label: str, *, timeout: float | None = None) -> list:
    """Every process's ``value`` (any picklable object), in rank order."""
    size = communicator.Get_size()
    check_arrival(communicator, range(size), label, timeout=timeout)
    everyone = tuple(range(size))
    payload = np.frombuffer(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL), np.uint8)
    sizes = np.empty(size, np.int64)
    wait([communicator.Iallgather(np.array([payload.size], np.int64), sizes)], label, [everyone], timeout=timeout)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    received = np.empty(int(sizes.sum()), np.uint8)
    request = communicator.Iallgatherv(payload, [received, (sizes.tolist(), offsets.tolist())])
    wait([request], label, [everyone], timeout=timeout)
    return [pickle.loads(received[start:start + count].tobytes()) for start, count in zip(offsets, sizes)]
