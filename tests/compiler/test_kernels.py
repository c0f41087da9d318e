"""The compiled execution path: fused Numba kernels, plan buffers and the kernel cache.

Fused kernels must agree with the reference interpreter element for element (exactly for ints
and bools, to float rounding for floats), including NaN, infinity and overflow edge cases.
"""

from __future__ import annotations

import os
import textwrap

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit import lax
from meshjit.compiler.lowering import codegen, fusion
from meshjit.runtime.plan import FreeStep, KernelStep
from meshjit.sharding import Mesh, NamedSharding, PartitionSpec as P
from python_scripts import run_without_jit



@pytest.fixture
def always_fuse(monkeypatch, tmp_path):
    monkeypatch.setattr(fusion, "FUSION_MIN_ELEMENTS", 0)
    monkeypatch.setenv("MESHJIT_CACHE_DIR", str(tmp_path))
    return tmp_path


SPECIAL = np.array([0.0, -0.0, 1.5, -2.5, 0.5, -0.5, np.nan, np.inf, -np.inf, 3e9, -3e9, 1e-30], np.float32)


def _floats(shape=(4, 12), seed=0):
    values = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    values.flat[:SPECIAL.size] = SPECIAL
    return values


CHAINS = {
    "arithmetic": (lambda a, b: (a * b + a) / (b - 3.0), "float"),
    "sqrt_abs_sign": (lambda a, b: jnp.sqrt(jnp.abs(a)) * jnp.sign(b), "float"),
    "erf_floor_ceil": (lambda a, b: lax.erf(a) + jnp.floor(b) - jnp.ceil(a), "float"),
    "max_min_nan": (lambda a, b: jnp.maximum(a, b) - jnp.minimum(a, b * 2), "float"),
    "compare_select": (lambda a, b: jnp.where(a > b, a * 2, b - 1), "float"),
    "float_to_int": (lambda a, b: (a * 1e9).astype(jnp.int32) + b.astype(jnp.int32), "float"),
    "round_pow": (lambda a, b: lax.round(a * 3) + lax.integer_pow(b, 3), "float"),
    "rsqrt_clamp_like": (lambda a, b: lax.rsqrt(jnp.abs(a) + 1) * jnp.minimum(jnp.maximum(b, -1.0), 1.0), "float"),
    "exp_tanh": (lambda a, b: jnp.exp(a * 0.5) * jnp.tanh(b * 2 + 0.25), "float"),
    "logistic_exp": (lambda a, b: lax.logistic(a * b) * 3 + jnp.exp(-jnp.abs(b)), "float"),
    # (not gelu's 1 + tanh: its cancellation would magnify the reference's own float32 rounding)
    "tanh_cubic": (lambda a, b: a * jnp.tanh(0.7978846 * (a + 0.044715 * a * a * a)) * b, "float"),
    "log_abs": (lambda a, b: jnp.log(a) * b + jnp.log(jnp.abs(b) + 0.5), "float"),
    "int_wrap": (lambda a, b: a * b + a * 7 - b, "int"),
    # square: the family declares its expression (kernel_math), so it fuses in floats and ints
    "square_float": (lambda a, b: lax.square(a) * b - lax.square(b - a), "float"),
    "square_int": (lambda a, b: lax.square(a) + lax.square(b) * 3, "int"),
    "bool_logic": (lambda a, b: jnp.logical_xor(a > 0, b < 0) & ~(a == b), "int"),
    # amounts from 0 to 39: 32 and more shift every bit out
    "unsigned_shifts": (lambda a, b: lax.bitwise_xor(lax.bitwise_or(lax.shift_right_logical(a, b), lax.shift_left(a, b)),
                                                     lax.add(lax.shift_left(b, a), a)), "uint"),
}


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_fused_chain_matches_reference(name, always_fuse):
    function, kind = CHAINS[name]
    if kind == "float":
        a, b = _floats(seed=1), _floats(seed=2)
    elif kind == "uint":
        rng = np.random.default_rng(4)
        a = rng.integers(0, 2**32, (4, 12), dtype=np.uint64).astype(np.uint32)
        b = rng.integers(0, 40, (4, 12)).astype(np.uint32)
    else:
        rng = np.random.default_rng(3)
        a = rng.integers(-2**31, 2**31 - 1, (4, 12), dtype=np.int64).astype(np.int32)
        b = rng.integers(-2**31, 2**31 - 1, (4, 12), dtype=np.int64).astype(np.int32)
    compiled = jax.jit(function).lower(a, b).compile()
    steps = [step.name for step in compiled.runtime_executable().plan.steps if isinstance(step, KernelStep)]
    assert any(name.startswith("fused(") for name in steps), steps
    got = np.asarray(compiled(a, b))
    expected = np.asarray(compiled.run_reference(a, b))
    np.testing.assert_allclose(got, expected, rtol=2e-6, atol=0, equal_nan=True)
    if name.startswith("square"):
        assert any(step.startswith("fused(") and "square" in step for step in steps), steps
    if kind == "uint":
        fused = [name for name in steps if name.startswith("fused(")]
        assert fused and "shift_right_logical" in fused[0] and "shift_left" in fused[0], steps


