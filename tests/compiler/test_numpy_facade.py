"""The facades re-export the implementation: meshjit.numpy every public function of
compiler.numpy_api, meshjit.lax every public lax_ops function, meshjit.nn compiler.nn's."""

from __future__ import annotations

import inspect

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
