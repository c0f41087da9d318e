"""Background compilation (compiler/compile_service.py): a step moves to its kernel between
calls once a worker has built it, a program called once compiles nothing with a first tier,
kernels without one are queued when the plan is built, a worker that dies or fails leaves
programs on the first tier with one warning, and no worker outlives its process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest

import meshjit as jax
from meshjit.compiler.lowering import compile_service
from meshjit.compiler.lowering.compile_service import CompileService
from tier_helpers import bits, tiered_steps

pytestmark = pytest.mark.usefixtures("restore_runtime_state")
X = np.random.default_rng(0).standard_normal((64, 128)).astype(np.float32)


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """Background mode, an empty kernel cache and a compile service of the test's own (the
    factory takes the service's worker command, None for the real worker)."""
    monkeypatch.setenv("MESHJIT_COMPILE", "background")
    monkeypatch.setenv("MESHJIT_CACHE_DIR", str(tmp_path))
    made = []

    def install(command=None) -> CompileService:
        made.append(CompileService(command, workers=1))
        compile_service.replace_service(made[-1])
        return made[-1]

    previous = compile_service.replace_service(None)
    yield install
    for service in made:
        service.close()
    compile_service.replace_service(previous)


def _scaled(x):
    return (x * 3.0 + 1.0) * x - 2.0


def test_a_step_moves_to_its_kernel_between_calls_with_the_same_bits(fresh):
    service = fresh()
    function = jax.jit(_scaled)
    (step,) = tiered_steps(function, X)
    first = np.asarray(function(X))
    assert not service.jobs and not step.on_kernel  # called once: nothing compiles
    second = np.asarray(function(X))
    assert len(service.jobs) == 1
    assert service.idle(timeout=600)
    results = [np.asarray(function(X)) for _ in range(98)]
    assert step.on_kernel
    # NOTE: the object the worker built is the one the launcher asked for: no second job
    assert len(service.jobs) == 1 and all(job.done for job in service.jobs.values())
    assert {bits(result) for result in [first, second, *results]} == {bits(first)}


ROW_PRODUCT = textwrap.dedent("""
    import sys
    import numpy as np, meshjit as jax
    x = np.random.default_rng(0).standard_normal((64, 128)).astype(np.float32)
    np.save(sys.argv[1], np.asarray(jax.jit(lambda x: x / (1.0 + (x * 2.0 - abs(x)) * 1e-3).prod(axis=-1, keepdims=True))(x)))
""")


def test_kernels_without_a_first_tier_are_queued_when_the_plan_is_built(fresh, tmp_path):
    service = fresh()
    # NOTE: kernels are kept per source for the whole process (constants are kernel arguments):
    # a program no other test compiles keeps an earlier test's kernel from standing in for this one
    compiled = jax.jit(lambda x: x / (1.0 + (x * 2.0 - abs(x)) * 1e-3).prod(axis=-1, keepdims=True)).lower(X).compile()
    assert len(service.jobs) == 1  # before any call
    from_worker = np.asarray(compiled(X))
    assert next(iter(service.jobs.values())).done
    # the same kernel compiled on the calling thread, in a process of its own with a cache of its own
    environment = {**os.environ, "MESHJIT_COMPILE": "sync", "MESHJIT_CACHE_DIR": str(tmp_path / "sync")}
    done = subprocess.run([sys.executable, "-c", ROW_PRODUCT, str(tmp_path / "in_process.npy")], env=environment,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert os.listdir(tmp_path / "sync" / "kernels")
    assert bits(from_worker) == bits(np.load(tmp_path / "in_process.npy"))


def _broken_run(fresh, command, message, program, row_input):
    """``program`` and ``row_input`` differ from test to test: kernels are kept per source
    for the process, and a kernel another test built would need no worker."""
    service = fresh(command)
    function = jax.jit(program)
    expected = np.asarray(function(X))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = [np.asarray(function(X))]
        deadline = time.monotonic() + 120
        while service.broken is None and time.monotonic() < deadline:
            time.sleep(0.05)
        results += [np.asarray(function(X)) for _ in range(5)]
        # a kernel without a first tier (a float product over rows) compiles on the calling thread instead
        product = np.asarray(jax.jit(lambda x: x / (1.0 + row_input(x) * 1e-3).prod(axis=-1, keepdims=True))(X))
    assert service.broken is not None and message in service.broken
    messages = [str(item.message) for item in caught if issubclass(item.category, RuntimeWarning)]
    assert len(messages) == 1 and "first tier" in messages[0]
    assert {bits(result) for result in results} == {bits(expected)}
    (step,) = tiered_steps(function, X)
    assert not step.on_kernel
    reference = X / (1.0 + row_input(X) * np.float32(1e-3)).prod(-1, keepdims=True)
    np.testing.assert_allclose(product, reference, rtol=1e-5)


def test_a_worker_that_dies_leaves_the_first_tier_with_one_warning(fresh):
    _broken_run(fresh, [sys.executable, "-c", "import sys; sys.exit(3)"], "exit code 3",
                lambda x: (x - 1.0) * x + x, lambda x: x + 1.0)


def test_a_worker_that_fails_a_job_leaves_the_first_tier_with_one_warning(fresh):
    answer = 'import sys\nfor line in sys.stdin: print(\'{"ok": false, "error": "no compiler here"}\', flush=True)'
    _broken_run(fresh, [sys.executable, "-c", answer], "no compiler here",
                lambda x: (x + 2.0) * (x - x * 0.5), lambda x: x - 1.0)


def test_no_worker_outlives_its_process(tmp_path):
    script = textwrap.dedent("""
        import numpy as np, meshjit as jax, meshjit.numpy as jnp
        from meshjit.compiler.lowering import compile_service
        compile = jax.jit(lambda x: x / (1.0 + x * 1e-3).prod(axis=-1, keepdims=True)).lower(
            np.ones((64, 128), np.float32)).compile()
        print(*[process.pid for process in compile_service.service().processes], flush=True)
    """)
    environment = {**os.environ, "MESHJIT_COMPILE": "background", "MESHJIT_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=environment, timeout=300)
    assert done.returncode == 0, done.stderr
    pids = [int(pid) for pid in done.stdout.split()]
    assert pids  # the program queued its kernel, so a worker was running when it exited
    deadline = time.monotonic() + 30  # NOTE: the watchdog checks every 0.5 s; the machine may be busy
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in pids)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_the_mode_is_checked(monkeypatch):
    monkeypatch.setenv("MESHJIT_COMPILE", "eventually")
    with pytest.raises(ValueError, match="MESHJIT_COMPILE must be one of background, sync, never"):
        jax.jit(_scaled)(X)
