"""Explicit mode gives JAX's result shardings and JAX's errors: every case of
``explicit_type_cases.py`` (ops x operand shardings on a 2 x 4 mesh of Explicit axes) traced
under meshjit.jit matches what JAX 0.10.2 gave (``explicit_types.json``): the same result types,
or an exception of the same type with the same first line."""

from __future__ import annotations

import json
import pathlib

import pytest

import meshjit
import meshjit.numpy as jnp
from meshjit import lax
from meshjit.sharding import PartitionSpec as P

from explicit_type_cases import CASES, run_case

pytestmark = pytest.mark.usefixtures("restore_runtime_state")

EXPECTED = json.loads(pathlib.Path(__file__).with_name("explicit_types.json").read_text())

# Where meshjit words an error differently from JAX, for a reason given here; the exception
# type must still match.
_BROADCAST = ("meshjit broadcasts operands to the full shape before the op, so the message shows the broadcast "
              "operand (f32[8,4@X]) where JAX shows it with unit dims (f32[1,4@X]) or as a scalar")
_OUR_ADVICE = ("JAX sends the user to its own issue tracker; meshjit says how to get past it (reshard the "
               "operand first)")
MESSAGES_DIFFER = {
    "unreduced sin": _OUR_ADVICE,
    "broadcast row X+X": _BROADCAST,
    "outer X X": _BROADCAST,
    "unreduced mul scalar": _BROADCAST,
}


@pytest.fixture(scope="module")
def mesh():
    return meshjit.make_mesh((2, 4), ("X", "Y"))


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_explicit_mode_matches_jax(case, mesh):
    name = case[0]
    expected = EXPECTED[name]
    actual = run_case(meshjit, jnp, lax, P, mesh, case)
    if "types" in expected:
        assert actual == expected, f"{name}: JAX gives {expected}, meshjit {actual}"
        return
    assert actual.get("error") == expected["error"], f"{name}: JAX raises {expected}, meshjit gives {actual}"
    if name not in MESSAGES_DIFFER:
        assert actual["message"] == expected["message"]


def test_every_case_has_an_expectation():
    assert sorted(EXPECTED) == sorted(case[0] for case in CASES)


def test_a_pending_sum_rides_through_linear_ops_and_is_reduced_at_the_reshard(mesh):
    """A dot whose contraction is unreduced keeps the sum pending (no gather of its operands)
    through add, transpose and reduce_sum; the reshard reduces the small result once."""
    import numpy as np

    x = meshjit.device_put(np.arange(32.0).reshape(8, 4), meshjit.NamedSharding(mesh, P(None, "X")))
    y = meshjit.device_put(np.arange(64.0).reshape(4, 16), meshjit.NamedSharding(mesh, P("X", None)))

    def f(x, y):
        z = jnp.dot(x, y, out_sharding=P(None, None, unreduced={"X"}))
        w = (z + z).T.sum(0)
        assert str(meshjit.typeof(w)) == "float32[8]{U:X}"
        return meshjit.reshard(w, P())

    with meshjit.set_mesh(mesh):
        compiled = meshjit.jit(f).lower(x, y).compile()
        result = compiled(x, y)
    kinds = [(record.kind, record.axes) for record in compiled.collectives()]
    assert kinds == [("all_reduce", ("X",))]
    np.testing.assert_allclose(np.asarray(result), 2 * (np.asarray(x) @ np.asarray(y)).sum(1))


def test_arrays_hold_pending_sums(mesh):
    import numpy as np

    unreduced = meshjit.device_put(np.ones((8, 4)), meshjit.NamedSharding(mesh, P("X", unreduced={"Y"})))
    assert str(meshjit.typeof(unreduced)) == "float32[8@X,4]{U:Y}"
    np.testing.assert_array_equal(np.asarray(unreduced), np.ones((8, 4)))
    reduced = meshjit.device_put(np.ones((8, 4)), meshjit.NamedSharding(mesh, P("X", reduced={"Y"})))
    assert str(meshjit.typeof(reduced)) == "float32[8@X,4]{R:Y}"


def test_gradients_have_their_primals_types(mesh):
    """As JAX: a cotangent is sharded as its primal, even where the backward dot contracts a
    dim both operands split (which alone would be ambiguous)."""
    import numpy as np

    rng = np.random.default_rng(0)
    x_value, w_value = rng.random((8, 4), np.float32), rng.random((4, 16), np.float32)
    x = meshjit.device_put(x_value, meshjit.NamedSharding(mesh, P("X", None)))
    w = meshjit.device_put(w_value, meshjit.NamedSharding(mesh, P(None, "Y")))

    def loss(w, x):
        return (jnp.tanh(x @ w) ** 2).sum()

    with meshjit.set_mesh(mesh):
        grad_w, grad_x = meshjit.jit(meshjit.grad(loss, argnums=(0, 1)))(w, x)
    assert str(meshjit.typeof(grad_w)) == "float32[4,16@Y]"
    assert str(meshjit.typeof(grad_x)) == "float32[8@X,4]"
    hidden = np.tanh(x_value @ w_value)
    upstream = 2 * hidden * (1 - hidden ** 2)
    np.testing.assert_allclose(np.asarray(grad_w), x_value.T @ upstream, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(grad_x), upstream @ w_value.T, rtol=1e-5)