def test_sharded_fused_chain_matches_numpy(always_fuse):
    mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))
    sharding = NamedSharding(mesh, P("x", "y"))
    a, b, c = (np.random.default_rng(i).standard_normal((16, 32)).astype(np.float32) for i in range(3))
    placed = [jax.device_put(v, sharding) for v in (a, b, c)]
    f = jax.jit(lambda a, b, c: jnp.tanh(a * b + c) * 2)
    np.testing.assert_allclose(np.asarray(f(*placed)), np.tanh(a * b + c) * 2, rtol=1e-6, atol=1e-6)


def test_kernel_sources_are_written_to_the_cache_directory(always_fuse, monkeypatch):
    monkeypatch.setattr(codegen, "_LOADED", {})  # NOTE: a kernel an earlier test loaded is not written again
    jax.jit(lambda a, b: a * b + a)(np.ones((4, 4), np.float32), np.ones((4, 4), np.float32))
    files = os.listdir(always_fuse / "kernels")
    assert any(name.startswith("fused_") and name.endswith(".py") for name in files)


def test_replicated_values_are_computed_once():
    mesh = Mesh(np.array(jax.devices()), ("x",))
    replicated = jax.device_put(np.arange(8.0, dtype=np.float32), NamedSharding(mesh, P()))
    out = jax.jit(lambda v: v * 3)(replicated)
    assert out.sharding.is_fully_replicated
    assert out._blocks.shape[0] == 1  # one block shared by all 8 devices
    np.testing.assert_array_equal(np.asarray(out), np.arange(8.0) * 3)


def test_buffers_are_freed_after_their_last_use():
    mesh = Mesh(np.array(jax.devices()), ("x",))
    sharding = NamedSharding(mesh, P("x"))
    a = jax.device_put(np.ones(64, np.float32), sharding)
    plan = jax.jit(lambda a: jnp.exp(jnp.exp(a) + 1) * 2).lower(a).compile().runtime_executable().plan
    freed = [slot for step in plan.steps if isinstance(step, FreeStep) for slot in step.slots]
    assert freed, plan.steps
    assert not set(freed) & set(plan.result_slots)


def test_donated_arguments_are_deleted():
    f = jax.jit(lambda x, y: x * 2 + y, donate_argnums=0)
    x = jax.device_put(np.ones(4, np.float32))
    y = jax.device_put(np.ones(4, np.float32))
    np.testing.assert_array_equal(np.asarray(f(x, y)), np.full(4, 3.0))
    assert x.is_deleted() and not y.is_deleted()
    with pytest.raises(RuntimeError, match="deleted"):
        np.asarray(x)


def test_kernels_run_with_numba_jit_disabled(tmp_path):
    script = textwrap.dedent("""
        import numpy as np
        import meshjit as jax, meshjit.numpy as jnp
        from meshjit.compiler.lowering import fusion
        fusion.FUSION_MIN_ELEMENTS = 0
        a = np.linspace(-3, 3, 48, dtype=np.float32).reshape(4, 12)
        f = jax.jit(lambda a: jnp.where(a > 0, jnp.sqrt(jnp.abs(a)) * 2, a - 1).astype(jnp.int32))
        expected = np.where(a > 0, np.sqrt(np.abs(a)) * 2, a - 1).astype(np.int32)
        assert (np.asarray(f(a)) == expected).all()
        print("ok")
    """)
    run_without_jit(script, tmp_path)


def test_parallel_kernels_match_reference(always_fuse, monkeypatch):
    monkeypatch.setattr(fusion, "PARALLEL_MIN_ELEMENTS", 0)
    mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))
    a = jax.device_put(_floats((8, 24), seed=5), NamedSharding(mesh, P("x", None)))
    b = jax.device_put(_floats((8, 24), seed=6), NamedSharding(mesh, P()))
    compiled = jax.jit(lambda a, b: jnp.maximum(a * b, b - 1.0) + jnp.sqrt(jnp.abs(a))).lower(a, b).compile()
    np.testing.assert_allclose(np.asarray(compiled(a, b)), np.asarray(compiled.run_reference(a, b)),
                               rtol=2e-6, equal_nan=True)


def test_fused_division_by_zero_follows_ieee(always_fuse):
    a = np.array([[1.0, -1.0, 0.0, np.nan]] * 4, np.float32)
    b = np.zeros((4, 4), np.float32)
    compiled = jax.jit(lambda a, b: (a + 1.0) / b - a / (b * 2.0)).lower(a, b).compile()
    assert any(isinstance(step, KernelStep) and step.name.startswith("fused(") for step in compiled.runtime_executable().plan.steps)
    with np.errstate(all="ignore"):
        expected = (a + 1) / b - a / (b * 2)
    np.testing.assert_array_equal(np.asarray(compiled(a, b)), expected)


