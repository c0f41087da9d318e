"""jax's top-level settings and utilities (disable_jit, enable_x64, clear_caches,
linear_transpose, default_backend, Device) and the errors/typing/scipy modules, as JAX 0.10.2."""

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp


def test_disable_jit_runs_the_python_op_by_op():
    seen = []

    @jax.jit
    def double(x):
        seen.append(type(x).__name__)
        return x * 2

    double(jnp.ones(3))
    with jax.disable_jit():
        np.testing.assert_array_equal(np.asarray(double(jnp.ones(3))), np.full(3, 2.0))
        np.testing.assert_array_equal(np.asarray(double(jnp.ones(3))), np.full(3, 2.0))
        gradient = jax.grad(lambda x: double(x).sum())(jnp.ones(2))
    double(jnp.ones(3))
    assert seen[:3] == ["Tracer", "Array", "Array"] and len(seen) == 4
    np.testing.assert_array_equal(np.asarray(gradient), np.full(2, 2.0))


def test_enable_x64_is_a_context():
    with jax.enable_x64(True):
        assert jnp.ones(2, dtype=jnp.float64).dtype == np.float64
    assert jnp.ones(2, dtype=jnp.float64).dtype == np.float32


def test_clear_caches_makes_jit_trace_again():
    traces = []

    @jax.jit
    def square(x):
        traces.append(1)
        return x * x

    square(jnp.ones(2))
    square(jnp.ones(2))
    jax.clear_caches()
    square(jnp.ones(2))
    assert len(traces) == 2


def test_linear_transpose_is_the_adjoint():
    def linear(x, y):
        return 2 * x + y.sum(axis=0), x - y[0]

    transpose = jax.linear_transpose(linear, jax.ShapeDtypeStruct((3,), jnp.float32), jnp.zeros((2, 3)))
    dx, dy = transpose((jnp.ones(3), jnp.arange(3.0)))
    np.testing.assert_array_equal(np.asarray(dx), [2.0, 3.0, 4.0])
    np.testing.assert_array_equal(np.asarray(dy), [[1.0, 0.0, -1.0], [1.0, 1.0, 1.0]])
    with pytest.raises(TypeError, match="callable"):
        jax.linear_transpose(3, jnp.zeros(2))


def test_backend_device_and_modules():
    assert jax.default_backend() == "cpu"
    assert isinstance(jax.devices()[0], jax.Device)
    assert jax.scipy.special.logsumexp is not None and jax.float0 == jax.dtypes.float0
    assert issubclass(jax.errors.TracerBoolConversionError, jax.errors.ConcretizationTypeError)
    assert issubclass(jax.errors.ConcretizationTypeError, jax.errors.JAXTypeError)
    assert issubclass(jax.errors.NonConcreteBooleanIndexError, IndexError)
    assert issubclass(jax.errors.UnexpectedTracerError, TypeError)
    with pytest.raises(jax.errors.JAXTypeError):
        jax.jit(lambda x: int(x))(1.0)
    assert jax.typing.ArrayLike is not None and jax.typing.DTypeLike is not None


def test_precision_is_checked_and_changes_no_value():
    a = np.arange(4.0, dtype=np.float32).reshape(2, 2)
    for precision in (None, "highest", ("high", "default"), jax.lax.Precision.HIGH, "bfloat16"):
        np.testing.assert_array_equal(np.asarray(jnp.dot(a, a, precision=precision)), a @ a)
        np.testing.assert_array_equal(np.asarray(jnp.einsum("ij,jk", a, a, precision=precision)), a @ a)
        np.testing.assert_array_equal(np.asarray(jax.lax.dot(a, a, precision=precision)), a @ a)
    assert jax.lax.Precision("highest") is jax.lax.Precision.HIGHEST and str(jax.lax.Precision.HIGH) == "HIGH"
    for bad in ("bogus", ("high",), 3):
        with pytest.raises(ValueError, match="Precision argument must be one of"):
            jnp.matmul(a, a, precision=bad)


def test_array_methods_copy_nonzero_searchsorted():
    a = jnp.array([0.0, 1.0, 0.0, 3.0])
    np.testing.assert_array_equal(np.asarray(a.copy()), [0.0, 1.0, 0.0, 3.0])
    np.testing.assert_array_equal(np.asarray(a.nonzero()[0]), [1, 3])
    assert int(jnp.sort(a).searchsorted(2.0)) == 3
    padded = jax.jit(lambda x: x.nonzero(size=3)[0])(a)
    np.testing.assert_array_equal(np.asarray(padded), [1, 3, 0])


def test_ensure_compile_time_eval_gives_concrete_values_inside_jit():
    @jax.jit
    def f(x):
        with jax.ensure_compile_time_eval():
            table = jnp.arange(4) * 2
            count = int(table.sum())  # concrete: Python can read it
            scaled = x * 3  # x is traced, so this is staged
        return x + count + scaled + table

    np.testing.assert_array_equal(np.asarray(f(jnp.ones(4))), [16.0, 18.0, 20.0, 22.0])
    with pytest.raises(jax.errors.ConcretizationTypeError):
        jax.jit(lambda x: int(x))(1.0)
