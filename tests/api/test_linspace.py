"""``jnp.linspace`` against JAX 0.10.2's values (``data/jax_linspace.json``, made by
``data/make_linspace_table.py``). XLA turns JAX's ``start * (1 - i / d) + stop * (i / d)`` into a
product with the reciprocal and an fma whose operands depend on the bounds; folded constants take
no fma. meshjit follows that: bit for bit for constants inside jit, same-shape array bounds,
retstep and integer dtypes; for scalar bounds passed to a call XLA's CPU code contracts a few
elements differently (the second, in some sizes), and bounds broadcast against each other fuse
otherwise, so those are within one rounding of the bounds' magnitude."""

import json
from pathlib import Path

import numpy as np
import pytest

import meshjit
import meshjit.numpy as jnp
from meshjit.sharding import Mesh, NamedSharding, PartitionSpec as P

from linspace_cases import cases, flat

pytestmark = pytest.mark.usefixtures("restore_runtime_state")

EXPECTED = json.loads((Path(__file__).parent / "data" / "jax_linspace.json").read_text())
CASES = cases()
BIT_FOR_BIT = {"jit_constants", "arrays_axis1", "retstep", "int32", "small", "small_step"}


@pytest.mark.parametrize("x64", ["x64_off", "x64_on"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_linspace_equals_jax(name, x64):
    meshjit.config.update("jax_enable_x64", x64 == "x64_on")
    result, expected = flat(CASES[name](meshjit, jnp)), EXPECTED[x64][name]
    if name.split("(")[0] in BIT_FOR_BIT:
        assert result == expected
        return
    assert (result["dtype"], result["shape"]) == (expected["dtype"], expected["shape"])
    dtype = np.dtype(result["dtype"])
    got, want = (np.frombuffer(bytes.fromhex(case["bytes"]), dtype) for case in (result, expected))
    scale = np.max(np.abs(want), initial=0.0)
    np.testing.assert_allclose(got, want, rtol=0, atol=np.finfo(dtype).eps * scale)


def test_sharded_linspace_equals_unsharded():
    mesh = Mesh(np.array(meshjit.devices()[:8]).reshape(4, 2), ("x", "y"))
    start, stop = np.arange(6, dtype=np.float32), np.arange(6, dtype=np.float32) * 3 + 1
    function = meshjit.jit(lambda a, b: jnp.linspace(a, b, 16, axis=0),
                           in_shardings=NamedSharding(mesh, P("y")),
                           out_shardings=NamedSharding(mesh, P("x", "y")))
    expected = np.asarray(jnp.linspace(start, stop, 16, axis=0))
    result = function(start, stop)
    assert result.sharding == NamedSharding(mesh, P("x", "y"))
    np.testing.assert_array_equal(np.asarray(result), expected)


@pytest.mark.parametrize("call, error, text", [
    (lambda: jnp.linspace(0.0, 1.0, -1), ValueError, "Number of samples, -1, must be non-negative."),
    (lambda: jnp.linspace(jnp.zeros(2), jnp.ones(3), 5), ValueError, "broadcast"),
    (lambda: jnp.linspace(0.0, 1.0, 5, axis=2), ValueError, "out of bounds"),
])
def test_linspace_errors(call, error, text):
    with pytest.raises(error, match=text):
        call()
