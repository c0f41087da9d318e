"""jit's dispatch fast path (a call whose positional arguments are leaves it has seen, keyed on
their signatures): it fires when it should, gives what the full path gives, and falls back to
the full path (retracing, or raising as before) on anything it has not seen."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from meshjit.compiler.sharding.sharding_types import use_abstract_mesh
from meshjit.jit_api import Jitted

import meshjit as jax
import meshjit.numpy as jnp
from meshjit.sharding import NamedSharding, SingleDeviceSharding
from meshjit.sharding import PartitionSpec as P

pytestmark = pytest.mark.usefixtures("restore_runtime_state")

A = np.arange(64, dtype=np.float32).reshape(8, 8)
B = np.ones((8, 8), np.float32)


class Calls:
    """Per jitted function: the calls that missed the fast path (``slow``) and the traces."""

    def __init__(self):
        self.slow: dict = {}
        self.traced: dict = {}

    def of(self, function) -> dict:
        return {"slow": self.slow.get(function, 0), "traced": self.traced.get(function, 0)}


@pytest.fixture
def calls(monkeypatch):
    counts = Calls()
    slow, trace = Jitted._call, Jitted._trace

    def counting_call(self, args, kwargs):
        counts.slow[self] = counts.slow.get(self, 0) + 1
        return slow(self, args, kwargs)

    def counting_trace(self, *args):
        counts.traced[self] = counts.traced.get(self, 0) + 1
        return trace(self, *args)

    monkeypatch.setattr(Jitted, "_call", counting_call)
    monkeypatch.setattr(Jitted, "_trace", counting_trace)
    return counts


def fresh_add():
    """A new function each time: jit's caches belong to the function (as JAX's), and each test
    counts its own traces."""

    def add(a, b):
        return a + b

    return add


def add(a, b):
    return a + b


def same_array(got, want) -> None:
    """``got`` is what ``want`` is: value, dtype, sharding, commitment, weak type, read-only."""
    assert (got.shape, got.dtype, got.sharding, got.committed, got.weak_type) == \
           (want.shape, want.dtype, want.sharding, want.committed, want.weak_type)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert not np.asarray(got).flags.writeable
    assert all(not shard.data._blocks.flags.writeable for shard in got.addressable_shards)


def test_a_repeated_call_takes_the_fast_path_and_gives_what_the_full_path_gives(calls):
    f = jax.jit(fresh_add())
    a, b = jnp.asarray(A), jnp.asarray(B)
    first = f(a, b)
    assert calls.of(f) == {"slow": 1, "traced": 1}
    for _ in range(3):
        same_array(f(a, b), first)
    assert calls.of(f) == {"slow": 1, "traced": 1}
    # a result feeds the next call on the fast path too
    same_array(f(f(a, b), b), jax.jit(fresh_add())(A + B, B))
    assert calls.of(f)["slow"] == 1


def test_the_fast_path_on_sharded_arrays_keeps_the_layout(calls, mesh_2x4):
    sharding = NamedSharding(mesh_2x4, P("x", "y"))
    a, b = jax.device_put(A, sharding), jax.device_put(B, sharding)
    f = jax.jit(lambda a, b: (a * b, jnp.sum(a, axis=0)))
    first = f(a, b)
    again = f(a, b)
    assert calls.of(f)["slow"] == 1 and isinstance(again, tuple)
    for got, want in zip(again, first):
        same_array(got, want)
    assert again[0].sharding == sharding
    assert [shard.data.shape for shard in again[0].addressable_shards] == [(4, 2)] * 8


def test_numpy_arrays_and_scalars_take_the_fast_path(calls):
    f = jax.jit(lambda a, scale, offset: a * scale + offset)
    first = f(A, 2.0, 1)
    same_array(f(A, 3.0, 2), jax.jit(lambda a: a * 3.0 + 2)(A))
    same_array(f(A, 2.0, 1), first)
    assert calls.of(f)["slow"] == 1
    # a bool is its own kind of scalar, not an int
    f(A, 2.0, True)
    assert calls.of(f)["slow"] == 2


def test_numpy_scalars_take_the_fast_path_by_their_type(calls):
    f = jax.jit(lambda a, scale: a * scale)
    assert f(A, np.float32(2)).dtype == np.float32
    same_array(f(A, np.float32(3)), jax.jit(lambda a: a * np.float32(3))(A))
    assert calls.of(f)["slow"] == 1
    assert f(np.arange(3), np.int32(2)).dtype == np.int32
    assert calls.of(f)["slow"] == 2


def test_an_object_that_forwards_attributes_to_an_array_is_not_taken_for_it(calls):
    class Forwarding:
        """Passes for its Array in attribute lookups, but is not an Array."""

        def __init__(self, array):
            self.array = array

        def __getattr__(self, name):
            return getattr(self.array, name)

        def __array__(self, dtype=None, copy=None):
            return np.asarray(self.array, dtype=dtype)

    on_three = jax.device_put(A, jax.devices()[3])
    f = jax.jit(lambda a: a + 1)
    assert f(on_three).sharding == SingleDeviceSharding(jax.devices()[3])
    # the full path sees an uncommitted array-like, which runs on the default device
    result = f(Forwarding(on_three))
    assert calls.of(f)["slow"] == 2
    assert result.sharding == SingleDeviceSharding(jax.devices()[0]) and not result.committed
    np.testing.assert_array_equal(np.asarray(result), A + 1)


@pytest.mark.parametrize("change", [
    "shape", "dtype", "committed", "device", "weak type", "numpy for Array", "tuple argument",
])
def test_a_different_signature_misses_the_fast_path_and_retraces(calls, change):
    f = jax.jit(fresh_add())
    a, b = jnp.asarray(A), jnp.asarray(B)
    f(a, b)
    other = {
        "shape": (jnp.asarray(A[:4]), jnp.asarray(B[:4])),
        "dtype": (jnp.asarray(A.astype(np.int32)), jnp.asarray(B.astype(np.int32))),
        "committed": (jax.device_put(A, jax.devices()[0]), b),
        "device": (jax.device_put(A, jax.devices()[3]), b),
        "weak type": (jnp.asarray(2.0), b),
        "numpy for Array": (A, b),
    }.get(change)
    if change == "tuple argument":
        g = jax.jit(lambda pair, c: pair[0] + pair[1] + c)
        g((a, b), b)
        result = g((a, b), b)
        np.testing.assert_array_equal(np.asarray(result), A + 2 * B)
        # not on the fast path, but the flattened arguments' key spares the trace
        assert calls.of(g) == {"slow": 2, "traced": 1}
        return
    result = f(*other)
    # NOTE: a numpy array and an uncommitted Array trace alike (the full cache shares them)
    assert calls.of(f) == {"slow": 2, "traced": 1 if change == "numpy for Array" else 2}
    expected = np.asarray(other[0]) + np.asarray(other[1])
    np.testing.assert_array_equal(np.asarray(result), expected)
    if change == "device":
        assert result.sharding == SingleDeviceSharding(jax.devices()[3]) and result.committed
    # the first signature still hits
    f(a, b)
    assert calls.of(f)["slow"] == 2


def test_incompatible_devices_still_raise_after_a_fast_call():
    f = jax.jit(fresh_add())
    devices = jax.devices()
    on_three = jax.device_put(A, devices[3])
    f(on_three, jax.device_put(B, devices[3]))
    f(on_three, jax.device_put(B, devices[3]))
    with pytest.raises(ValueError, match=r"Received incompatible devices for jitted computation"):
        f(on_three, jax.device_put(B, devices[5]))


def test_a_sharding_mismatch_with_in_shardings_still_raises_after_a_fast_call(mesh_2x4):
    rows = NamedSharding(mesh_2x4, P("x", None))
    f = jax.jit(add, in_shardings=rows)
    a = jax.device_put(A, rows)
    f(a, a)
    f(a, a)
    with pytest.raises(ValueError, match="Sharding passed to jit does not match the sharding on the respective arg"):
        f(jax.device_put(A, NamedSharding(mesh_2x4, P(None, "y"))), a)


def test_a_deleted_array_raises_on_the_fast_path_as_on_the_full_path(mesh_8):
    for sharding in (None, NamedSharding(mesh_8, P("x"))):
        f = jax.jit(fresh_add())
        a = jax.device_put(A, sharding)
        f(a, a)
        a.delete()
        with pytest.raises(RuntimeError, match="Array has been deleted"):
            f(a, a)
        with pytest.raises(RuntimeError, match="Array has been deleted"):
            jax.jit(fresh_add())(a, a)


def test_donated_arguments_are_deleted_on_the_fast_path(calls, mesh_8):
    for sharding in (None, NamedSharding(mesh_8, P("x"))):
        f = jax.jit(add, donate_argnums=0)
        for _ in range(3):
            donated = jax.device_put(A, sharding)
            result = f(donated, jax.device_put(B, sharding))
            assert donated.is_deleted()
            np.testing.assert_array_equal(np.asarray(result), A + B)
        assert calls.of(f)["slow"] == 1


def test_a_config_change_misses_the_fast_path_and_x64_retraces(calls):
    f = jax.jit(lambda a: a + np.float64(1.5) * np.ones(8))
    a = jnp.asarray(A[0])
    assert f(a).dtype == np.float32
    jax.config.update("jax_enable_x64", True)
    assert f(a).dtype == np.float64
    jax.config.update("jax_enable_x64", False)
    assert f(a).dtype == np.float32
    assert calls.of(f)["slow"] == 3


def test_check_partitioning_turned_on_after_a_fast_call_checks_the_next_call(monkeypatch, mesh_8):
    from meshjit import jit_api

    checked = []
    real = jit_api.run_checked

    def counting(compiled, leaves):
        checked.append(compiled)
        return real(compiled, leaves)

    monkeypatch.setattr(jit_api, "run_checked", counting)
    a = jax.device_put(A, NamedSharding(mesh_8, P("x")))
    f = jax.jit(fresh_add())
    f(a, a)
    f(a, a)
    assert not checked
    jax.config.update("check_partitioning", True)
    try:
        f(a, a)
        f(a, a)
    finally:
        jax.config.update("check_partitioning", False)
    assert len(checked) == 2
    f(a, a)
    assert len(checked) == 2


def test_the_abstract_mesh_in_context_is_part_of_the_key(calls, mesh_2x4, mesh_8):
    f = jax.jit(lambda a: a * 2)
    a = jnp.asarray(A)
    f(a)
    with use_abstract_mesh(mesh_2x4.abstract_mesh):
        f(a)
        f(a)
    f(a)
    assert calls.of(f) == {"slow": 2, "traced": 2}
    with jax.set_mesh(mesh_8):
        f(a)
        f(a)
    with jax.set_mesh(mesh_2x4):  # the abstract mesh use_abstract_mesh had
        f(a)
    assert calls.of(f)["slow"] == 3


def test_keyword_and_static_arguments_take_the_full_path(calls):
    f = jax.jit(fresh_add())
    a = jnp.asarray(A)
    f(a, b=a)
    f(a, b=a)
    assert calls.of(f) == {"slow": 2, "traced": 1}
    g = jax.jit(lambda a, n: a * n, static_argnums=1)
    for _ in range(2):
        np.testing.assert_array_equal(np.asarray(g(a, 2)), A * 2)
        np.testing.assert_array_equal(np.asarray(g(a, 3)), A * 3)
    assert calls.of(g) == {"slow": 4, "traced": 2}


def test_a_numpy_argument_returned_as_is_is_copied_and_stays_writeable():
    f = jax.jit(lambda x: x)
    for _ in range(2):
        host = np.arange(4, dtype=np.float32)
        result = f(host)
        assert host.flags.writeable
        host[0] = 7
        np.testing.assert_array_equal(np.asarray(result), [0, 1, 2, 3])


def test_an_array_returned_as_is_keeps_its_value():
    f = jax.jit(lambda x: x)
    a = jnp.asarray(A)
    for _ in range(2):
        same_array(f(a), a)


def test_the_eager_operators_take_the_fast_path(calls, mesh_8):
    from meshjit import _dispatch

    a = jax.device_put(A, NamedSharding(mesh_8, P("x")))
    for _ in range(3):
        result = a + a
        scaled = a * 2.0
    # NOTE: at most the first call of each operator program is slow (none when an earlier test
    # ran the same signature)
    assert calls.of(_dispatch._OPERATOR_PROGRAMS["__add__"])["slow"] <= 1
    assert calls.of(_dispatch._OPERATOR_PROGRAMS["__mul__"])["slow"] <= 1
    np.testing.assert_array_equal(np.asarray(result), 2 * A)
    np.testing.assert_array_equal(np.asarray(scaled), 2 * A)
    assert result.sharding == a.sharding


def test_plans_raise_no_floating_point_warnings_and_restore_numpy_s_state():
    before = np.geterr()
    f = jax.jit(lambda a, b: (a * b, a / (b - b), jnp.log(b - a - a)))
    big = jnp.asarray(np.full(4, 3e38, np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(2):
            product, quotient, logarithm = f(big, big)
    assert np.isinf(np.asarray(product)).all() and np.isinf(np.asarray(quotient)).all()
    assert np.isnan(np.asarray(logarithm)).all()
    assert np.geterr() == before
    with pytest.warns(RuntimeWarning, match="overflow"):
        np.full(2, 3e38, np.float32) * np.float32(10)


def test_captured_constants_are_passed_on_every_fast_call(calls, mesh_8):
    for sharding in (None, NamedSharding(mesh_8, P("x"))):
        captured = jax.device_put(B * 3, sharding)
        f = jax.jit(lambda a: a + captured, donate_argnums=0)
        for _ in range(3):
            np.testing.assert_array_equal(np.asarray(f(jax.device_put(A, sharding))), A + 3)
        assert calls.of(f)["slow"] == 1 and not captured.is_deleted()


def test_a_compiled_program_checks_each_new_argument_signature_once(monkeypatch):
    from meshjit import _stages

    a = jnp.asarray(A)
    compiled = jax.jit(fresh_add()).lower(a, a).compile()
    checks = []
    real = _stages.Compiled._check_arguments

    def counting(self, leaves, treedef):
        checks.append(len(leaves))
        return real(self, leaves, treedef)

    monkeypatch.setattr(_stages.Compiled, "_check_arguments", counting)
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(compiled(a, a)), 2 * A)
    compiled(A, B)  # numpy arrays of the same type: checked once more, then accepted
    compiled(A, B)
    assert len(checks) == 2
    for _ in range(2):
        with pytest.raises(TypeError, match=r"Compiled argument 0: expected f32\[8,8\], got f32\[4,8\]"):
            compiled(jnp.asarray(A[:4]), a)
        with pytest.raises(TypeError, match="Compiled function called with arguments of structure"):
            compiled((a,), a)
    # without x64 a float64 array is a float32 argument; with it, the same signature is new
    compiled(A.astype(np.float64), a)
    jax.config.update("jax_enable_x64", True)
    with pytest.raises(TypeError, match=r"Compiled argument 0: expected f32\[8,8\], got f64\[8,8\]"):
        compiled(A.astype(np.float64), a)
