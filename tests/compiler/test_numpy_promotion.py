"""JAX's weak types through meshjit.numpy: which results stay weakly typed, under tracing and
eagerly, and how weak values promote with x64 on and off."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import traced_module
from meshjit.compiler.frontend.operands import dtype_of

import meshjit.numpy as jnp
from meshjit import config

pytestmark = pytest.mark.usefixtures("restore_runtime_state")
F32 = np.zeros(3, np.float32)
I32 = np.zeros(3, np.int32)


def _traced_dtype(fn, *args):
    """The (IR dtype, weak flag) of ``fn``'s only output while it is being traced."""
    box = []
    traced_module(lambda *tracers: box.append(dtype_of(fn(*tracers))) or [], *args)
    return box[0].name, box[0].weak


@pytest.mark.parametrize(
    "fn, expected",
    [
        (lambda x: jnp.add(1, 2.5), ("f32", True)),
        (lambda x: jnp.multiply(2, 3), ("i32", True)),
        (lambda x: jnp.exp(2), ("f32", True)),
        (lambda x: jnp.asarray(1.0), ("f32", True)),
        (lambda x: jnp.full(3, 1), ("i32", True)),
        (lambda x: jnp.full(3, 1, dtype=jnp.float32), ("f32", False)),
        (lambda x: jnp.zeros(3), ("f32", False)),
        (lambda x: jnp.ones_like(jnp.add(1, 2)), ("i32", True)),
        (lambda x: jnp.reshape(jnp.add(1, 2.0), (1,)), ("f32", True)),
        (lambda x: jnp.sum(jnp.full(3, 2.0)), ("f32", False)),
        (lambda x: jnp.add(x, 1.0), ("f32", False)),
        (lambda x: jnp.add(x.astype(jnp.int32), 1.5), ("f32", True)),
        (lambda x: jnp.where(x > 0, 1, 2.0), ("f32", True)),
        (lambda x: jnp.true_divide(1, 2), ("f32", True)),
        (lambda x: jnp.asarray(2.0).astype(jnp.float32), ("f32", False)),
    ],
)
def test_weak_types_under_tracing(fn, expected):
    assert _traced_dtype(fn, F32) == expected


def test_weak_value_takes_the_strong_operands_dtype():
    assert _traced_dtype(lambda x: jnp.add(jnp.add(1, 2.5), x.astype(jnp.float32)), F32) == (
        "f32",
        False,
    )
    assert _traced_dtype(lambda x: jnp.multiply(jnp.full(3, 2), x), I32) == ("i32", False)


def test_x64_weak_float_keeps_the_narrow_array_dtype(x64):
    assert _traced_dtype(lambda x: jnp.add(x, jnp.add(1.0, 2.0)), F32) == ("f32", False)
    assert _traced_dtype(lambda x: jnp.add(1.0, 2.0), F32) == ("f64", True)
    assert _traced_dtype(lambda x: jnp.add(x.astype(jnp.float64), x), F32) == ("f64", False)


def test_without_x64_numpy_64_bit_inputs_narrow():
    config.update("jax_enable_x64", False)
    result = jnp.add(np.ones(2, np.float64), np.ones(2, np.int64))
    assert np.asarray(result).dtype == np.float32
    assert np.asarray(jnp.arange(3, dtype=np.int64)).dtype == np.int32


def test_eager_arrays_carry_weak_types():
    assert jnp.add(1, 2).weak_type
    assert not jnp.add(jnp.zeros(2), 1).weak_type
    assert jnp.asarray(1.5).weak_type
    assert not jnp.asarray(np.float32(1.5)).weak_type


def test_scalar_types_cast_and_serve_as_dtypes():
    assert _traced_dtype(lambda x: jnp.float32(x.astype(jnp.int32)), F32) == ("f32", False)
    assert _traced_dtype(lambda x: jnp.int32(2.7), F32) == ("i32", False)
    assert np.dtype(jnp.float32) == np.float32 and np.dtype(jnp.bool_) == np.bool_
    assert np.asarray(jnp.zeros(2, dtype=jnp.int32)).dtype == np.int32


def test_operators_leave_unknown_operands_to_python():
    def compare_with_none(x):
        assert (x == None) is False  # noqa: E711 - the comparison under test
        assert (x != None) is True  # noqa: E711
        return x

    traced_module(compare_with_none, F32)
    with pytest.raises(TypeError, match="unsupported operand"):
        traced_module(lambda x: x + [1.0, 2.0, 3.0], F32)
