"""JAX's commitment rules (checked side by side with JAX 0.10.2): committed inputs decide where a
program runs, disagreeing ones raise ValueError, and jit never silently moves a committed
argument to a different in_shardings layout."""

from __future__ import annotations

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit.sharding import NamedSharding, SingleDeviceSharding
from meshjit.sharding import PartitionSpec as P

pytestmark = pytest.mark.usefixtures("restore_runtime_state")

A = np.arange(64, dtype=np.float32).reshape(8, 8)
B = np.ones((8, 8), np.float32)


def add(a, b):
    return a + b


def test_a_committed_single_device_input_decides_the_device():
    devices = jax.devices()
    result = jax.jit(add)(jax.device_put(A, devices[3]), jnp.asarray(B))
    assert result.sharding == SingleDeviceSharding(devices[3]) and result.committed
    np.testing.assert_array_equal(np.asarray(result), A + B)
    # an uncommitted result (nothing placed its program) follows a committed partner
    uncommitted = jax.jit(lambda a: a * 2)(A)
    assert not uncommitted.committed and uncommitted.sharding == SingleDeviceSharding(devices[0])
    assert jax.jit(add)(uncommitted, jax.device_put(B, devices[5])).sharding == SingleDeviceSharding(devices[5])


def test_uncommitted_values_stay_uncommitted():
    assert not jnp.asarray(A).committed
    assert not jnp.zeros(3).committed
    assert not (jnp.asarray(A) + 1).committed
    assert not jax.jit(add)(A, B).committed


def test_committed_inputs_on_different_devices_raise():
    devices = jax.devices()
    with pytest.raises(ValueError, match=r"Received incompatible devices for jitted computation\. Got argument a of "
                                         r"add with shape float32\[8,8\] and with device ids \[3\] on platform CPU and "
                                         r"argument b of add with shape float32\[8,8\] and with device ids \[5\]"):
        jax.jit(add)(jax.device_put(A, devices[3]), jax.device_put(B, devices[5]))
    with pytest.raises(ValueError, match=r"argument t\[0\] of .* and argument t\[1\] of"):
        jax.jit(lambda t: t[0] + t[1])((jax.device_put(A, devices[3]), jax.device_put(B, devices[5])))


def test_a_sharded_and_a_single_device_committed_input_raise(mesh_2x4):
    sharded = jax.device_put(A, NamedSharding(mesh_2x4, P("x", "y")))
    for device in (jax.devices()[3], jax.devices()[0]):
        with pytest.raises(ValueError, match=r"device ids \[0, 1, 2, 3, 4, 5, 6, 7\] on platform CPU and argument b "
                                             rf"of add with shape float32\[8,8\] and with device ids \[{device.id}\]"):
            jax.jit(add)(sharded, jax.device_put(B, device))
    # uncommitted partners follow the sharded one
    assert jax.jit(add)(sharded, jnp.asarray(B)).sharding == sharded.sharding


def test_a_committed_argument_must_match_in_shardings(mesh_2x4):
    wanted = NamedSharding(mesh_2x4, P("y", "x"))
    jitted = jax.jit(add, in_shardings=(wanted, None))
    with pytest.raises(ValueError, match=r"Sharding passed to jit does not match the sharding on the respective arg\. "
                                         r"Got jit sharding: .*P\('y', 'x'\).*\narg sharding: .*P\('x', 'y'\).* for arg "
                                         r"type: float32\[8,8\] \(argument a of add"):
        jitted(jax.device_put(A, NamedSharding(mesh_2x4, P("x", "y"))), B)
    with pytest.raises(ValueError, match="arg sharding: SingleDeviceSharding"):
        jitted(jax.device_put(A, jax.devices()[3]), B)
    # uncommitted arguments are moved, equal layouts pass
    assert jitted(jnp.asarray(A), B).sharding.is_equivalent_to(wanted, 2)
    np.testing.assert_array_equal(np.asarray(jitted(jax.device_put(A, wanted), B)), A + B)
    # P("x") and P("x", None) are the same layout
    rows = jax.jit(lambda a: a * 2, in_shardings=NamedSharding(mesh_2x4, P("x", None)))
    assert rows(jax.device_put(A, NamedSharding(mesh_2x4, P("x")))).committed


def test_replicated_layouts_are_interchangeable(mesh_2x4):
    devices = jax.devices()
    replicated = jax.jit(lambda a: a * 2, in_shardings=NamedSharding(mesh_2x4, P()))
    assert replicated(jax.device_put(A, devices[0])).sharding.is_fully_replicated
    on_two = jax.jit(lambda a: a * 2, in_shardings=SingleDeviceSharding(devices[2]))
    assert on_two(jax.device_put(A, devices[3])).sharding == SingleDeviceSharding(devices[2])
    assert on_two(jnp.asarray(A)).sharding == SingleDeviceSharding(devices[2])


def test_out_shardings_and_inner_shardings_join_the_device_check(mesh_2x4):
    on_three = jax.device_put(A, jax.devices()[3])
    with pytest.raises(ValueError, match=r"device ids \[3\] on platform CPU and explicit output sharding with device "
                                         r"ids \[0, 1, 2, 3, 4, 5, 6, 7\]"):
        jax.jit(lambda a: a * 2, out_shardings=NamedSharding(mesh_2x4, P("x", "y")))(on_three)
    out_on_five = jax.jit(lambda a: a * 2, out_shardings=SingleDeviceSharding(jax.devices()[5]))
    assert out_on_five(A).sharding == SingleDeviceSharding(jax.devices()[5])
    constrained = jax.jit(lambda a: jax.lax.with_sharding_constraint(a * 2, NamedSharding(mesh_2x4, P("x", "y"))))
    with pytest.raises(ValueError, match=r"a sharding inside jit \(with_sharding_constraint or shard_map\)"):
        constrained(on_three)
    assert constrained(A).sharding.is_equivalent_to(NamedSharding(mesh_2x4, P("x", "y")), 2)


def test_eager_ops_follow_the_same_rules(mesh_2x4):
    devices = jax.devices()
    on_three = jax.device_put(A, devices[3])
    for result in (on_three + jnp.asarray(B), jnp.sin(on_three), on_three.sum(), on_three[1:3], on_three.T):
        assert result.sharding == SingleDeviceSharding(devices[3]) and result.committed
    with pytest.raises(ValueError, match=r"Got argument x of add .* device ids \[3\] .* argument y of add .* device "
                                         r"ids \[5\]"):
        on_three + jax.device_put(B, devices[5])
    with pytest.raises(ValueError, match="Received incompatible devices"):
        jax.device_put(A, NamedSharding(mesh_2x4, P("x", "y"))) * on_three
