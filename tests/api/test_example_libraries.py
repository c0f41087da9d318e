"""jax.example_libraries (optimizers, stax) side by side with JAX 0.10.2: every optimizer, schedule
and layer of ``example_lib_cases.py`` against the values JAX computed
(``data/jax_example_lib_values.npz``), the end-to-end adam/stax training losses, the pytree
plumbing (OptimizerState, pack/unpack) and JAX's errors."""

import pathlib
import sys

import numpy as np
import pytest

import meshjit as jax
from meshjit.example_libraries import optimizers, stax
from meshjit.sharding import Mesh, NamedSharding
from meshjit.sharding import PartitionSpec as P

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from example_lib_cases import XS, YS, cases, train_mlp  # noqa: E402

REF = np.load(pathlib.Path(__file__).parent / "data" / "jax_example_lib_values.npz")
# JAX's own float32 tolerance (jtu's default rtol); the conv-transpose sums run in another order.
RTOL = {"stax.ConvTranspose": 5e-5, "stax.ConvTransposeValid": 5e-5, "stax.Conv": 1e-5}


def _compare(name, values):
    assert len([k for k in REF.files if k.startswith(name + "/")]) == len(values)
    for i, value in enumerate(values):
        ref, got = REF[f"{name}/{i}"], np.asarray(value)
        assert (got.shape, got.dtype) == (ref.shape, ref.dtype), (name, i)
        np.testing.assert_allclose(got, ref, rtol=RTOL.get(name, 2e-6), atol=1e-6, err_msg=name)


NAMES = sorted(cases(jax))


@pytest.mark.parametrize("name", NAMES)
def test_against_jax(name):
    _compare(name, cases(jax)[name]())


def test_training_losses_against_jax():
    """The adam-trained MLP's losses: the first equals JAX's, the rest within 1e-6 of it."""
    losses = np.asarray(train_mlp(jax)[0])
    ref = REF["train_mlp/0"]
    assert losses[0] == ref[0]
    np.testing.assert_allclose(losses, ref, rtol=1e-6)
    assert losses[-1] < losses[0] * 0.8


def test_training_sharded_equals_unsharded():
    """The same adam step with the batch sharded over 8 devices gives the unsharded numbers."""
    init, apply = stax.serial(stax.Dense(8), stax.Relu, stax.Dense(4), stax.LogSoftmax)
    _, params = init(jax.random.PRNGKey(0), (-1, 10))
    opt_init, opt_update, get_params = optimizers.adam(1e-2)

    @jax.jit
    def step(state, x, y):
        loss = lambda p: -jax.numpy.mean(jax.numpy.sum(apply(p, x) * y, axis=1))
        return opt_update(0, jax.grad(loss)(get_params(state)), state)
    mesh = Mesh(np.array(jax.devices()[:8]), ("b",))
    xs = jax.device_put(XS, NamedSharding(mesh, P("b")))
    ys = jax.device_put(YS, NamedSharding(mesh, P("b")))
    plain = jax.tree_util.tree_leaves(get_params(step(opt_init(params), XS, YS)))
    shard = jax.tree_util.tree_leaves(get_params(step(opt_init(params), xs, ys)))
    for a, b in zip(plain, shard, strict=True):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-6, atol=1e-7)


def test_optimizer_state_pack_unpack_roundtrip():
    opt_init, opt_update, get_params = optimizers.momentum(0.1, 0.9)
    state = opt_init({"a": np.ones(3, np.float32), "b": (np.zeros(2, np.float32),)})
    marked = optimizers.unpack_optimizer_state(state)
    assert isinstance(marked["a"], optimizers.JoinPoint)
    back = optimizers.pack_optimizer_state(marked)
    assert back.tree_def == state.tree_def and back.subtree_defs == state.subtree_defs
    assert isinstance(state, optimizers.OptimizerState)
    assert len(jax.tree_util.tree_leaves(state)) == 4


def test_optimizer_decorator_and_vmap():
    """A user optimizer lifted by ``optimizer``; its update vmaps over a batch of states."""
    @optimizers.optimizer
    def halving():
        return (lambda x: x), (lambda i, g, x: x - g / 2), (lambda x: x)
    opt_init, opt_update, get_params = halving()
    xs = np.arange(6, dtype=np.float32).reshape(3, 2)
    out = jax.vmap(lambda x: get_params(opt_update(0, x, opt_init(x))))(xs)
    np.testing.assert_array_equal(np.asarray(out), xs / 2)


def test_errors_match_jax():
    opt_init, opt_update, _ = optimizers.sgd(0.1)
    state = opt_init({"a": np.ones(2, np.float32)})
    with pytest.raises(TypeError, match="did not match the parameter tree structure"):
        opt_update(0, {"b": np.ones(2, np.float32)}, state)
    with pytest.raises(TypeError, match="ndarray"):
        optimizers.make_schedule(np.ones(2))
    with pytest.raises(ValueError, match="one shorter than values"):
        optimizers.piecewise_constant([1, 2], [1.0, 2.0])
    with pytest.raises(ValueError, match="sequences"):
        optimizers.piecewise_constant(1, [1.0])
    init, apply = stax.Dropout(0.5)
    with pytest.raises(ValueError, match="requires apply_fun to be called with a PRNG key"):
        apply((), XS)


def test_stax_shapes_follow_jax():
    """init_fun's reported shapes for each conv/pool layer (recorded from JAX)."""
    for name in ["Conv", "ConvValid", "ConvTranspose", "ConvTransposeValid", "Conv1DTranspose",
                 "GeneralConv", "MaxPool", "SumPool", "AvgPool", "AvgPoolSpec", "Flatten"]:
        _, y, *_ = cases(jax)[f"stax.{name}"]()
        assert tuple(REF[f"stax.{name}/0"]) == np.shape(y), name
