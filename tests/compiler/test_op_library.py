"""The installation's per-op kernel library (compiler/lowering/op_library.py): every entry gives
the fused kernel's bits on the first tier, with it a large group calling a transcendental helper
has a first tier (without it, none), it is found outside MESHJIT_CACHE_DIR, a changed helper
finds no stale object, and a program that needs a missing entry has the workers build it first."""

from __future__ import annotations

import os

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit import lax
from meshjit.compiler.lowering import compile_service, op_library, tiers
from tier_helpers import bits, tiered_steps

pytestmark = pytest.mark.usefixtures("restore_runtime_state")

# one program per library entry: the op between plain arithmetic, so it sits in a fused group
PROGRAMS = {
    "exp": lambda x, y, z: jnp.exp(x * y), "exp2": lambda x, y, z: jnp.exp2(x - y),
    "expm1": lambda x, y, z: jnp.expm1(x * y), "log": lambda x, y, z: jnp.log(x + y) * z,
    "log1p": lambda x, y, z: jnp.log1p(x * y), "tanh": lambda x, y, z: jnp.tanh(x - y) * 2,
    "logistic": lambda x, y, z: lax.logistic(x * y), "erf": lambda x, y, z: lax.erf(x - y),
    "erf_inv": lambda x, y, z: lax.erf_inv(x * 0.5) + y, "sin": lambda x, y, z: jnp.sin(x * y),
    "cos": lambda x, y, z: jnp.cos(x + y), "tan": lambda x, y, z: jnp.tan(x - y),
    "cbrt": lambda x, y, z: jnp.cbrt(x * y), "rsqrt": lambda x, y, z: lax.rsqrt(x * y),
    "atan2": lambda x, y, z: jnp.arctan2(x * z, y), "fma": lambda x, y, z: x * y + z,
}
CASES = [(name, helper) for helper, (entry, _, dtype) in op_library.ENTRIES.items()
         for name in [entry.removeprefix("library_").removesuffix("_" + dtype)]]


@pytest.fixture(scope="module")
def library():
    """The library, built where it is missing (``make install`` builds it)."""
    op_library.build(out=open(os.devnull, "w"))


def _special(dtype, rng, shape) -> np.ndarray:
    info = np.finfo(dtype)
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, info.tiny / 4, -info.tiny / 4, info.max, -info.max, 1.0, -1.5,
             0.5, -0.999, 88.7, -104.0, 710.0, -746.0, 1e-8]
    values = (rng.standard_normal(shape) * rng.choice([1e-30, 1e-3, 1.0, 30.0, 1e30], shape)).astype(dtype)
    values.flat[:len(edges)] = np.array(edges, dtype=dtype)
    return values


def _used_entries(monkeypatch) -> list:
    """The library entries the first tier runs through, as they are looked up."""
    used, runner = [], op_library.runner

    def spy(helper):
        found = runner(helper)
        if found is not None:
            used.append(helper)
        return found

    monkeypatch.setattr(op_library, "runner", spy)
    return used


def _both_tiers(monkeypatch, program, arguments) -> tuple[list, list]:
    """The results' leaves on the first tier (never) and on the kernels (sync)."""
    results = []
    for mode in ("never", "sync"):
        monkeypatch.setenv("MESHJIT_COMPILE", mode)
        function = jax.jit(program)
        if mode == "never":
            assert tiered_steps(function, *arguments), "no step ran on the first tier"
        results.append([np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(function(*arguments))])
    return results[0], results[1]


