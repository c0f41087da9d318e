"""Simulated CPU devices, the device queries, and how the device count is configured."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from meshjit.runtime.devices import CpuDevice

import meshjit

pytestmark = pytest.mark.usefixtures("restore_runtime_state")


def test_eight_cpu_devices_by_default():
    devices = meshjit.devices()
    assert [device.id for device in devices] == list(range(8))
    assert all(isinstance(device, CpuDevice) for device in devices)
    assert meshjit.device_count() == 8


@pytest.mark.parametrize("device_id", [0, 3, 7])
def test_device_attributes_and_repr(device_id):
    device = meshjit.devices()[device_id]
    assert device.id == device_id
    assert device.platform == "cpu"
    assert device.device_kind == "cpu"
    assert device.process_index == 0
    assert repr(device) == f"CpuDevice(id={device_id})"  # JAX's repr of a CPU device


def test_devices_are_hashable_values():
    first, again = meshjit.devices()[2], meshjit.devices()[2]
    assert first == again and hash(first) == hash(again)
    assert first != meshjit.devices()[3]
    assert len(set(meshjit.devices())) == 8
    with pytest.raises(AttributeError):
        first.id = 5


def test_single_process_queries():
    assert meshjit.local_devices() == meshjit.devices()
    assert meshjit.local_device_count() == 8
    assert meshjit.local_devices(process_index=0) == meshjit.devices()
    assert meshjit.process_index() == 0
    assert meshjit.process_count() == 1


def test_two_process_queries(two_processes):
    assert [device.id for device in meshjit.local_devices()] == [0, 1, 2, 3]
    assert [device.id for device in meshjit.local_devices(process_index=1)] == [4, 5, 6, 7]
    assert [device.process_index for device in meshjit.devices()] == [0] * 4 + [1] * 4
    assert (meshjit.device_count(), meshjit.local_device_count()) == (8, 4)
    assert (meshjit.process_index(), meshjit.process_count()) == (0, 2)


def test_device_memories():
    device = meshjit.devices()[0]
    assert device.default_memory() == "device"
    assert set(device.addressable_memories()) == {"device", "pinned_host", "unpinned_host"}


def test_device_count_is_fixed_once_devices_exist():
    meshjit.devices()
    with pytest.raises(RuntimeError, match="num_cpu_devices.*cannot change"):
        meshjit.config.update("num_cpu_devices", 4)
    meshjit.config.update("num_cpu_devices", 8)  # setting the same value is harmless


@pytest.mark.parametrize("name, value, error", [
    ("num_cpu_devices", 0, ValueError),
    ("num_cpu_devices", "8", ValueError),
    ("num_cpu_devices", True, ValueError),
    ("jax_enable_x64", 1, ValueError),
    ("jax_no_such_option", True, AttributeError),
    # JAX 0.10.2: ValueError "new int config value must be None or of type int"
    ("jax_num_cpu_devices", "x", ValueError),
    ("jax_num_cpu_devices", 2.0, ValueError),
    # JAX 0.10.2: ValueError "new string config value must be None or of type str"
    ("jax_platforms", 3, ValueError),
    # JAX 0.10.2 raises RuntimeError ("Unable to initialize backend 'tpu'", "Unknown backend gpu")
    # at first device use; meshjit raises it at once.
    ("jax_platforms", "tpu", RuntimeError),
    ("jax_platforms", "cpu,gpu", RuntimeError),
    ("jax_platforms", "CPU", RuntimeError),
    ("jax_platform_name", "gpu", RuntimeError),
    ("jax_platform_name", 3, RuntimeError),
])
def test_config_update_rejects_bad_values(name, value, error):
    with pytest.raises(error, match=name):
        meshjit.config.update(name, value)


def test_jax_num_cpu_devices_is_fixed_once_devices_exist_as_in_jax():
    meshjit.devices()
    with pytest.raises(RuntimeError, match="jax_num_cpu_devices.*cannot change"):  # JAX: RuntimeError
        meshjit.config.update("jax_num_cpu_devices", meshjit.device_count() + 1)
    meshjit.config.update("jax_num_cpu_devices", meshjit.device_count())  # the same value is harmless
    assert meshjit.config.jax_num_cpu_devices == meshjit.config.num_cpu_devices == meshjit.device_count()


@pytest.mark.parametrize("name, value", [
    ("jax_platforms", "cpu"), ("jax_platforms", ""), ("jax_platforms", None),
    ("jax_platform_name", "cpu"), ("jax_platform_name", None),
])
def test_the_cpu_platform_is_accepted(name, value):
    try:
        meshjit.config.update(name, value)
        assert getattr(meshjit.config, name) == value
        assert meshjit.config.read(name) == value
    finally:
        meshjit.config.update(name, None)


def test_platform_errors_name_the_backend():
    with pytest.raises(RuntimeError, match="backend 'gpu'.*only 'cpu'"):
        meshjit.config.update("jax_platforms", "cpu,gpu")
    with pytest.raises(RuntimeError, match="backend 'cuda'.*available backends are \\['cpu'\\]"):
        meshjit.config.update("jax_platform_name", "cuda")
    assert meshjit.config.jax_platforms is None  # a rejected value leaves the setting alone


def test_attribute_reads_of_jax_settings():
    assert meshjit.config.jax_enable_x64 is False  # as jax.config.jax_enable_x64
    assert meshjit.config.jax_platforms is None  # JAX's default
    with pytest.raises(AttributeError, match="jax_no_such_option"):
        meshjit.config.jax_no_such_option  # noqa: B018


def run_python(code: str, **environment) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if key != "MESHJIT_NUM_DEVICES"}
    env.update(environment)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60,
                          check=False)


def test_device_count_from_environment_variable():
    result = run_python("import meshjit; print(meshjit.device_count(), meshjit.devices()[-1])",
                        MESHJIT_NUM_DEVICES="4")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["4", "cpu:3"]


def test_device_count_from_config_before_first_use():
    code = ("import meshjit; meshjit.config.update('num_cpu_devices', 2); "
            "print(meshjit.device_count(), meshjit.config.num_cpu_devices)")
    result = run_python(code, MESHJIT_NUM_DEVICES="4")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["2", "2"]


def test_bad_device_count_in_environment_names_the_variable():
    result = run_python("import meshjit; meshjit.devices()", MESHJIT_NUM_DEVICES="zero")
    assert result.returncode != 0
    assert "MESHJIT_NUM_DEVICES" in result.stderr


def test_jax_num_cpu_devices_sets_the_device_count_before_first_use():
    code = ("import meshjit as jax; jax.config.update('jax_platforms', 'cpu'); "
            "jax.config.update('jax_num_cpu_devices', 4); "
            "print(jax.device_count(), jax.config.jax_num_cpu_devices, jax.config.num_cpu_devices)")
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["4", "4", "4"]


def test_unsupported_platform_in_the_environment_names_the_variable():
    result = run_python("import meshjit; meshjit.config.jax_platforms", JAX_PLATFORMS="cuda")
    assert result.returncode != 0
    assert "RuntimeError: environment variable JAX_PLATFORMS: Unable to initialize backend 'cuda'" in result.stderr
