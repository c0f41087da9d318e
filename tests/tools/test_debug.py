"""meshjit.debug: inspect_array_sharding inside and outside jit, visualize_array_sharding, and
compare_propagation."""

from __future__ import annotations

import numpy as np
import pytest
from meshjit.compiler.partitioning.partition import FullRematerializationWarning
from meshjit.compiler.pipeline import compile_module

import meshjit as jax
from meshjit._inspection import report_inspected_shardings
from meshjit.debug import compare_propagation, inspect_array_sharding, visualize_array_sharding
from meshjit.sharding import NamedSharding, SingleDeviceSharding
from meshjit.sharding import PartitionSpec as P

pytestmark = pytest.mark.usefixtures("restore_runtime_state")


def test_outside_jit_the_callback_gets_the_arrays_sharding(mesh_2x4):
    sharding = NamedSharding(mesh_2x4, P("x", "y"))
    array = jax.device_put(np.zeros((8, 8), np.float32), sharding)
    seen = []
    inspect_array_sharding({"a": array, "b": [array]}, callback=seen.append)
    assert seen == [sharding, sharding]


def test_inside_jit_the_callback_gets_the_propagated_sharding_at_compile_time(mesh_2x4):
    seen = []

    def f(x, w):
        hidden = x @ w
        inspect_array_sharding(hidden, callback=seen.append)
        return jax.numpy.tanh(hidden)

    jitted = jax.jit(f, in_shardings=(NamedSharding(mesh_2x4, P("x", None)), NamedSharding(mesh_2x4, P(None, "y"))))
    lowered = jitted.lower(np.ones((8, 16), np.float32), np.ones((16, 32), np.float32))
    assert seen == []  # NOTE: tracing only records the request
    report_inspected_shardings(compile_module(lowered.module))
    (sharding,) = seen
    assert sharding.spec == P("x", "y") and sharding.mesh.shape == {"x": 2, "y": 4}
    report_inspected_shardings(compile_module(lowered.module))
    assert len(seen) == 1, "each request is answered once"


def test_inside_an_unsharded_jit_the_callback_gets_a_single_device_sharding():
    seen = []

    def f(x):
        inspect_array_sharding(x * 2, callback=seen.append)
        return x

    report_inspected_shardings(compile_module(jax.jit(f).lower(np.ones(4, np.float32)).module))
    assert seen == [SingleDeviceSharding(jax.devices()[0])]


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="callback must be callable"):
        inspect_array_sharding(jax.numpy.zeros(3), callback=None)
    with pytest.raises(TypeError, match="value leaf 0 must be a meshjit Array or a traced array, got ndarray"):
        inspect_array_sharding(np.zeros(3), callback=print)
    with pytest.raises(TypeError, match="expects a meshjit.Array"):
        visualize_array_sharding(np.zeros(3))


def test_visualize_array_sharding_prints_the_device_table(mesh_2x4, capsys):
    visualize_array_sharding(jax.device_put(np.zeros((8, 8), np.float32), NamedSharding(mesh_2x4, P("x", None))),
                             use_color=False)
    assert "CPU 0,1,2,3" in capsys.readouterr().out


def test_compare_propagation_reports_each_strategy(mesh_2x4):
    """%a over "x" and %b over "y" conflict; shardy keeps "x" and gathers %b over "y", gspmd
    keeps "y" (more shards) and cuts %a's "x" shards into "y" tiles (one permute), which moves
    fewer bytes."""
    shardings = (NamedSharding(mesh_2x4, P("x", None)), NamedSharding(mesh_2x4, P("y", None)))
    jitted = jax.jit(lambda a, b: jax.numpy.tanh(a + b), in_shardings=shardings)
    arguments = (np.ones((8, 16), np.float32), np.ones((8, 16), np.float32))
    with pytest.warns(FullRematerializationWarning, match="gathered whole"):
        reports = compare_propagation(jitted, *arguments, strategies=["shardy", "gspmd"])
    assert list(reports) == ["shardy", "gspmd"]
    assert [(record.kind, record.axes) for record in reports["shardy"].collectives] == [("all_gather", ("y",))]
    assert [(record.kind, record.axes) for record in reports["gspmd"].collectives] == [("collective_permute", ("x", "y"))]
    assert reports["gspmd"].total_bytes < reports["shardy"].total_bytes


def test_compare_propagation_takes_a_custom_strategy(mesh_2x4):
    def unchanged(module):
        return module

    x = jax.device_put(np.ones((8, 16), np.float32), NamedSharding(mesh_2x4, P("x", None)))
    reports = compare_propagation(lambda x: x * 2, x, strategies=["shardy", unchanged])
    assert list(reports) == ["shardy", "unchanged"]
    assert reports["shardy"].total_bytes == 0
