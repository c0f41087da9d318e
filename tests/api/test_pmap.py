"""meshjit.pmap as JAX 0.10's (a shard_map over a 1-D mesh of the devices): the collectives'
docstring examples print JAX's values as written, in_axes/out_axes, static_broadcasted_argnums,
devices, and JAX's errors."""

from __future__ import annotations

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit import lax

# The examples of jax.lax.psum, pmean, all_gather and psum_scatter (JAX 0.10.2's docstrings, "with
# 4 XLA devices available"), with the text JAX prints.
DOCSTRING_EXAMPLES = [
    ("psum", lambda: jax.pmap(lambda x: jax.lax.psum(x, "i"), axis_name="i")(np.arange(4)), "[6 6 6 6]"),
    ("psum ratio", lambda: jax.pmap(lambda x: x / jax.lax.psum(x, "i"), axis_name="i")(np.arange(4)),
     "[0.         0.16666667 0.33333334 0.5       ]"),
    ("psum groups", lambda: jax.pmap(lambda x: jax.lax.psum(x, "i", axis_index_groups=[[0, 1], [2, 3]]),
                                     axis_name="i")(np.arange(4)), "[1 1 5 5]"),
    ("psum 2-d", lambda: jax.pmap(lambda x: jax.lax.psum(x, "i"), axis_name="i")(np.arange(16).reshape(4, 4)),
     "[[24 28 32 36]\n [24 28 32 36]\n [24 28 32 36]\n [24 28 32 36]]"),
    ("psum 2-d groups", lambda: jax.pmap(lambda x: jax.lax.psum(x, "i", axis_index_groups=[[0, 1], [2, 3]]),
                                         axis_name="i")(np.arange(16).reshape(4, 4)),
     "[[ 4  6  8 10]\n [ 4  6  8 10]\n [20 22 24 26]\n [20 22 24 26]]"),
    ("pmean", lambda: jax.pmap(lambda x: jax.lax.pmean(x, "i"), axis_name="i")(np.arange(4)), "[1.5 1.5 1.5 1.5]"),
    ("pmean ratio", lambda: jax.pmap(lambda x: x / jax.lax.pmean(x, "i"), axis_name="i")(np.arange(4)),
     "[0.        0.6666667 1.3333334 2.       ]"),
    ("all_gather", lambda: jax.pmap(lambda x: jax.lax.all_gather(x, "i"), axis_name="i")(np.arange(4)),
     "[[0 1 2 3]\n [0 1 2 3]\n [0 1 2 3]\n [0 1 2 3]]"),
    ("all_gather groups", lambda: jax.pmap(lambda x: jax.lax.all_gather(x, "i", axis_index_groups=[[0, 2], [3, 1]]),
                                           axis_name="i")(np.arange(16).reshape(4, 4)),
     "[[[ 0  1  2  3]\n  [ 8  9 10 11]]\n\n [[12 13 14 15]\n  [ 4  5  6  7]]\n\n"
     " [[ 0  1  2  3]\n  [ 8  9 10 11]]\n\n [[12 13 14 15]\n  [ 4  5  6  7]]]"),
    ("psum_scatter", lambda: jax.pmap(lambda x: jax.lax.psum_scatter(x, "i"), axis_name="i")(np.arange(16).reshape(4, 4)),
     "[24 28 32 36]"),
    ("psum_scatter tiled", lambda: jax.pmap(lambda x: jax.lax.psum_scatter(x, "i", tiled=True),
                                            axis_name="i")(np.arange(16).reshape(4, 4)),
     "[[24]\n [28]\n [32]\n [36]]"),
    ("psum_scatter groups", lambda: jax.pmap(
        lambda x: jax.lax.psum_scatter(x, "i", axis_index_groups=[[0, 2], [3, 1]], tiled=True),
        axis_name="i")(np.arange(16).reshape(4, 4)),
     "[[ 8 10]\n [20 22]\n [12 14]\n [16 18]]"),
]