@pytest.mark.parametrize("threads_min", [None, 0])
def test_kernels_launched_through_their_native_entry_match_the_array_calls(always_fuse, monkeypatch, threads_min):
    """launch.py calls a kernel's object code with the arrays as (address, dims) words it works
    out itself; the same kernels called with the arrays (kernel_objects' own flattening) must
    give the same bits: elementwise with inputs broadcast along mesh axes, a rows kernel with
    scratch rows (softmax), a columns kernel (a sum over the leading dim), split over the
    threads or not."""
    from meshjit.compiler.lowering import launch
    if threads_min is not None:
        monkeypatch.setattr(fusion, "PARALLEL_MIN_ELEMENTS", threads_min)
    mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))
    a = jax.device_put(_floats((8, 96), seed=1), NamedSharding(mesh, P("x", "y")))
    b = jax.device_put(_floats((8, 96), seed=2), NamedSharding(mesh, P(None, "y")))
    c = jax.device_put(_floats((8, 96), seed=3), NamedSharding(mesh, P()))

    def program(a, b, c):
        return (jnp.tanh(a * b + c) - b, jax.nn.softmax(a * c, axis=-1), jnp.sum(a * b, axis=0))

    native = [np.asarray(result) for result in jax.jit(program)(a, b, c)]
    original = launch._layout

    def without_native(*arguments):
        layout = original(*arguments)
        assert layout.native is not None, "the kernel has object code: the native entry should be used"
        layout.native = None
        return layout

    monkeypatch.setattr(launch, "_layout", without_native)
    called = [np.asarray(result) for result in jax.jit(lambda a, b, c: program(a, b, c))(a, b, c)]
    for got, expected in zip(native, called):
        np.testing.assert_array_equal(got, expected)
    with np.errstate(all="ignore"):
        expected = np.tanh(np.asarray(a) * np.asarray(b) + np.asarray(c)) - np.asarray(b)
    np.testing.assert_allclose(native[0], expected, rtol=1e-5, atol=1e-6)


def test_a_chain_fuses_when_its_elements_over_the_local_devices_reach_the_threshold():
    """FUSION_MIN_ELEMENTS counts the elements a step runs: every local device's block."""
    local = (fusion.FUSION_MIN_ELEMENTS // 16, 8)        # half the threshold on one device
    mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))
    x = _floats((2 * local[0], 4 * local[1]), seed=4)

    def chain(a):
        # NOTE: no product added to anything (a fused multiply-add, XLA's contraction, is a
        # kernel at any size) and no float32 exp (a kernel from 1024 elements): both have
        # numpy steps too slow for the threshold to apply
        return jnp.maximum(a + 1.0, 0.5) - a

    def kernel_names(argument):
        plan = jax.jit(chain).lower(argument).compile().runtime_executable().plan
        return [step.name for step in plan.steps if isinstance(step, KernelStep)]

    sharded = jax.device_put(x, NamedSharding(mesh, P("x", "y")))
    assert any(name.startswith("fused(") for name in kernel_names(sharded))
    assert not any(name.startswith("fused(") for name in kernel_names(x[:local[0], :local[1]]))
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(np.asarray(jax.jit(chain)(sharded)), np.maximum(x + 1, 0.5) - x, rtol=1e-5)


def test_a_fused_output_keeps_only_the_leading_positions_its_inputs_vary_along(always_fuse):
    """A kernel serves every leading position its inputs vary along; an output computed from
    inputs that are the same along a mesh axis is the same there, and the step returns it with
    that leading dim 1, so that what reads it does not work on copies. Here a mask made from an
    input that varies along x only is fused with the partial sums (over y) of a matmul (the
    training step's dropout after its attention projection)."""
    from meshjit.runtime.plan_function import compile_plan
    mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))
    x = jax.device_put(_floats((8, 32), seed=7), NamedSharding(mesh, P("x", "y")))
    w = jax.device_put(_floats((32, 24), seed=8) * 0.1, NamedSharding(mesh, P("y", None)))
    a = jax.device_put(_floats((8, 24), seed=9), NamedSharding(mesh, P("x", None)))

    def program(x, w, a):
        mask = (a * 2.0 - 1.0) < 0.5
        return jnp.where(mask, (x @ w) / 0.9, 0.0), mask

    compiled = jax.jit(program).lower(x, w, a).compile()
    executable = compiled.runtime_executable()
    lead_shapes = []
    for step in executable.plan.steps:
        if isinstance(step, KernelStep) and step.name.startswith("fused("):
            def recorded(*buffers, function=step.function):
                outputs = function(*buffers)
                lead_shapes.append(sorted(output.shape[:2] for output in outputs))
                return outputs

            object.__setattr__(step, "function", recorded)
    executable._run_plan = compile_plan(executable.plan)   # made again, with the recording kernels
    got, mask = (np.asarray(result) for result in compiled(x, w, a))
    with np.errstate(all="ignore"):
        expected_mask = (np.asarray(a) * 2.0 - 1.0) < 0.5
        expected = np.where(expected_mask, (np.asarray(x) @ np.asarray(w)) / np.float32(0.9), 0.0)
    np.testing.assert_array_equal(mask, expected_mask)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    assert [(2, 1), (2, 4)] in lead_shapes, lead_shapes
