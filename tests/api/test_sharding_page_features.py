"""Features the sharding pages' cells use: auto_axes' out_sharding when the mesh in context is
Auto (a constraint, no type change), ``jit(f).trace(x).jaxpr`` (make_jaxpr's program), and jit
returning ``None`` inside its outputs."""

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit.sharding import AxisType, auto_axes

pytestmark = pytest.mark.usefixtures("restore_runtime_state")


def test_auto_axes_out_sharding_on_an_auto_mesh_constrains_the_result():
    mesh = jax.make_mesh((4, 2), ("X", "Y"), (AxisType.Auto, AxisType.Auto))
    with jax.set_mesh(mesh):
        x = jax.device_put(np.arange(8.), jax.P("X"))

        @auto_axes
        def double(x):
            return x * 2

        result = double(x, out_sharding=jax.P("X"))
        np.testing.assert_array_equal(result, np.arange(8.) * 2)
        assert result.sharding.spec == jax.P("X")
        assert str(jax.typeof(result)) == "float32[8]"


def test_traced_jaxpr_is_make_jaxprs_program():
    def double(x):
        return x * 2

    x = jnp.arange(4.)
    assert str(jax.jit(double).trace(x).jaxpr) == str(jax.make_jaxpr(double)(x))


def test_jit_returns_none_inside_its_outputs():
    out = jax.jit(lambda x: (None, x + 1, {"a": None}))(jnp.zeros(3))
    assert out[0] is None and out[2] == {"a": None}
    np.testing.assert_array_equal(out[1], np.ones(3))
