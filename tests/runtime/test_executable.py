"""The runtime's Executable: a Plan with its boundary shardings, run on Arrays; jit and eager ops
both dispatch through it, and Array's operators reach the facade through one registration."""

from __future__ import annotations

import numpy as np
import pytest
from meshjit.compiler.frontend.numpy_api.operators import METHODS, OPERATORS, PROPERTIES
from meshjit.runtime import array as runtime_array
from meshjit.runtime.executable import Executable
from meshjit.runtime.plan import KernelStep, Plan

import meshjit as jax
import meshjit.numpy as jnp
from meshjit import _stages
from meshjit.sharding import NamedSharding, SingleDeviceSharding
from meshjit.sharding import PartitionSpec as P

pytestmark = pytest.mark.usefixtures("restore_runtime_state")


def add_plan(mesh_shape, varying) -> Plan:
    """``a + b`` over buffers whose leading dims are ``mesh_shape``, written by hand."""
    step = KernelStep("add", lambda a, b: (np.add(a, b),), (0, 1), (2,))
    return Plan(mesh_shape, 3, (0, 1), (varying, varying), (2,), (varying,), (step,))


def test_a_hand_written_plan_runs_on_one_device():
    device = jax.devices()[2]
    executable = Executable(add_plan((), ()), arg_shardings=(None, None), arg_dtypes=(np.float32, np.float32),
                            result_shardings=(SingleDeviceSharding(device),), result_shapes=((4,),),
                            result_weak_types=(False,), committed=False)
    (result,) = executable.run([np.arange(4, dtype=np.float32), 1.0])
    assert result.sharding == SingleDeviceSharding(device) and not result.committed
    np.testing.assert_array_equal(np.asarray(result), [1, 2, 3, 4])


def test_a_hand_written_plan_runs_sharded_and_frees_donated_arguments(mesh_of):
    mesh = mesh_of("8")
    sharding = NamedSharding(mesh, P("x"))
    executable = Executable(add_plan((8,), (0,)), arg_shardings=(sharding, sharding),
                            arg_dtypes=(np.float32, np.float32), result_shardings=(sharding,),
                            result_shapes=((16,),), result_weak_types=(False,), donated=frozenset({0}))
    donated = jax.device_put(np.arange(16, dtype=np.float32), sharding)
    (result,) = executable.run([donated, np.ones(16, np.float32)])
    assert donated.is_deleted()
    assert result.sharding == sharding and result.committed
    np.testing.assert_array_equal(np.asarray(result), np.arange(16) + 1)
    assert [shard.data.shape for shard in result.addressable_shards] == [(2,)] * 8


def test_compiled_runs_its_executable(mesh_2x4):
    sharding = NamedSharding(mesh_2x4, P("x", "y"))
    compiled = jax.jit(lambda a, b: a * b + 1).lower(jax.device_put(np.ones((8, 8), np.float32), sharding),
                                                      np.full((8, 8), 3, np.float32)).compile()
    executable = compiled.runtime_executable()
    assert executable.sharded and executable.arg_shardings[0].is_equivalent_to(sharding, 2)
    (result,) = executable.run([np.ones((8, 8), np.float32), np.full((8, 8), 3, np.float32)])
    np.testing.assert_array_equal(np.asarray(result), np.full((8, 8), 4))
    assert compiled.in_tree.num_leaves == 2 and compiled.out_tree.num_leaves == 1


def test_eager_ops_share_the_executable_cache(monkeypatch):
    compilations = []
    real = _stages.compile_module

    def counting(module, **options):
        compilations.append(module)
        return real(module, **options)

    monkeypatch.setattr(_stages, "compile_module", counting)
    # NOTE: a shape no other test uses, so nothing is cached yet
    a = jax.device_put(np.arange(33, dtype=np.float32).reshape(3, 11))
    b = jax.device_put(np.ones((3, 11), np.float32))
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(a + b), np.arange(33).reshape(3, 11) + 1)
    assert len(compilations) == 1
    for _ in range(3):
        np.testing.assert_allclose(np.asarray(jnp.sin(a)), np.sin(np.arange(33.0).reshape(3, 11)), rtol=1e-6)
    assert len(compilations) == 2
    a * 2.0, a * 3.0  # Python scalars are arguments, not constants: one program for both
    assert len(compilations) == 3


def test_array_declares_the_operators_the_facade_implements():
    assert set(runtime_array.ARRAY_OPERATORS) == set(OPERATORS)
    for name in list(METHODS) + list(PROPERTIES):  # installed by the facade when registering
        assert hasattr(runtime_array.Array, name), name
    with pytest.raises(TypeError, match="register_array_dispatcher expects a callable"):
        runtime_array.register_array_dispatcher("add")


def test_array_operators_forward_to_the_registered_dispatcher(monkeypatch):
    calls = []
    monkeypatch.setattr(runtime_array, "_dispatcher", lambda name, array, *args, **kwargs: calls.append(
        (name, args, kwargs)) or name)
    x = jax.device_put(np.ones(3, np.float32))
    assert (x + 1, 2 * x, x.sum(axis=0), x.T, x[1:]) == ("__add__", "__rmul__", "sum", "T", "__getitem__")
    assert calls[2] == ("sum", (), {"axis": 0}) and calls[4] == ("__getitem__", (slice(1, None),), {})
    assert {x: 1}[x] == 1  # Arrays stay hashable by identity
