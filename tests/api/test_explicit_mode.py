"""Explicit sharding mode's names and mechanics (docs/explicit-sharding.md): typeof, AbstractMesh
and the abstract mesh in context, reshard, auto_axes and explicit_axes, mixed meshes, types
pinning propagation, PartitionSpec's unreduced and reduced axes, and the stages that take
ShapeDtypeStructs (jit(f).trace, eval_shape). The expected texts are JAX 0.10.2's."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit.sharding import AbstractMesh, AxisType, NamedSharding, ShardingTypeError
from meshjit.sharding import PartitionSpec as P

pytestmark = pytest.mark.usefixtures("restore_runtime_state")

MESH_TEXT = "AbstractMesh('X': 2, 'Y': 4, axis_types=(Explicit, Explicit), device_kind=cpu, num_cores=None, platform=cpu)"


@pytest.fixture
def mesh():
    mesh = jax.make_mesh((2, 4), ("X", "Y"))
    jax.set_mesh(mesh)
    return mesh


def _placed(shape, spec):
    return jax.device_put(np.arange(np.prod(shape), dtype=np.float32).reshape(shape), spec)


def test_typeof_prints_as_jax(mesh):
    x = _placed((8, 4), P("X", "Y"))
    assert str(jax.typeof(x)) == "float32[8@X,4@Y]"
    assert repr(jax.typeof(x)) == "ShapedArray(float32[8@X,4@Y])"
    assert repr(jax.typeof(2.0)) == "ShapedArray(float32[], weak_type=True)" and str(jax.typeof(2.0)) == "~float32[]"
    assert str(jax.typeof(np.arange(8))) == "int32[8]"
    assert str(jax.typeof(_placed((8, 4), P(("X", "Y"))))) == "float32[8@(X,Y),4]"
    sharding = jax.typeof(x).sharding
    assert repr(sharding) == f"NamedSharding(mesh={MESH_TEXT}, spec=P('X', 'Y'))"
    assert jax.typeof(jax.device_put(np.ones(8), P("X"))).sharding.spec == P("X")
    seen = []
    jax.jit(lambda value: seen.append(str(jax.typeof(value))) or value)(x)
    assert seen == ["float32[8@X,4@Y]"]


def test_abstract_meshes(mesh):
    assert str(jax.sharding.get_abstract_mesh()) == MESH_TEXT
    assert mesh.abstract_mesh == AbstractMesh((2, 4), ("X", "Y"), (AxisType.Explicit,) * 2)
    plain = AbstractMesh((2, 4), ("x", "y"))
    assert repr(plain) == "AbstractMesh('x': 2, 'y': 4, axis_types=(Auto, Auto))"
    assert plain.update_axis_types({"x": AxisType.Explicit}).explicit_axes == ("x",)
    assert repr(AbstractMesh((), ())) == "AbstractMesh((), axis_types=())"
    with pytest.raises(ValueError, match="differ in length"):
        AbstractMesh((2, 4), ("x",))
    inner = AbstractMesh((8,), ("A",), (AxisType.Explicit,))
    with jax.sharding.use_abstract_mesh(inner):
        assert jax.sharding.get_abstract_mesh() is inner
    jax.set_mesh(jax.make_mesh((8,), ("A",)))
    assert str(jax.sharding.get_abstract_mesh()).startswith("AbstractMesh('A': 8")


def test_partition_spec_unreduced_and_reduced():
    spec = P(None, unreduced={"X"})
    assert repr(spec) == "P(None, unreduced={'X'})" and spec != P(None) and spec.unreduced == frozenset({"X"})
    assert repr(P("x", reduced={"z", "y"})) == "P('x', reduced={'y', 'z'})"
    with pytest.raises(ValueError, match="cannot overlap with unreduced"):
        P("X", unreduced={"X"})
    with pytest.raises(TypeError, match="should of type `frozenset` or `set`"):
        P(unreduced="X")
    with pytest.raises(ValueError, match="dangerous"):
        tuple(P("a", unreduced={"X"}))
    assert P("a", unreduced={"X"}).partitions == ("a",)


def test_reshard_inside_and_outside_jit(mesh):
    eager = jax.reshard(np.arange(8.0), P("X"))
    assert eager.sharding == NamedSharding(mesh, P("X")) and eager.committed
    traced = jax.jit(lambda value: jax.reshard(value, P(("X", "Y")))).trace(np.arange(8.0))
    assert repr(traced.out_info.sharding.spec) == "P(('X', 'Y'),)"
    with pytest.raises(ValueError, match="cannot contain axis names that are of type Auto or Manual"):
        with jax.set_mesh(jax.make_mesh((2, 4), ("X", "Y"), (AxisType.Auto,) * 2)):
            jax.reshard(np.arange(8.0), P("X"))


def test_conflicting_operands_need_a_reshard_or_auto_axes(mesh):
    x, y = _placed((4, 4), P("X", None)), _placed((4, 4), P(None, "X"))
    with pytest.raises(ShardingTypeError, match=r"produces an illegally sharded result: f32\[4@X,4@X\]"):
        x + y
    assert str(jax.typeof(jax.reshard(y, P("X", None)) + x)) == "float32[4@X,4]"
    add = jax.sharding.auto_axes(lambda a, b: a + b)
    result = add(x, y, out_sharding=P("X", None))
    assert str(jax.typeof(result)) == "float32[4@X,4]"
    np.testing.assert_array_equal(np.asarray(result), np.asarray(x) + np.asarray(y))
    with pytest.raises(TypeError, match="Missing required keyword argument: 'out_sharding'"):
        add(x, y)


def test_auto_and_explicit_axes_change_the_mesh_in_context(mesh):
    seen = []

    @functools.partial(jax.sharding.auto_axes, axes="X")
    def half_auto(value):
        seen.append((str(jax.sharding.get_abstract_mesh()), str(jax.typeof(value))))
        return value * 2

    @jax.jit
    def f(value):
        return half_auto(value, out_sharding=P("X", "Y")) + 1

    result = f(_placed((4, 4), P("X", "Y")))
    assert seen == [(MESH_TEXT.replace("(Explicit, Explicit)", "(Auto, Explicit)"), "float32[4,4@Y]")]
    assert str(jax.typeof(result)) == "float32[4@X,4@Y]"
    np.testing.assert_array_equal(np.asarray(result), np.arange(16.0).reshape(4, 4) * 2 + 1)

    auto_mesh = jax.make_mesh((2, 4), ("X", "Y"), axis_types=(AxisType.Auto,) * 2)

    @jax.sharding.explicit_axes
    def explicit(value):
        seen.append(str(jax.typeof(value * 2)))
        return value * 2

    with jax.set_mesh(auto_mesh):
        out = jax.jit(lambda value: explicit(value, in_sharding=P("X", "Y")) + 1)(np.ones((4, 4), np.float32))
    assert seen[-1] == "float32[4@X,4@Y]" and str(jax.typeof(out)) == "float32[4,4]"


def test_a_mixed_mesh_types_only_its_explicit_axes():
    mixed = jax.make_mesh((2, 4), ("X", "Y"), axis_types=(AxisType.Explicit, AxisType.Auto))
    value = jax.device_put(np.arange(32.0).reshape(8, 4), NamedSharding(mixed, P("X", "Y")))
    assert str(jax.typeof(value)) == "float32[8@X,4]"
    with jax.set_mesh(mixed):
        doubled = jax.jit(lambda v: v * 2)(value)
        summed = jnp.sum(value, 0)
    assert doubled.sharding == NamedSharding(mixed, P("X", "Y"))
    assert str(jax.typeof(summed)) == "float32[4]" and summed.sharding.spec == P("Y")
    np.testing.assert_array_equal(np.asarray(summed), np.arange(32.0).reshape(8, 4).sum(0))


def test_types_pin_propagation(mesh):
    """A value typed unsplit stays unsplit over Explicit axes, where Auto propagation would
    shard it from its consumer (here the dot would be computed row-split)."""
    def f(a, b):
        return jax.reshard(a @ b, P("X"))

    a, b = np.ones((8, 4), np.float32), np.ones((4, 4), np.float32)
    propagated = jax.jit(f).lower(a, b).compile().program.propagated
    dot = next(op for op in propagated.main.body.ops if op.name == "dot_general")
    sharding = dot.shardings[0]
    assert all(not dim.axes and dim.is_closed for dim in sharding.dims)
    assert {axis.name for axis in sharding.replicated} == {"X", "Y"}
    auto = jax.make_mesh((2, 4), ("X", "Y"), axis_types=(AxisType.Auto,) * 2)
    with jax.set_mesh(auto):
        auto_program = jax.jit(lambda a, b: jax.lax.with_sharding_constraint(a @ b, P("X"))).lower(a, b).compile()
    auto_dot = next(op for op in auto_program.program.propagated.main.body.ops if op.name == "dot_general")
    assert [axis.name for axis in auto_dot.shardings[0].dims[0].axes] == ["X"]


def test_shape_dtype_struct_trace_and_eval_shape(mesh):
    struct = jax.ShapeDtypeStruct((8, 4), np.float32, sharding=NamedSharding(mesh, P("X")))
    assert repr(struct) == ("ShapeDtypeStruct(shape=(8, 4), dtype=float32, sharding=NamedSharding(mesh=Mesh('X': 2, "
                            "'Y': 4, axis_types=(Explicit, Explicit)), spec=P('X',), memory_kind=device))")
    assert struct.ndim == 2 and struct.size == 32 and struct == jax.ShapeDtypeStruct(
        (8, 4), np.float32, sharding=NamedSharding(mesh, P("X")))

    def f(x, y):
        return x @ y.T, x.sum()

    other = jax.ShapeDtypeStruct((16, 4), np.float32)
    traced = jax.jit(f).trace(struct, other)
    matrix, total = traced.out_info
    assert repr(matrix) == (f"ShapeDtypeStruct(shape=(8, 16), dtype=float32, sharding=NamedSharding(mesh={MESH_TEXT}, "
                            f"spec=P('X', None)))")
    assert total.shape == () and total.sharding.spec == P()
    assert traced.fun_name == "f" and traced.args_info[0][0] == struct
    compiled = traced.lower().compile()
    x = jax.device_put(np.ones((8, 4), np.float32), NamedSharding(mesh, P("X")))
    product, _ = compiled(x, np.ones((16, 4), np.float32))
    assert str(jax.typeof(product)) == "float32[8@X,16]"
    assert jax.eval_shape(f, struct, other) == traced.out_info
    assert jax.jit(f).eval_shape(struct, other)[1].dtype == np.float32
    # as JAX: a numpy argument belongs to no mesh, a result computed under set_mesh to its mesh
    assert repr(jax.eval_shape(lambda v: v, np.ones(3))) == "ShapeDtypeStruct(shape=(3,), dtype=float32)"
    assert jax.eval_shape(lambda v: v * 2, np.ones(3)).sharding.spec == P(None)
    with jax.set_mesh(mesh):
        spec_struct = jax.ShapeDtypeStruct((8, 4), np.float32, sharding=P("X"))
    assert spec_struct.sharding == NamedSharding(mesh, P("X"))


def test_a_program_traced_under_one_mesh_is_traced_again_under_another(mesh):
    double = jax.jit(lambda v: v * 2)
    value = _placed((4, 2), P("X"))
    assert str(jax.typeof(double(value))) == "float32[4@X,2]"
    with jax.set_mesh(jax.make_mesh((8,), ("A",))):
        with pytest.raises(ValueError, match="context mesh .* should match the aval mesh"):
            double(value)


def test_with_sharding_constraint_names_only_auto_axes_outside_an_explicit_context():
    # JAX 0.10: without an all-Explicit mesh in context a constraint may not name Explicit axes.
    mesh = jax.make_mesh((4, 2), ("x", "y"))
    x = jax.device_put(np.ones((8, 4), np.float32), NamedSharding(mesh, P("x", "y")))
    for spec in (P("y", "x"), P("x", "y"), P(None, "y")):
        with pytest.raises(ValueError, match="can only refer to Auto axes of the mesh"):
            jax.lax.with_sharding_constraint(x, NamedSharding(mesh, spec))
        with pytest.raises(ValueError, match="You probably meant to use `reshard` API"):
            jax.jit(lambda a, spec=spec: jax.lax.with_sharding_constraint(a + 1, NamedSharding(mesh, spec)))(x)
    # P() names no axis: inside jit the Explicit axes of the type stay, eagerly the value reshards
    kept = jax.jit(lambda a: jax.lax.with_sharding_constraint(a + 1, NamedSharding(mesh, P())))(x)
    assert kept.sharding.spec == P("x", "y") and str(jax.typeof(kept)) == "float32[8@x,4@y]"
    assert jax.lax.with_sharding_constraint(x, NamedSharding(mesh, P())).sharding.spec == P()


def test_with_sharding_constraint_asserts_under_an_explicit_context_mesh():
    mesh = jax.make_mesh((4, 2), ("x", "y"))
    x = jax.device_put(np.ones((8, 4), np.float32), NamedSharding(mesh, P("x", "y")))
    with jax.set_mesh(mesh):
        same = jax.jit(lambda a: jax.lax.with_sharding_constraint(a * 2, P("x", "y")))(x)
        assert same.sharding.spec == P("x", "y")
        with pytest.raises(AssertionError, match=r"did not match the sharding provided: P\('x', None\)"):
            jax.jit(lambda a: jax.lax.with_sharding_constraint(a * 2, P("x")))(x)
    with pytest.raises(ValueError, match="cannot contain `P.UNCONSTRAINED` when no mesh axis_types are `Auto`"):
        NamedSharding(mesh, P("x", P.UNCONSTRAINED))
    with pytest.raises(RuntimeError, match="requires a non-empty mesh in context"):
        jax.lax.with_sharding_constraint(x, P("x"))


def _mesh_4x2():
    return jax.make_mesh((4, 2), ("x", "y"))


@pytest.mark.parametrize("transform", [
    lambda v: jnp.fft.fft(v, axis=0), lambda v: jnp.fft.fft(v), lambda v: jnp.fft.ifft2(v),
    lambda v: jnp.fft.fftn(v), lambda v: jnp.fft.ifft(v, axis=0),
])
def test_fft_keeps_its_operand_sharding_as_jax(transform):
    """JAX's fft types its result as its operand, transform dims included: the partitioner gathers
    a split transform dim and slices the result back."""
    values = np.arange(32.0, dtype=np.float32).reshape(8, 4)
    x = jax.device_put(values, NamedSharding(_mesh_4x2(), P("x", "y")))
    result = jax.jit(transform)(x)
    assert result.sharding.spec == P("x", "y")
    np.testing.assert_allclose(np.asarray(result), np.asarray(transform(values)), atol=1e-4)


def test_fft_of_a_dim_its_axes_cannot_split_raises_jax_error():
    x = jax.device_put(np.ones((8, 4), np.float32), NamedSharding(_mesh_4x2(), P("x", "y")))
    with pytest.raises(ValueError, match=r"partitioned 2 times, but does not evenly divide the dimension size 3"):
        jax.jit(jnp.fft.rfft)(x)


def test_results_carry_the_out_shardings_given():
    x = jax.device_put(np.ones((8, 4), np.float32), NamedSharding(_mesh_4x2(), P("x", "y")))
    assert jax.jit(lambda a: a * 2, out_shardings=NamedSharding(_mesh_4x2(), P()))(x).sharding.spec == P()
    assert jax.jit(lambda a: a, out_shardings=NamedSharding(_mesh_4x2(), P("x")))(x).sharding.spec == P("x")
    assert jax.jit(lambda a: a * 2)(x).sharding.spec == P("x", "y")


def test_padding_a_split_dim_names_the_padded_size():
    x = jax.device_put(np.ones((8, 4), np.float32), NamedSharding(_mesh_4x2(), P("x", "y")))
    with pytest.raises(ShardingTypeError, match=r"out dim \(10\) is not divisible by mesh axes \(4\)"):
        jax.jit(lambda a: jnp.pad(a, ((1, 1), (0, 0))))(x)


def test_cond_results_have_their_branches_types_as_jax():
    mesh = _mesh_4x2()
    values = np.arange(64.0, dtype=np.float32).reshape(8, 8)
    x = jax.device_put(values, NamedSharding(mesh, P("x", "y")))
    result = jax.jit(lambda a: jax.lax.cond(a.sum() > 0, lambda q: q + 1, lambda q: q * 2, a))(x)
    assert result.sharding.spec == P("x", "y")
    np.testing.assert_array_equal(np.asarray(result), values + 1)
    reduced = jax.jit(lambda a: jax.lax.switch(1, [lambda q: q.sum(0), lambda q: q.max(0)], a))(x)
    assert reduced.sharding.spec == P("y")
    np.testing.assert_array_equal(np.asarray(reduced), values.max(0))
    gradient = jax.jit(jax.grad(lambda a: jax.lax.cond(True, lambda q: (q ** 2).sum(), jnp.sum, a)))(x)
    assert gradient.sharding.spec == P("x", "y")
    np.testing.assert_array_equal(np.asarray(gradient), 2 * values)


def test_cond_branches_of_different_shardings_raise_jax_error():
    x = jax.device_put(np.ones((8, 8), np.float32), NamedSharding(_mesh_4x2(), P("x", "y")))
    expected = (r"The output of true_fun has type float32\[8@y,8@x\] but the corresponding output of "
                r"false_fun has type float32\[8@x,8@y\]")
    with pytest.raises(TypeError, match=expected):
        jax.jit(lambda a: jax.lax.cond(a.sum() > 0, lambda q: q.T, lambda q: q * 2, a))(x)


def test_scanning_over_a_split_leading_dim_raises_jax_error():
    x = jax.device_put(np.ones((8, 8), np.float32), NamedSharding(_mesh_4x2(), P("x", "y")))
    with pytest.raises(ValueError, match=r"0th dimension of all xs should be replicated. Got P\('x', 'y'\)"):
        jax.jit(lambda a: jax.lax.scan(lambda c, r: (c + r, c), jnp.zeros(8), a)[0])(x)
