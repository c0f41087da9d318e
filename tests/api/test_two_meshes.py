"""Two meshes of the same devices in one program (JAX's ``use_abstract_mesh`` of another shape
inside jit): values typed on the second mesh are partitioned over the first, results come back
on their type's mesh, with JAX 0.10.2's types, shardings and shards; axes that would need
sub-axes of the first mesh stay an error naming both meshes."""

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit.compiler.frontend.mesh_translation import translated
from meshjit.ir.sharding import AxisRef, DimSharding, MeshAttr, TensorSharding

pytestmark = pytest.mark.usefixtures("restore_runtime_state")
EXPLICIT = jax.sharding.AxisType.Explicit


def test_an_axis_is_the_run_of_axes_covering_its_devices():
    source, target = MeshAttr((("A", 8),)), MeshAttr((("X", 4), ("Y", 2)))
    sharding = TensorSharding("mesh_1", (DimSharding((AxisRef("A"),)), DimSharding()))
    assert translated(sharding, source, target, "mesh").dims[0].axes == (AxisRef("X"), AxisRef("Y"))
    pair = MeshAttr((("P", 2), ("Q", 4)))
    assert translated(TensorSharding("m", (DimSharding((AxisRef("P"),)),)), pair, target, "mesh") is None
    assert translated(sharding, source, MeshAttr((("X", 4), ("Y", 2)), (1, 0, 2, 3, 4, 5, 6, 7)), "mesh") is None


def test_jit_with_a_second_abstract_mesh_returns_arrays_on_it():
    with jax.set_mesh(jax.make_mesh((4, 2), ("X", "Y"))):
        x = jax.device_put(jnp.arange(32.).reshape(8, 4), jax.P("X", "Y"))

        @jax.jit
        def f(x):
            with jax.sharding.use_abstract_mesh(jax.sharding.AbstractMesh((8,), ("A",), (EXPLICIT,))):
                y = jax.reshard(x, jax.P("A", None))
                assert str(jax.typeof(y)) == "float32[8@A,4]"
                return y * 2, y.sum(1)

        z, total = f(x)
        assert str(jax.typeof(z)) == "float32[8@A,4]"
        assert repr(z.sharding) == ("NamedSharding(mesh=Mesh('A': 8, axis_types=(Explicit,)), spec=P('A', None), "
                                    "memory_kind=device)")
        np.testing.assert_array_equal(z, np.arange(32.).reshape(8, 4) * 2)
        np.testing.assert_array_equal(total, np.arange(32.).reshape(8, 4).sum(1))
        assert [shard.index for shard in z.addressable_shards] == [(slice(k, k + 1), slice(None)) for k in range(8)]
        with pytest.raises(ValueError, match="context mesh AbstractMesh\\('X': 4, 'Y': 2.* should match the aval "
                                             "mesh AbstractMesh\\('A': 8"):
            z + 1


def test_a_second_mesh_needing_sub_axes_is_an_error():
    with jax.set_mesh(jax.make_mesh((2, 4), ("X", "Y"))):
        x = jax.device_put(jnp.arange(32.).reshape(8, 4), jax.P("X", "Y"))

        @jax.jit
        def f(x):
            with jax.sharding.use_abstract_mesh(jax.sharding.AbstractMesh((4, 2), ("A", "B"), (EXPLICIT,) * 2)):
                return jax.reshard(x, jax.P("A", "B"))

        with pytest.raises(ValueError, match=r"one mesh per program, but shardings use meshes \['mesh', 'mesh_1'\]"):
            f(x)
