"""make_jaxpr and Traced.jaxpr give JAX's ClosedJaxpr: printed as JAX 0.10.2 prints it for the
functions of jaxpr_text/jaxpr_cases.py (JAX's texts in expected.json), with the objects JAX
users read (``.jaxpr``, ``.eqns``, ``.consts``, ``in_avals``, ``eqn.primitive.name``)."""

import json
import pathlib
import sys

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp

HERE = pathlib.Path(__file__).parent / "jaxpr_text"
sys.path.insert(0, str(HERE))
from jaxpr_cases import cases  # noqa: E402

EXPECTED = json.loads((HERE / "expected.json").read_text())["texts"]
# NOTE: where meshjit traces another program than JAX, so its jaxpr differs (docs/transformations.md):
# JAX sums tangents with add_any (meshjit: add); a broadcast of a scalar that only elementwise
# ops use prints as the scalar (JAX keeps jnp.zeros' broadcast); jnp.where and a nested jit are
# calls in JAX (jit[name=... jaxpr=...]) and inlined in meshjit.
DIFFERENT = {"grad_sigmoid", "zeros_like", "where", "jit_inside"}
CASES = {name: (function, arguments) for name, function, arguments in cases(jax)}


@pytest.mark.parametrize("name", sorted(set(CASES) - DIFFERENT))
def test_make_jaxpr_prints_what_jax_prints(name):
    function, arguments = CASES[name]
    assert str(jax.make_jaxpr(function)(*arguments)) == EXPECTED[name]


@pytest.mark.parametrize("name", sorted(DIFFERENT))
def test_the_listed_differences_are_still_different(name):
    function, arguments = CASES[name]
    assert str(jax.make_jaxpr(function)(*arguments)) != EXPECTED[name]


def test_closed_jaxpr_objects():
    closed = jax.make_jaxpr(lambda x, y: jnp.sin(x) + np.arange(3.0, dtype=np.float32) * y)(
        np.ones(3, np.float32), 2.0)
    assert [eqn.primitive.name for eqn in closed.eqns] == ["sin", "mul", "add"]
    assert closed.jaxpr.eqns is not None and len(closed.jaxpr.constvars) == 1
    np.testing.assert_array_equal(closed.consts[0], np.arange(3.0, dtype=np.float32))
    assert [(aval.shape, aval.dtype, aval.weak_type) for aval in closed.in_avals] == [
        ((3,), np.float32, False), ((), np.float32, True)]
    assert closed.out_avals[0].str_short() == "f32[3]"
    assert closed.eqns[0].invars[0] is closed.jaxpr.invars[0]
    assert repr(closed.eqns[0]) == "a:f32[3] = sin b"
    assert str(closed.jaxpr) == str(closed) == ("{ lambda a:f32[3]; b:f32[3] c:f32[]. let\n    d:f32[3] = sin b\n"
                                                "    e:f32[3] = mul a c\n    f:f32[3] = add d e\n  in (f,) }")
    assert closed.as_text().startswith("func @main(")


def test_traced_jaxpr():
    traced = jax.jit(lambda x: jnp.cos(x) * 2.0).trace(np.ones(2, np.float32))
    assert str(traced.jaxpr) == "{ lambda ; a:f32[2]. let b:f32[2] = cos a; c:f32[2] = mul b 2.0:f32[] in (c,) }"


def test_names_after_z_and_long_lines_break():
    text = str(jax.make_jaxpr(lambda *xs: sum(xs))(*([1.0] * 30)))
    assert " ba:f32[] " in text.splitlines()[0] + " " or "ba:f32[]" in text
    assert all(len(line) <= 80 for line in text.splitlines()[1:])


def test_literals_print_in_their_dtype():
    assert str(jax.make_jaxpr(lambda x: x * 0.1)(np.float64(1.0)).eqns[0]).endswith("0.1:f32[]")
    assert "True:bool[]" in str(jax.make_jaxpr(lambda x: jnp.logical_and(x, True))(np.ones(2, bool)))
