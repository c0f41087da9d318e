"""jnp.copy, isclose, allclose and array_equal beyond their values (tests/compiler/
numpy_records_reductions.py has those): result types, weak types, shardings and errors, each
as JAX 0.10.2 gives them."""

from __future__ import annotations

import numpy as np
import pytest

import meshjit
import meshjit.numpy as jnp
from meshjit.sharding import NamedSharding
from meshjit.sharding import PartitionSpec as P

pytestmark = pytest.mark.usefixtures("restore_runtime_state")


@pytest.fixture
def sharded(mesh_2x4):
    return meshjit.device_put(np.arange(16.0, dtype=np.float32).reshape(4, 4), NamedSharding(mesh_2x4, P("x", "y")))


def test_copy_is_a_new_array_in_the_same_layout(sharded):
    copied = jnp.copy(sharded)
    assert copied is not sharded and isinstance(copied, meshjit.Array)
    assert copied.sharding == sharded.sharding and copied.committed
    np.testing.assert_array_equal(np.asarray(copied), np.asarray(sharded))
    copied.delete()  # the copy owns itself: deleting it leaves the original alive
    assert not sharded.is_deleted()
    np.testing.assert_array_equal(np.asarray(sharded)[0], [0.0, 1.0, 2.0, 3.0])


def test_copy_keeps_weak_types_and_turns_numpy_into_arrays():
    weak = jnp.copy(2.0)
    assert isinstance(weak, meshjit.Array) and weak.weak_type and weak.dtype == np.float32
    from_numpy = jnp.copy(np.arange(3))
    assert isinstance(from_numpy, meshjit.Array) and from_numpy.dtype == np.int32 and not from_numpy.weak_type


def test_copy_under_jit_keeps_the_layout(sharded):
    copied = meshjit.jit(jnp.copy)(sharded)
    assert copied.sharding == sharded.sharding
    np.testing.assert_array_equal(np.asarray(copied), np.asarray(sharded))


@pytest.mark.parametrize("run", [lambda f, *args: f(*args), lambda f, *args: meshjit.jit(f)(*args)],
                         ids=["eager", "jit"])
def test_result_shardings_follow_jax(sharded, run):
    # JAX 0.10.2: isclose keeps the operands' sharding; the whole-array answers are replicated.
    mesh = sharded.sharding.mesh
    assert run(jnp.isclose, sharded, sharded).sharding == NamedSharding(mesh, P("x", "y"))
    for function in (jnp.allclose, jnp.array_equal):
        result = run(function, sharded, sharded)
        assert result.shape == () and result.dtype == np.bool_ and bool(result)
        assert result.sharding == NamedSharding(mesh, P())


def test_results_are_strongly_typed_bools():
    for result in (jnp.isclose(1.0, 1.0), jnp.allclose(1.0, 1.0), jnp.array_equal(1, 1.0),
                   jnp.isclose(2.0, jnp.float32(2.0))):
        assert result.dtype == np.bool_ and not result.weak_type


def test_array_equal_of_different_shapes_is_false_even_under_jit():
    assert not bool(jnp.array_equal(jnp.ones(3), jnp.ones(4)))
    result = meshjit.jit(jnp.array_equal)(jnp.ones((1, 3)), jnp.ones(3))
    assert isinstance(result, meshjit.Array) and result.dtype == np.bool_ and not bool(result)


def test_traced_tolerances_take_the_operands_dtype():
    values = jnp.asarray([1.0, 2.0, np.nan, np.inf])
    close = meshjit.jit(lambda x, rtol: jnp.isclose(x, x * 1.05, rtol=rtol))(values, 0.1)
    np.testing.assert_array_equal(np.asarray(close), [True, True, False, True])  # JAX 0.10.2's answer


@pytest.mark.parametrize("call, error, text", [
    # JAX 0.10.2: ValueError "Incompatible shapes for broadcasting: shapes=[(2, 3), (2,)]"
    (lambda: jnp.isclose(jnp.ones((2, 3)), jnp.ones(2)), ValueError, "isclose: shapes (2, 3), (2,)"),
    (lambda: jnp.allclose(jnp.ones((2, 3)), jnp.ones(2)), ValueError, "allclose: shapes (2, 3), (2,)"),
    # JAX 0.10.2: TypeError "Value 'ab' with dtype <U2 is not a valid JAX array type"
    (lambda: jnp.array_equal([1, 2], "ab"), TypeError, "<U2"),
    # JAX 0.10.2: TypeError "Error interpreting argument to isclose as an abstract array"
    (lambda: jnp.isclose("a", 1.0), TypeError, "isclose"),
    # JAX 0.10.2 raises NotImplementedError("Only implemented for order='K'"); meshjit a ValueError.
    (lambda: jnp.copy(jnp.ones(2), order="C"), ValueError, "order must be None or 'K'"),
])
def test_errors(call, error, text):
    with pytest.raises(error) as raised:
        call()
    assert text in str(raised.value)
