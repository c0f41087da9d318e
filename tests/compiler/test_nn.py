"""meshjit.nn against numpy formulas, eagerly, traced and jitted: activations, the softmax
family (stable for large inputs, -inf rows), one_hot."""

from __future__ import annotations

import math

import numpy as np
import optree
import pytest
from helpers import MODES, assert_close, run
from numpy_record import Record, inputs

import meshjit.numpy as jnp
from meshjit import config, nn

pytestmark = pytest.mark.usefixtures("restore_runtime_state")

_erf = np.vectorize(math.erf)


def _logsumexp(x, axis=None, keepdims=False):
    with np.errstate(all="ignore"):
        return np.log(np.sum(np.exp(x.astype(np.float64)), axis=axis, keepdims=keepdims))


def _softmax(x, axis=-1):
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return np.exp(shifted) / np.sum(np.exp(shifted), axis=axis, keepdims=True)


def _one_hot(x, count, axis=-1):
    result = (x[..., None] == np.arange(count)).astype(np.float32)
    return np.moveaxis(result, -1, axis)


R = Record
# Functions take (nn module, *arrays); references take (numpy, *arrays).
NN_RECORDS = [
    R("relu", lambda m, x: m.relu(x), inputs("f32[3,4]"), "f32", lambda np, x: np.maximum(x, 0)),
    R("relu int", lambda m, x: m.relu(x), inputs("i32[5]"), "i32", lambda np, x: np.maximum(x, 0)),
    R(
        "relu6",
        lambda m, x: m.relu6(x),
        inputs(("f32[9]", -9, 9)),
        "f32",
        lambda np, x: np.clip(x, 0, 6),
    ),
    R(
        "leaky_relu",
        lambda m, x: m.leaky_relu(x, 0.1),
        inputs("f32[6]"),
        "f32",
        lambda np, x: np.where(x >= 0, x, 0.1 * x),
    ),
    R(
        "sigmoid",
        lambda m, x: m.sigmoid(x),
        inputs(("f32[7]", -20, 20)),
        "f32",
        lambda np, x: 1 / (1 + np.exp(-x)),
    ),
    R(
        "sigmoid int",
        lambda m, x: m.sigmoid(x),
        inputs("i32[4]"),
        "f32",
        lambda np, x: 1 / (1 + np.exp(-x)),
    ),
    R(
        "silu swish",
        lambda m, x: (m.silu(x), m.swish(x)),
        inputs("f32[6]"),
        ("f32", "f32"),
        lambda np, x: (x / (1 + np.exp(-x)),) * 2,
    ),
    R(
        "softplus log_sigmoid",
        lambda m, x: (m.softplus(x), m.log_sigmoid(x)),
        inputs(("f32[8]", -30, 30)),
        ("f32", "f32"),
        lambda np, x: (np.logaddexp(x, 0), -np.logaddexp(-x, 0)),
    ),
    R(
        "gelu tanh",
        lambda m, x: m.gelu(x),
        inputs(("f32[3,5]", -4, 4)),
        "f32",
        lambda np, x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3))),
    ),
    R(
        "gelu exact",
        lambda m, x: m.gelu(x, approximate=False),
        inputs(("f32[3,5]", -4, 4)),
        "f32",
        lambda np, x: 0.5 * x * (1 + _erf(x / np.sqrt(2))),
    ),
    R(
        "softmax",
        lambda m, x: (m.softmax(x), m.softmax(x, axis=0), m.softmax(x, axis=(0, 1))),
        inputs("f32[3,4]"),
        ("f32",) * 3,
        lambda np, x: (_softmax(x), _softmax(x, 0), _softmax(x, (0, 1))),
    ),
    R(
        "softmax large inputs",
        lambda m, x: m.softmax(x),
        inputs(("f32[2,5]", 500, 1000)),
        "f32",
        lambda np, x: _softmax(x),
    ),
    R(
        "softmax int",
        lambda m, x: m.softmax(x),
        inputs("i32[2,3]"),
        "f32",
        lambda np, x: _softmax(x.astype(np.float64)),
    ),
    R(
        "log_softmax",
        lambda m, x: (m.log_softmax(x), m.log_softmax(x, axis=0)),
        inputs(("f32[3,4]", -50, 50)),
        ("f32", "f32"),
        lambda np, x: (np.log(_softmax(x)), np.log(_softmax(x, 0))),
        atol=1e-4,
    ),
    R(
        "logsumexp",
        lambda m, x: (
            m.logsumexp(x),
            m.logsumexp(x, axis=1),
            m.logsumexp(x, axis=-1, keepdims=True),
            m.logsumexp(x, axis=(0, 1)),
        ),
        inputs(("f32[3,4]", -50, 50)),
        ("f32",) * 4,
        lambda np, x: (
            _logsumexp(x),
            _logsumexp(x, 1),
            _logsumexp(x, -1, True),
            _logsumexp(x, (0, 1)),
        ),
        rtol=1e-5,
    ),
    R(
        "logsumexp large",
        lambda m, x: m.logsumexp(x, axis=0),
        inputs(("f32[4,2]", 1000, 2000)),
        "f32",
        lambda np, x: np.max(x, 0) + _logsumexp(x - np.max(x, 0), 0),
    ),
    R(
        "logsumexp weights",
        lambda m, x, b: m.logsumexp(x, axis=1, b=b),
        inputs("f32[3,4]", ("f32[4]", 0.5, 2)),
        "f32",
        lambda np, x, b: np.log(np.sum(b * np.exp(x), axis=1)),
    ),
    R(
        "logsumexp -inf rows",
        lambda m, x: m.logsumexp(jnp.where(x > 0, x, -jnp.inf), axis=1),
        inputs(("f32[3,4]", -1, 1)),
        "f32",
        lambda np, x: _logsumexp(np.where(x > 0, x, -np.inf), 1),
        operators=True,
    ),
    R(
        "logsumexp all -inf",
        lambda m: m.logsumexp(jnp.full((2, 3), -jnp.inf), axis=1),
        (),
        "f32",
        lambda np: np.full(2, -np.inf),
    ),
    R(
        "one_hot",
        lambda m, x: (m.one_hot(x, 5), m.one_hot(x, 5, axis=0), m.one_hot(x, 3, dtype=jnp.int32)),
        inputs(("i32[2,3]", -1, 5)),
        ("f32", "f32", "i32"),
        lambda np, x: (_one_hot(x, 5), _one_hot(x, 5, 0), _one_hot(x, 3).astype(np.int32)),
    ),
    R(
        "one_hot 0-d",
        lambda m, x: m.one_hot(x, 4),
        inputs(("i32[]", 0, 3)),
        "f32",
        lambda np, x: _one_hot(x, 4),
    ),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("record", NN_RECORDS, ids=str)