@pytest.mark.parametrize("name, call, printed", DOCSTRING_EXAMPLES, ids=[row[0] for row in DOCSTRING_EXAMPLES])
def test_collective_docstring_examples_print_jax_s_values(name, call, printed, capsys):
    print(call())
    assert capsys.readouterr().out.strip() == printed


def test_the_brief_s_example_on_eight_devices():
    out = jax.pmap(lambda x: lax.psum(x, "i"), axis_name="i")(jnp.arange(8.0))
    np.testing.assert_array_equal(np.asarray(out), np.full(8, 28.0))
    assert out.sharding.num_devices == 8


def test_in_axes_out_axes_and_unmapped_arguments():
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    out = jax.pmap(lambda row, scale: row * scale, in_axes=(1, None), out_axes=1)(x, np.float32(2.0))
    np.testing.assert_allclose(np.asarray(out), x * 2)
    total = jax.pmap(lambda row: lax.psum(row, "d"), axis_name="d", out_axes=None)(x)
    np.testing.assert_allclose(np.asarray(total), x.sum(0))
    pairs = jax.pmap(lambda tree: {"double": tree["a"] * 2}, in_axes=({"a": 0},))({"a": x})
    np.testing.assert_allclose(np.asarray(pairs["double"]), 2 * x)


def test_static_broadcasted_argnums_and_devices():
    calls = []

    def scaled(x, power):
        calls.append(power)
        return x**power

    f = jax.pmap(scaled, static_broadcasted_argnums=1, devices=jax.devices()[-2:])
    out = f(np.array([2.0, 3.0], np.float32), 3)
    np.testing.assert_allclose(np.asarray(out), [8.0, 27.0])
    assert {device.id for device in out.sharding.device_set} == {6, 7}
    f(np.array([2.0, 3.0], np.float32), 3)
    assert calls == [3]


def test_axis_index_and_ppermute_inside_pmap():
    ring = jax.pmap(lambda x: lax.ppermute(x, "i", [(j, (j + 1) % 4) for j in range(4)]), axis_name="i")
    np.testing.assert_array_equal(np.asarray(ring(np.arange(4))), [3, 0, 1, 2])
    index = jax.pmap(lambda x: x + lax.axis_index("i"), axis_name="i")(np.zeros(4, np.int32))
    np.testing.assert_array_equal(np.asarray(index), np.arange(4))


def test_pmap_composes_with_grad_and_jit():
    def step(w, x):
        gradient = jax.grad(lambda w: jnp.sum((x * w) ** 2))(w)
        return lax.pmean(gradient, "batch")

    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    grads = jax.pmap(step, axis_name="batch", in_axes=(None, 0))(np.float32(2.0), x)
    np.testing.assert_allclose(np.asarray(grads), np.full(4, 506.0))  # JAX's value
    jitted = jax.jit(jax.pmap(lambda x: x * 2))
    np.testing.assert_allclose(np.asarray(jitted(np.arange(4.0))), np.arange(4.0) * 2)


ERRORS = [
    ("too many entries", lambda: jax.pmap(lambda x: x)(np.arange(9.0)), ValueError,
     "requires 9 logical devices, but only 8"),
    ("inconsistent sizes", lambda: jax.pmap(lambda a, b: a + b)(np.ones(2), np.ones(3)), ValueError,
     "inconsistent sizes"),
    ("devices of another count", lambda: jax.pmap(lambda x: x, devices=jax.devices()[:3])(np.ones(2)), ValueError,
     "pmap got 3 devices but the mapped axis has size 2"),
    ("axis name not a string", lambda: jax.pmap(lambda x: x, axis_name=3), TypeError,
     "pmap axis_name must be a string"),
    ("unbound collective", lambda: jax.pmap(lambda x: lax.psum(x, "j"), axis_name="i")(np.ones(2)), NameError,
     "unbound axis name: 'j'"),
]


@pytest.mark.parametrize("name, call, error, fragment", ERRORS, ids=[row[0] for row in ERRORS])
def test_errors(name, call, error, fragment):
    with pytest.raises(error) as caught:
        call()
    assert fragment in str(caught.value)
