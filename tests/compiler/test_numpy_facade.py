"""The facades re-export the implementation: meshjit.numpy every public function of
compiler.numpy_api, meshjit.lax every public lax_ops function, meshjit.nn compiler.nn's."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import meshjit
import meshjit.lax
import meshjit.nn
import meshjit.numpy
from meshjit.compiler.frontend import lax_ops, nn, numpy_api


def _public_functions(module) -> set[str]:
    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and inspect.isfunction(value)
        and value.__module__.startswith(module.__name__)
    }


def test_numpy_facade_exports_every_function():
    internal = {"getitem", "install_array_methods"}
    names = {
        name
        for name, value in vars(numpy_api).items()
        if not name.startswith("_") and callable(value)
    }
    missing = {name for name in names - internal if not hasattr(meshjit.numpy, name)}
    assert not missing
    for name in names - internal:
        assert getattr(meshjit.numpy, name) is getattr(numpy_api, name)


def test_lax_facade_exports_every_primitive():
    # fma is meshjit's own (what XLA fuses), not a jax.lax function
    internal = {"with_sharding_constraint_ir", "fma"}
    expected = _public_functions(lax_ops) - internal
    assert expected <= set(vars(meshjit.lax))
    assert not any(hasattr(meshjit.lax, name) for name in internal)


def test_nn_facade_exports_every_function():
    assert _public_functions(nn) <= set(vars(meshjit.nn))


def test_numpy_constants():
    assert meshjit.numpy.newaxis is None
    assert meshjit.numpy.inf == float("inf") and meshjit.numpy.pi > 3.14
    assert meshjit.numpy.ndarray is meshjit.Array


# NOTE: the values JAX 0.10.2 gives (generated once with it): shifts and bitwise ops accept
# unsigned integers, and an unsigned right shift is the logical one
UNSIGNED = np.array([1, 2, 0x80000000, 0xFFFFFFFF], np.uint32)
UNSIGNED_EXPECTED = {
    "left_shift": [2, 16, 0, 2147483648],
    "right_shift": [0, 0, 134217728, 1],
    "bitwise_and": [1, 2, 0, 31],
    "bitwise_or": [1, 3, 2147483652, 4294967295],
    "bitwise_xor": [0, 1, 2147483652, 4294967264],
}


@pytest.mark.parametrize("name", sorted(UNSIGNED_EXPECTED))
def test_bitwise_functions_on_unsigned_integers_match_jax(name):
    result = getattr(meshjit.numpy, name)(UNSIGNED, np.array([1, 3, 4, 31], np.uint32))
    assert result.dtype == np.uint32
    assert np.asarray(result).tolist() == UNSIGNED_EXPECTED[name]


def test_unsigned_invert_and_operators_match_jax():
    assert np.asarray(meshjit.numpy.invert(UNSIGNED)).tolist() == [4294967294, 4294967293, 2147483647, 0]
    assert np.asarray(meshjit.numpy.asarray(UNSIGNED) >> 1).tolist() == [0, 1, 1073741824, 2147483647]
    jitted = meshjit.jit(lambda x, y: (x >> y) ^ (x << 2))(UNSIGNED, np.uint32(3))
    assert np.asarray(jitted).tolist() == [4, 8, 268435456, 3758096387]
