"""pjit and maps.mesh (seed 004): the seed's example on a 4 x 8 mesh, GDA and Array inputs, the
output type switch, and bad input."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import meshjit as jax
from meshjit.experimental import maps
from meshjit.experimental.global_device_array import GlobalDeviceArray
from meshjit.experimental.pjit import FROM_GDA, pjit, with_sharding_constraint
from meshjit.sharding import Mesh, NamedSharding
from meshjit.sharding import PartitionSpec as P

pytestmark = pytest.mark.usefixtures("restore_runtime_state")

REPO = Path(__file__).resolve().parents[2]
DATA = np.arange(64, dtype=np.float32).reshape(8, 8)


@pytest.fixture
def output_gda():
    """Set jax_parallel_functions_output_gda for one test (``output_gda(True)``), then restore it."""
    previous = jax.config.read("jax_parallel_functions_output_gda")
    yield lambda value: jax.config.update("jax_parallel_functions_output_gda", value)
    jax.config.update("jax_parallel_functions_output_gda", previous)


def run_python(source: str, **environment) -> list[str]:
    """Run ``source`` in a fresh interpreter (the device count is fixed per process); its stdout lines."""
    env = {key: value for key, value in os.environ.items() if key != "JAX_PARALLEL_FUNCTIONS_OUTPUT_GDA"}
    env.update(environment)
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(source)], check=False, capture_output=True,
                            text=True, env=env, cwd=REPO, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


# The seed's example, verbatim from "# Logical mesh" to the last print, with the set-up it assumes.
SEED_EXAMPLE = """
import numpy as np
import meshjit as jax
from meshjit.experimental.global_device_array import GlobalDeviceArray
from meshjit.experimental.maps import mesh
from meshjit.experimental.pjit import pjit
from meshjit.sharding import Mesh, PartitionSpec as P

jax.config.update('jax_parallel_functions_output_gda', True)
global_mesh = Mesh(np.array(jax.devices()).reshape(4, 8), ('x', 'y'))

# Logical mesh is (hosts, devices)
assert global_mesh.shape == {'x': 4, 'y': 8}

global_input_shape = (64, 32)
mesh_axes = P('x', 'y')

# Dummy example data; in practice we wouldn't necessarily materialize global data
# in a single process.
global_input_data = np.arange(
    np.prod(global_input_shape)).reshape(global_input_shape)

def get_local_data_slice(index):
  # index will be a tuple of slice objects, e.g. (slice(0, 16), slice(0, 4))
  # This method will be called per-local device from the GDA constructor.
  return global_input_data[index]

gda = GlobalDeviceArray.from_callback(
        global_input_shape, global_mesh, mesh_axes, get_local_data_slice)

f = pjit(lambda x: x @ x.T, out_axis_resources = P('y', 'x'))

with mesh(global_mesh.shape, global_mesh.axis_names):
  out = f(gda)

print(type(out))  # GlobalDeviceArray
print(out.shape)  # global shape == (64, 64)
print(out.local_shards[0].data)  # Access the data on a single local device,
                                # e.g. for checkpointing
print(out.local_shards[0].data.shape)  # per-device shape == (8, 16)
print(out.local_shards[0].index) # Numpy-style index into the global array that
                                # this data shard corresponds to

# `out` can be passed to another pjit call, out.local_shards can be used to
# export the data to non-jax systems (e.g. for checkpointing or logging), etc.
expected = (global_input_data @ global_input_data.T).astype(np.int32)
assert out.mesh == global_mesh and out.mesh_axes == P('y', 'x')
assert np.array_equal(np.asarray(out), expected)
with mesh(global_mesh.devices, global_mesh.axis_names):
  again = pjit(lambda x: x + 1, in_axis_resources=P('y', 'x'), out_axis_resources=P('y', 'x'))(out)