@pytest.mark.parametrize("name, helper", CASES, ids=[f"{name}-{op_library.ENTRIES[helper][2]}" for name, helper in CASES])
@pytest.mark.parametrize("shape", [(64, 128), (256, 320)], ids=["small", "large"])
def test_every_library_entry_gives_the_fused_kernels_bits(monkeypatch, library, name, helper, shape):
    dtype = np.dtype(np.float32 if op_library.ENTRIES[helper][2] == "f32" else np.float64)
    if dtype == np.float64:
        jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(len(name))
    arguments = [_special(dtype, rng, shape) for _ in range(3)]
    arguments[1] = arguments[1][::-1].copy()
    used = _used_entries(monkeypatch)
    first, kernel = _both_tiers(monkeypatch, PROGRAMS[name], arguments)
    assert helper in used
    for a, b in zip(first, kernel):
        assert a.dtype == b.dtype == dtype and a.shape == b.shape and bits(a) == bits(b)


@pytest.mark.parametrize("name, helper", CASES, ids=[f"{name}-{op_library.ENTRIES[helper][2]}" for name, helper in CASES])
def test_without_the_library_the_first_tier_emulates_the_same_bits(monkeypatch, name, helper):
    monkeypatch.setenv("MESHJIT_KERNEL_LIBRARY", "off")
    dtype = np.dtype(np.float32 if op_library.ENTRIES[helper][2] == "f32" else np.float64)
    if dtype == np.float64:
        jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(len(name) + 1)
    arguments = [_special(dtype, rng, (64, 128)) for _ in range(3)]
    used = _used_entries(monkeypatch)
    first, kernel = _both_tiers(monkeypatch, PROGRAMS[name], arguments)
    assert not used
    for a, b in zip(first, kernel):
        assert a.dtype == b.dtype == dtype and a.shape == b.shape and bits(a) == bits(b)


def _tanh_group_is_tiered(monkeypatch) -> bool:
    monkeypatch.setenv("MESHJIT_COMPILE", "never")
    x = np.random.default_rng(1).standard_normal((256, 256)).astype(np.float32)
    assert x.size > tiers.FIRST_TIER_MATH_MAX_ELEMENTS
    return bool(tiered_steps(jax.jit(lambda x: jnp.tanh(x * 3.0) * 2), x))


def test_a_large_helper_group_has_a_first_tier_only_with_the_library(monkeypatch, library):
    assert _tanh_group_is_tiered(monkeypatch)
    monkeypatch.setenv("MESHJIT_KERNEL_LIBRARY", "off")
    assert not _tanh_group_is_tiered(monkeypatch)


def test_the_library_is_found_outside_the_kernel_cache(monkeypatch, library, tmp_path):
    monkeypatch.setenv("MESHJIT_CACHE_DIR", str(tmp_path / "empty"))
    assert all(op_library._find(helper) is not None for helper in op_library.ENTRIES)
    assert not any(str(tmp_path) in directory for directory in op_library.directories())


