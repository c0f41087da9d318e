"""lax.pcast(..., to='varying') and the older lax.pvary inside shard_map: values, layouts and the
check_vma answers, each compared with what JAX 0.10.2 gives for the same program."""

from __future__ import annotations

import numpy as np
import pytest

import meshjit as jax
from meshjit import lax
from meshjit.sharding import AxisType, NamedSharding
from meshjit.sharding import PartitionSpec as P

MESH = jax.make_mesh((2, 4), ("i", "j"), axis_types=(AxisType.Auto,) * 2)
X = np.arange(8.0, dtype=np.float32)


def _mapped(body, in_specs=None, out_specs=None, **options):
    """``body`` mapped over MESH under jit; in_specs and out_specs are P() unless given."""
    in_specs = P() if in_specs is None else in_specs
    out_specs = P() if out_specs is None else out_specs
    return jax.jit(jax.shard_map(body, mesh=MESH, in_specs=in_specs, out_specs=out_specs, **options))


@pytest.mark.parametrize("axis_name, out_spec, copies", [
    ("i", P("i"), 2), (("i", "j"), P(("i", "j")), 8), ("j", P("j"), 4), (["i"], P("i"), 2)])
def test_a_cast_value_may_be_concatenated_along_its_axes(axis_name, out_spec, copies):
    result = _mapped(lambda a: lax.pcast(a, axis_name, to="varying"), out_specs=out_spec)(X)
    np.testing.assert_array_equal(np.asarray(result), np.tile(X, copies))
    assert result.sharding == NamedSharding(MESH, out_spec)


def test_pcast_maps_pytrees_and_keeps_dtypes_and_python_scalars():
    def body(a):
        cast = lax.pcast({"a": a, "b": [a.astype(np.int32), a > 3]}, "i", to="varying")
        return cast["a"] * lax.pcast(2.0, "i", to="varying"), cast["b"][0], cast["b"][1]

    doubled, integers, flags = _mapped(body, out_specs=P("i"))(X)
    np.testing.assert_array_equal(np.asarray(doubled), np.tile(X * 2, 2))
    assert integers.dtype == np.int32 and flags.dtype == np.bool_ and doubled.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(flags), np.tile(X > 3, 2))


def test_a_cast_value_summed_over_its_axis_counts_every_device():
    result = _mapped(lambda a: lax.psum(lax.pcast(a, "i", to="varying"), "i"))(X)
    np.testing.assert_array_equal(np.asarray(result), X * 2)


def test_check_vma_rejects_replicating_a_cast_value():
    # JAX 0.10.2: ValueError "out_specs is P() which implies that the corresponding output value
    # is only varying across mesh axes {} and not {i}".
    with pytest.raises(ValueError, match=r"only varying across mesh axes \{\} and not \{i\}"):
        _mapped(lambda a: lax.pcast(a, "i", to="varying"))(X)
    with pytest.raises(ValueError, match=r"replicated across mesh axis 'j', but could not infer replication"):
        _mapped(lambda a: lax.pcast(a, "j", to="varying"), out_specs=P("i"))(X)


def test_without_check_vma_pcast_is_the_identity():
    result = _mapped(lambda a: lax.pcast(a, "i", to="varying"), check_vma=False)(X)
    np.testing.assert_array_equal(np.asarray(result), X)
    # JAX skips the varying check too: casting a varying value is allowed then.
    split = _mapped(lambda a: lax.pcast(a, "i", to="varying"), in_specs=P("i"), out_specs=P("i"), check_vma=False)
    np.testing.assert_array_equal(np.asarray(split(X)), X)
    text = jax.jit(jax.shard_map(lambda a: lax.pcast(a, "i", to="varying"), mesh=MESH, in_specs=P(), out_specs=P(),
                                 check_vma=False)).lower(X).as_text()
    assert "pvary" not in text


def test_the_traced_program_records_the_cast():
    text = jax.jit(jax.shard_map(lambda a: lax.pcast(a, ("j", "i"), to="varying"), mesh=MESH, in_specs=P(),
                                 out_specs=P(("i", "j")))).lower(X).as_text()
    assert 'pvary(' in text and 'axes = ["i", "j"]' in text  # ordered as the mesh's axes, as JAX


def test_empty_axis_name_returns_the_value_itself():
    result = _mapped(lambda a: lax.pcast(a, (), to="anything"))(X)  # JAX checks `to` only after this
    np.testing.assert_array_equal(np.asarray(result), X)


@pytest.mark.parametrize("body, in_spec, error, pattern", [
    # JAX 0.10.2: ValueError "Unsupported pcast from=varying, to='varying'"
    (lambda a: lax.pcast(a, "i", to="varying"), P("i"), ValueError, r"already varies along \['i'\]"),
    # JAX 0.10.2: ValueError "... input state: {'invarying', 'varying'}"
    (lambda a: lax.pcast(a, ("i", "j"), to="varying"), P("i"), ValueError, r"mixes axes the value .* \(\['i'\]\)"),
    # JAX 0.10.2: TypeError "axis_name={'i'} must be a tuple or a str. Got {'i'}"
    (lambda a: lax.pcast(a, {"i"}, to="varying"), P(), TypeError, r"axis_name=\{'i'\} must be a tuple or a str"),
    # JAX 0.10.2: ValueError "Got unexpected `to` value. Allowed `to` values are: {...}"
    (lambda a: lax.pcast(a, "i", to="invarying"), P(), ValueError, "unexpected `to` value 'invarying'"),
    # JAX 0.10.2 casts to its reduced and unreduced types, which meshjit does not model.
    (lambda a: lax.pcast(a, "i", to="unreduced"), P(), ValueError, "does not model"),
    # JAX 0.10.2 fails with a bare AssertionError here.
    (lambda a: lax.pcast(a, "k", to="varying"), P(), NameError, "unbound axis name: 'k'"),
])
def test_errors(body, in_spec, error, pattern):
    with pytest.raises(error, match=pattern):
        _mapped(body, in_specs=in_spec, out_specs=P(("i", "j")))(X)


def test_outside_shard_map():
    # JAX 0.10.2: ValueError "pvary should be called under jax.shard_map." eagerly; NameError under jit.
    with pytest.raises(ValueError, match="pcast should be called under meshjit.shard_map"):
        lax.pcast(X, "i", to="varying")
    with pytest.raises(NameError, match="unbound axis name: 'i'"):
        jax.jit(lambda a: lax.pcast(a, "i", to="varying"))(X)


def test_pvary_is_pcast_to_varying_with_a_deprecation_warning():
    with pytest.warns(DeprecationWarning, match=r"removed in JAX v0.10.0; use `jax.lax.pcast\(..., to='varying'\)`"):
        result = _mapped(lambda a: lax.pvary(a, "i"), out_specs=P("i"))(X)
    np.testing.assert_array_equal(np.asarray(result), np.tile(X, 2))
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="already varies"):
        _mapped(lambda a: lax.pvary(a, "i"), in_specs=P("i"), out_specs=P("i"))(X)


def test_pcast_on_an_explicit_mesh_from_make_mesh():
    mesh = jax.make_mesh((2, 4), ("i", "j"))  # Explicit axes; in_specs may then be inferred
    array = jax.device_put(X, NamedSharding(mesh, P()))
    result = jax.shard_map(lambda a: lax.pcast(a, "j", to="varying") + 1, mesh=mesh, out_specs=P("j"))(array)
    np.testing.assert_array_equal(np.asarray(result), np.tile(X + 1, 4))
    assert result.sharding == NamedSharding(mesh, P("j"))