assert type(again) is GlobalDeviceArray and np.array_equal(np.asarray(again), expected + 1)
print(len(out.local_shards), len(out.global_shards))
"""


def test_the_seed_example_on_a_4x8_mesh():
    lines = run_python(SEED_EXAMPLE, MESHJIT_NUM_DEVICES="32")
    assert lines[0] == "<class 'meshjit.runtime.global_device_array.GlobalDeviceArray'>"
    assert lines[1] == "(64, 64)"
    assert "(8, 16)" in lines
    assert "(slice(0, 8, None), slice(0, 16, None))" in lines
    assert lines[-1] == "32 32"


def test_the_environment_variable_turns_gda_outputs_on():
    source = """
        import numpy as np
        import meshjit as jax
        from meshjit.experimental.maps import mesh
        from meshjit.experimental.pjit import pjit
        from meshjit.sharding import PartitionSpec as P

        with mesh(np.array(jax.devices()).reshape(2, 4), ('x', 'y')):
            out = pjit(lambda x: x * 2, in_axis_resources=P('x'), out_axis_resources=P('y'))(np.ones((8, 4), np.float32))
        print(type(out).__name__, out.sharding.spec, float(np.asarray(out).sum()))
    """
    assert run_python(source, JAX_PARALLEL_FUNCTIONS_OUTPUT_GDA="true") == ["GlobalDeviceArray P('y',) 64.0"]
    assert run_python(source, JAX_PARALLEL_FUNCTIONS_OUTPUT_GDA="0") == ["Array P('y',) 64.0"]


# -- maps.mesh ---------------------------------------------------------------------------------------
def mesh_of_pjit():
    """The mesh pjit resolves specs against here (raises RuntimeError outside a mesh context)."""
    return pjit(lambda x: x, out_axis_resources=P())(DATA).sharding.mesh


@pytest.mark.parametrize("form", ["devices", "shape tuple", "Mesh.shape"])
def test_maps_mesh_accepts_devices_or_a_shape(mesh_2x4, form):
    first = {"devices": mesh_2x4.devices, "shape tuple": (2, 4), "Mesh.shape": mesh_2x4.shape}[form]
    with maps.mesh(first, mesh_2x4.axis_names) as entered:
        assert entered == mesh_2x4
        assert mesh_of_pjit() == mesh_2x4
    with pytest.raises(RuntimeError, match="outside a mesh context"):
        mesh_of_pjit()


def test_maps_mesh_nests_and_is_the_mesh_class(mesh_2x4, mesh_8):
    assert maps.Mesh is Mesh
    with maps.mesh(mesh_2x4.devices, ("x", "y")):
        with maps.mesh(mesh_8.devices, ("x",)):
            assert mesh_of_pjit() == mesh_8
        assert mesh_of_pjit() == mesh_2x4


@pytest.mark.parametrize("devices, axis_names, text", [
    ({"a": 2, "b": 4}, ("x", "y"), "the shape {'a': 2, 'b': 4} names axes ('a', 'b'), but axis_names is ('x', 'y')"),
    ((4, 4), ("x", "y"), "mesh shape (4, 4) needs 16 devices, but 8 exist"),
    ((2, 4), ("x",), "ndim of its first argument"),
])
def test_maps_mesh_bad_input(devices, axis_names, text):
    with pytest.raises(ValueError) as raised:
        maps.mesh(devices, axis_names)
    assert text in str(raised.value)


# -- pjit ---------------------------------------------------------------------------------------------
def test_gda_and_array_inputs_give_the_same_result(mesh_2x4, output_gda):
    output_gda(False)
    gda = GlobalDeviceArray.from_callback((8, 8), mesh_2x4, P("x", "y"), lambda index: DATA[index])
    array = jax.device_put(DATA, NamedSharding(mesh_2x4, P("y")))
    f = pjit(lambda a, b: a @ b + 1, out_axis_resources=P("x"))
    with mesh_2x4:
        out = f(gda, array)
    assert isinstance(out, jax.Array) and not isinstance(out, GlobalDeviceArray)
    assert out.sharding == NamedSharding(mesh_2x4, P("x"))
    np.testing.assert_allclose(np.asarray(out), DATA @ DATA + 1)


def test_in_axis_resources_lay_out_host_inputs(mesh_2x4, output_gda):
    output_gda(True)
    f = pjit(lambda a, b: (a + b, a * 2), in_axis_resources=(P("x", "y"), None), out_axis_resources=(P("y"), None))
    with maps.mesh(mesh_2x4.devices, mesh_2x4.axis_names):
        total, doubled = f(DATA, np.ones(8, np.float32))
        lowered = f.lower(DATA, np.ones(8, np.float32))
    assert isinstance(total, GlobalDeviceArray) and total.mesh_axes == P("y")
    assert doubled.is_fully_replicated  # None means replicated
    np.testing.assert_allclose(np.asarray(total), DATA + 1)
    np.testing.assert_allclose(np.asarray(doubled), DATA * 2)
    assert "sharding" in lowered.as_text()


def test_gda_outputs_feed_the_next_pjit_and_keep_partial_replication(mesh_2x4, output_gda):
    output_gda(True)
    gda = GlobalDeviceArray.from_callback((8, 8), mesh_2x4, [None, "y"], lambda index: DATA[index])
    with mesh_2x4:
        first = pjit(lambda x: x - 1, in_axis_resources=FROM_GDA, out_axis_resources=P(None, "y"))(gda)
        second = pjit(lambda x: x.sum(axis=0), out_axis_resources=P("y"))(first)
    assert first.mesh_axes == P(None, "y")
    assert [shard.replica_id for shard in first.local_shards] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert isinstance(second, GlobalDeviceArray)
    np.testing.assert_allclose(np.asarray(second), (DATA - 1).sum(axis=0))


def test_outputs_without_a_mesh_layout_become_replicated_gdas(mesh_2x4, output_gda):
    output_gda(True)
    with mesh_2x4:
        out = pjit(lambda x: x + 1)(np.ones(4, np.float32))
    assert isinstance(out, GlobalDeviceArray) and out.mesh == mesh_2x4 and out.is_fully_replicated
    np.testing.assert_allclose(np.asarray(out), 2.0)


def test_pjit_without_resources_runs_outside_a_mesh(output_gda):
    output_gda(False)
    out = pjit(lambda x: x * 3)(np.ones(4, np.float32))
    np.testing.assert_allclose(np.asarray(out), 3.0)


def test_static_argnums_and_decorator_form(mesh_8):
    @pjit
    def unused(x):
        return x

    f = pjit(lambda x, power: x ** power, in_axis_resources=P("x"), out_axis_resources=P("x"), static_argnums=1)
    with mesh_8:
        out = f(np.arange(8.0, dtype=np.float32), 2)
    np.testing.assert_allclose(np.asarray(out), np.arange(8.0) ** 2)
    assert callable(unused)


def test_with_sharding_constraint_uses_the_mesh_context(mesh_2x4):
    f = pjit(lambda x: with_sharding_constraint(x * 2, P("y", "x")) + 1, in_axis_resources=P("x"))
    with mesh_2x4:
        out = f(DATA)
        assert "sharding_constraint" in f.lower(DATA).as_text()
    np.testing.assert_allclose(np.asarray(out), DATA * 2 + 1)


# -- bad input ----------------------------------------------------------------------------------------
def test_specs_outside_a_mesh_context():
    f = pjit(lambda x: x, in_axis_resources=P("x"))
    with pytest.raises(RuntimeError, match="called outside a mesh context.*`with mesh:`"):
        f(DATA)
    with pytest.raises(RuntimeError, match="outside a mesh context"):
        pjit(lambda x: x, out_axis_resources=None)(DATA)


@pytest.mark.parametrize("make, args, error_type, text", [
    (lambda: pjit(lambda a, b: a + b, in_axis_resources=(P("x"),)), (DATA, DATA), ValueError,
     "pjit in_axis_resources has 1 entries, but <lambda> was called with 2 positional non-static arguments"),
    (lambda: pjit(lambda a: a, in_axis_resources=P("z")), (DATA,), ValueError,
     "pjit in_axis_resources: Resource axis: z of P('z',) is not found in mesh: ('x', 'y')"),
    (lambda: pjit(lambda a: a, in_axis_resources=P("x", "y", None)), (DATA,), ValueError,
     "in_axis_resources for argument args[0] is P('x', 'y', None), which has 3 entries, but the argument has rank 2"),
    (lambda: pjit(lambda a: a, in_axis_resources=FROM_GDA), (DATA,), ValueError,
     "argument args[0] is FROM_GDA, but a ndarray was passed there"),
    (lambda: pjit(lambda a: a, in_axis_resources=P("y")), "gda", ValueError,
     "in_axis_resources for argument args[0] is P('y',), but the GlobalDeviceArray passed there has mesh_axes P('x',)"),
    (lambda: pjit(lambda a: a, in_axis_resources=[["x"]]), (DATA,), TypeError,
     "pjit in_axis_resources entries must be PartitionSpecs, None (replicated) or FROM_GDA, got str: 'x'"),
    (lambda: pjit(3), (), TypeError, "pjit expects a callable, got int"),
])
def test_bad_input(mesh_2x4, make, args, error_type, text):
    if args == "gda":
        args = (GlobalDeviceArray.from_callback((8, 8), mesh_2x4, P("x"), lambda index: DATA[index]),)
    with pytest.raises(error_type) as raised, mesh_2x4:
        make()(*args)
    assert text in str(raised.value)


def test_gda_on_another_mesh(mesh_2x4, mesh_8):
    gda = GlobalDeviceArray.from_callback((8, 8), mesh_8, P("x"), lambda index: DATA[index])
    with pytest.raises(ValueError, match="is a GlobalDeviceArray on Mesh.*but the mesh of the enclosing `with mesh:`"), \
            mesh_2x4:
        pjit(lambda a: a)(gda)