def test_nn_record(record, mode):
    config.update("jax_enable_x64", record.x64)
    arrays = record.sample()
    expected = optree.tree_leaves(record.expected(arrays))
    actual = optree.tree_leaves(run(mode, lambda *args: record.function(nn, *args), *arrays))
    dtypes = (record.dtype,) * len(actual) if isinstance(record.dtype, str) else record.dtype
    assert len(actual) == len(expected) == len(dtypes)
    for leaf, reference, dtype in zip(actual, expected, dtypes):
        assert_close(leaf, reference, rtol=record.rtol, atol=record.atol, dtype=dtype)


def test_softmax_rows_sum_to_one():
    x = np.random.default_rng(0).normal(size=(4, 7)).astype(np.float32) * 30
    result = run("traced", nn.softmax, x)
    np.testing.assert_allclose(result.sum(axis=-1), np.ones(4), rtol=1e-6)


def test_one_hot_needs_concrete_class_count():
    with pytest.raises(TypeError, match="num_classes is a traced value"):
        run("traced", lambda x, n: nn.one_hot(x, n), np.zeros(3, np.int32), np.int32(4))


def test_one_hot_rejects_float_input():
    with pytest.raises(TypeError, match="one_hot: x must hold integers"):
        nn.one_hot(np.zeros(3, np.float32), 3)


def test_softmax_bad_axis_names_function():
    with pytest.raises(
        ValueError, match="softmax: axis 2 is out of bounds for array of dimension 2"
    ):
        nn.softmax(np.zeros((2, 3), np.float32), axis=2)


def test_one_hot_default_dtype_follows_x64(x64):
    assert np.asarray(nn.one_hot(np.arange(3), 3)).dtype == np.float64


@pytest.mark.parametrize("name", ["log_softmax", "softmax", "logsumexp"])
def test_no_derivative_flows_through_the_softmax_shift(name):
    """As in JAX, the maximum subtracted for stability is a constant to autodiff: on a sharded
    class axis the gradient needs the forward's max and sum all_reduces plus one sum of the
    cotangent, not two more for the derivative of the maximum (which cancels)."""
    import meshjit
    from meshjit.sharding import Mesh, NamedSharding
    from meshjit.sharding import PartitionSpec as P
    from meshjit.testing import assert_collectives

    rng = np.random.default_rng(1)
    x = rng.normal(size=(4, 16)).astype(np.float32)
    x[0, 3] = x[0, 11] = 5.0  # a tied maximum, where differentiating through it shows most
    w = rng.normal(size=(4,) if name == "logsumexp" else (4, 16)).astype(np.float32)
    function = getattr(nn, name)

    def loss(x, w):
        return jnp.sum(function(x, axis=-1) * w)

    mesh = Mesh(np.array(meshjit.devices()), ("x",))
    sharded = NamedSharding(mesh, P(None, "x"))
    w_sharding = NamedSharding(mesh, P() if name == "logsumexp" else P(None, "x"))
    gradient = meshjit.jit(meshjit.grad(loss), in_shardings=(sharded, w_sharding))
    assert_collectives(gradient, x, w, expect=[("all_reduce", "x")] * (2 if name == "logsumexp" else 3))
    shifted = x.astype(np.float64) - x.max(-1, keepdims=True)
    probabilities = np.exp(shifted) / np.exp(shifted).sum(-1, keepdims=True)
    if name == "log_softmax":
        expected = w - probabilities * w.sum(-1, keepdims=True)
    elif name == "softmax":
        expected = probabilities * (w - (probabilities * w).sum(-1, keepdims=True))
    else:
        expected = probabilities * w[:, None]
    np.testing.assert_allclose(np.asarray(gradient(x, w)), expected, rtol=1e-5, atol=1e-6)
