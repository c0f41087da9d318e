"""A compile worker process: ``python compile_worker.py`` reads one JSON request a line on stdin
(a fused kernel's source path, digest, entry point, argument signature and the object's stem),
compiles it with Numba into the object code kernel_objects.py links, and answers one JSON line
on stdout (``{"ok": true}`` or ``{"ok": false, "error": ...}``).

It is started by compile_service.py and imports neither meshjit nor anything but kernel_objects.py
(loaded by its path) and what the kernel files import (numba, numpy), so it starts in the time
Numba takes to import. It ends when its stdin closes or its parent process is gone (a watchdog
thread checks every half second), so no worker outlives the program that started it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import threading
import time


def _kernel_objects():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernel_objects.py")
    spec = importlib.util.spec_from_file_location("_meshjit_compile_worker_objects", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            os._exit(0)


def _compile(objects, request: dict) -> dict:
    try:
        kernel = objects.ObjectKernel(request["path"], request["digest"], request["entry"])
        signature = tuple(tuple(kind) for kind in request["signature"])
        kernel._compile(signature, request["stem"])
        return {"ok": True}
    except Exception as error:  # noqa: BLE001 - any failure is reported, the parent decides
        return {"ok": False, "error": f"{type(error).__name__}: {error}"}


def main() -> None:
    parent = int(sys.argv[1]) if len(sys.argv) > 1 else os.getppid()
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    objects = _kernel_objects()
    import numba  # noqa: F401 - imported while the parent still traces, not on the first request
    for line in sys.stdin:
        if not line.strip():
            continue
        answer = _compile(objects, json.loads(line))
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