def test_an_unwritable_package_tree_falls_back_to_the_user_cache(monkeypatch, tmp_path):
    blocked = tmp_path / "site-packages"
    blocked.write_text("")  # NOTE: a file where the directory would go: unwritable even for root
    monkeypatch.delenv("MESHJIT_KERNEL_LIBRARY", raising=False)
    monkeypatch.setattr(op_library, "_PACKAGED", str(blocked / "kernel_library"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user"))
    request = op_library.request("_tanh_f32")
    assert request["path"].startswith(str(tmp_path / "user" / "meshjit-kernel-library"))
    assert os.path.exists(request["path"]) and request["stem"].startswith(os.path.dirname(request["path"]))


def test_a_changed_helper_finds_no_stale_object(monkeypatch, library, tmp_path):
    helper = "_tanh_f32"
    assert op_library._find(helper) is not None
    changed = op_library.SOURCES[helper].replace("def _tanh_f32(x):", "def _tanh_f32(x):\n    x = x + 0.0", 1)
    assert changed != op_library.SOURCES[helper]
    monkeypatch.setitem(op_library.SOURCES, helper, changed)
    op_library._digests.cache_clear()
    try:
        assert op_library._find(helper) is None
    finally:
        monkeypatch.undo()
        op_library._digests.cache_clear()


class _Recording:
    """A compile service that records what it is asked and compiles nothing."""

    closed = False

    def __init__(self):
        self.submitted = []

    def submit(self, request, priority):
        self.submitted.append((request, priority))
        return compile_service.Job(request, priority)


def test_a_missing_entry_is_built_by_the_workers_first(monkeypatch, tmp_path):
    monkeypatch.setenv("MESHJIT_KERNEL_LIBRARY", str(tmp_path / "library"))
    monkeypatch.setenv("MESHJIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MESHJIT_COMPILE", "background")
    recording = _Recording()
    previous = compile_service.replace_service(recording)
    try:
        x = np.ones((256, 256), np.float32)
        assert not tiered_steps(jax.jit(lambda x: jnp.tanh(x * 5.0) - 1), x)  # NOTE: a program no other test builds
    finally:
        compile_service.replace_service(previous)
    library = [(request, priority) for request, priority in recording.submitted
               if request["path"].startswith(str(tmp_path / "library"))]
    assert [request["entry"] for request, _ in library] == ["library_tanh_f32"]
    kernels = [priority for request, priority in recording.submitted if (request, priority) not in library]
    assert kernels and all(library[0][1] < priority for priority in kernels)


def test_no_library_without_numbas_compiler(monkeypatch, library):
    monkeypatch.setenv("NUMBA_DISABLE_JIT", "1")
    assert op_library.native("_tanh_f32") is None and op_library.runner("_tanh_f32") is None


# operands that repeat one row (layer norm's gamma and beta), a scalar, a column: rows of 256
# or more run one library call each, no operand copied to the whole shape but the column
BROADCASTS = {
    "fma rows": (lambda x, row, column: x * row + row[::-1], (np.float32,)),
    "fma scalar and column": (lambda x, row, column: x * 3.0 + column, (np.float32, np.float64)),
    "fma of a row and column": (lambda x, row, column: jnp.tanh(x) * row + column, (np.float64,)),
    "atan2 row and column": (lambda x, row, column: jnp.arctan2(column * 2, row), (np.float32,)),
}


@pytest.mark.parametrize("name", list(BROADCASTS))
@pytest.mark.parametrize("width", [320, 100])
def test_broadcast_operands_give_the_kernels_bits(monkeypatch, library, name, width):
    program, dtypes = BROADCASTS[name]
    by_rows = []
    run_by_rows = op_library._run_by_rows
    monkeypatch.setattr(op_library, "_run_by_rows", lambda *args: by_rows.append(1) or run_by_rows(*args))
    for dtype in map(np.dtype, dtypes):
        if dtype == np.float64:
            jax.config.update("jax_enable_x64", True)
        rng = np.random.default_rng(width)
        arguments = [_special(dtype, rng, shape) for shape in ((3, 300, width), (width,), (300, 1))]
        first, kernel = _both_tiers(monkeypatch, program, arguments)
        for a, b in zip(first, kernel):
            assert a.dtype == b.dtype == dtype and a.shape == b.shape and bits(a) == bits(b)
    assert bool(by_rows) == (width >= op_library._ROW_MIN)


@pytest.mark.parametrize("name, helper", CASES, ids=[f"{name}-{op_library.ENTRIES[helper][2]}" for name, helper in CASES])
def test_an_entry_writing_into_an_operand_gives_the_same_bits(library, name, helper):
    """The first tier passes a dying operand as ``out``: each entry's in-place loops (one per
    operand) give what it writes into a fresh array."""
    _, arity, dtype = op_library.ENTRIES[helper]
    rng = np.random.default_rng(7)
    operands = [_special(np.dtype(op_library._NUMPY[dtype]), rng, (3, 40000)) for _ in range(arity)]
    run = op_library.runner(helper)
    expected = bits(run(*operands))
    for position in range(arity):
        copies = [operand.copy() for operand in operands]
        result = run(*copies, out=copies[position])
        assert result is copies[position] and bits(result) == expected
