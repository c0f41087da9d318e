"""Bad input to shard_map and its collectives: a clear error at trace time naming the argument,
what was expected and what came."""

from __future__ import annotations

import numpy as np
import pytest

import meshjit as jax
from meshjit import lax
from meshjit.shard_map_api import shard_map
from meshjit.sharding import AxisType, DuplicateSpecError
from meshjit.sharding import PartitionSpec as P

MESH = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
X = np.zeros((8, 4), np.float32)


def _identity(block):
    return block


def _mapped(body=_identity, in_specs=None, out_specs=None, **options):
    """``body`` mapped over MESH, with in_specs and out_specs P("x") unless given."""
    in_specs = P("x") if in_specs is None else in_specs
    out_specs = P("x") if out_specs is None else out_specs
    return shard_map(body, mesh=MESH, in_specs=in_specs, out_specs=out_specs, **options)


# --- specs -----------------------------------------------------------------------------------------


_UNKNOWN_AXIS = r"P\('z',\) for args\[0\] \(parameter 'block' of _identity\) refers to 'z', which is not an axis"
_NOT_MANUAL = r"refers to 'y', which is not a manual axis; the manual axes are \['x'\]"


@pytest.mark.parametrize(("options", "error", "pattern"), [
    ({"in_specs": P("z")}, ValueError, _UNKNOWN_AXIS),
    ({"out_specs": P("q")}, ValueError, r"out_specs entry P\('q',\) for output 0 .*refers to 'q'"),
    ({"in_specs": P("y"), "axis_names": {"x"}}, ValueError, _NOT_MANUAL),
    ({"in_specs": P("x", None, "y")}, ValueError, r"has 3 entries, but the value has rank 2"),
    ({"out_specs": P("x", None, None)}, ValueError, r"out_specs entry .* has 3 entries, but the value has rank 2"),
    ({"in_specs": P("x", "x")}, DuplicateSpecError, r"maps mesh axes \['x'\] to more than one dim"),
    ({"in_specs": P(P.UNCONSTRAINED)}, ValueError, r"uses P.UNCONSTRAINED"),
    ({"in_specs": ("x",)}, TypeError, r"pytree of PartitionSpecs, but the entry for args\[0\].* is 'x' of type str"),
    ({"in_specs": (P("x"), P("x"))}, ValueError, r"in_specs must be a pytree prefix of the positional arguments"),
    ({"out_specs": (P("x"), P("x"))}, ValueError, r"out_specs must be a pytree prefix of the outputs"),
    ({"axis_names": {"q"}}, ValueError, r"axis_names=\['q'\] must be a subset of the mesh's axis names"),
])
def test_bad_specs(options, error, pattern):
    with pytest.raises(error, match=pattern):
        _mapped(**options)(X)


def test_shapes_that_do_not_divide():
    with pytest.raises(ValueError, match=r"for args\[0\].* of shape \(8, 3\) splits dim 1 \(size 3\) over mesh "
                                         r"axes \['x'\] \(2 devices\), which does not divide it evenly"):
        _mapped(in_specs=P("y", "x"), out_specs=P("y", "x"))(np.zeros((8, 3), np.float32))


def test_no_mesh():
    with pytest.raises(ValueError, match=r"needs a mesh: pass mesh=... or set one with"):
        shard_map(_identity, in_specs=P("x"), out_specs=P("x"))(X)


def test_in_specs_cannot_be_inferred_on_auto_axes():
    with pytest.raises(TypeError, match=r"only when every mesh axis is Explicit, but the mesh has axis types "
                                        r"\(x: Auto, y: Auto\)"):
        shard_map(_identity, mesh=MESH, out_specs=P("x"))(X)


def test_in_specs_are_inferred_from_types_inside_jit():
    # as JAX: a numpy argument's type is unsplit, so its block is the whole array
    explicit = jax.make_mesh((2, 4), ("x", "y"))
    np.testing.assert_array_equal(np.asarray(jax.jit(shard_map(_identity, mesh=explicit, out_specs=P()))(X)), X)
    placed = jax.device_put(np.arange(32.0).reshape(8, 4), jax.NamedSharding(explicit, P("x")))
    shapes = []
    result = jax.jit(shard_map(lambda block: shapes.append(block.shape) or block, mesh=explicit,
                               out_specs=P("x")))(placed)
    assert shapes == [(4, 4)]
    np.testing.assert_array_equal(np.asarray(result), np.asarray(placed))


def test_bad_arguments():
    with pytest.raises(TypeError, match=r"takes positional arguments only, got keyword arguments \['block'\]"):
        _mapped()(block=X)
    with pytest.raises(TypeError, match=r"argument args\[1\] .* of type str is not an array; give it the in_spec "
                                        r"None"):
        _mapped(lambda block, name: block, in_specs=(P("x"), P()))(X, "name")
    with pytest.raises(TypeError, match=r"returned output 0 of type str, which is not an array"):
        _mapped(lambda block: "text", out_specs=P())(X)
    with pytest.raises(TypeError, match=r"shard_map expects a callable"):
        shard_map(3, mesh=MESH, in_specs=P(), out_specs=P())
    with pytest.raises(TypeError, match=r"mesh must be a meshjit.sharding.Mesh"):
        shard_map(_identity, mesh="mesh", in_specs=P(), out_specs=P())
    with pytest.raises(TypeError, match=r"check_vma must be a bool"):
        shard_map(_identity, mesh=MESH, in_specs=P(), out_specs=P(), check_vma="yes")


def test_nested_shard_map_is_rejected():
    inner = shard_map(_identity, mesh=MESH, in_specs=P("y"), out_specs=P("y"), axis_names={"y"})
    with pytest.raises(ValueError, match=r"shard_map inside the body of another shard_map"):
        _mapped(inner, axis_names={"x"})(X)


# --- collectives -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("perm", "error", "pattern"), [
    ([(0, 1), (1, 1)], ValueError, r"perm \(\(0, 1\), \(1, 1\)\) is not a partial permutation: its targets repeat"),
    ([(0, 1), (0, 0)], ValueError, r"its sources repeat"),
    # NOTE: JAX's types: an index out of range is an IndexError
    ([(0, 2)], IndexError, r"pair \(0, 2\) of perm \(\(0, 2\),\) is out of range for axes \('x',\) of size 2"),
    ([(-3, 0)], IndexError, r"out of range"),
])
def test_ppermute_needs_a_partial_permutation(perm, error, pattern):
    with pytest.raises(error, match=pattern):
        _mapped(lambda block: lax.ppermute(block, "x", perm))(X)


@pytest.mark.parametrize(("perm", "error"), [([0, 1], TypeError), ([(0.5, 1)], TypeError), (3, TypeError),
                                             ([(0, 1, 0)], ValueError), ("ab", ValueError)])
def test_ppermute_needs_pairs(perm, error):
    with pytest.raises(error, match=r"perm must be a sequence of \(source, target\) int pairs"):
        _mapped(lambda block: lax.ppermute(block, "x", perm))(X)


@pytest.mark.parametrize(("body", "pattern"), [
    (lambda block: lax.all_to_all(block, "x", 0, 1),
     r"all_to_all: with tiled=False, split_axis 0 of an operand of shape \(4, 4\) must have size 2"),
    (lambda block: lax.all_to_all(block[:3], "x", 0, 1, tiled=True),
     r"split_axis 0 of an operand of shape \(3, 4\) has size 3, which does not divide by 2"),
    (lambda block: lax.psum_scatter(block, "x"),
     r"psum_scatter: with tiled=False, scatter_dimension 0 of an operand of shape \(4, 4\) must have size 2"),
    (lambda block: lax.psum_scatter(block[:3], "x", tiled=True),
     r"scatter_dimension 0 of an operand of shape \(3, 4\) has size 3, which does not divide by 2"),
    (lambda block: lax.all_gather(block, "x", axis=3, tiled=True), r"all_gather"),
])
def test_collective_sizes_must_match(body, pattern):
    with pytest.raises((ValueError, np.exceptions.AxisError), match=pattern):
        _mapped(body, out_specs=P())(X)


def test_unbound_axis_names():
    with pytest.raises(NameError, match=r"unbound axis name: 'x'. psum .* called outside the body of a "
                                        r"meshjit.shard_map"):
        lax.psum(X, "x")
    with pytest.raises(NameError, match=r"unbound axis name: 'x'. axis_index"):
        jax.jit(lambda block: block + lax.axis_index("x"))(X)
    with pytest.raises(NameError, match=r"unbound axis name: 'y'. psum .* manual over \['x'\]"):
        _mapped(lambda block: lax.psum(block, "y"), axis_names={"x"})(X)
    with pytest.raises(NameError, match=r"unbound axis name: 'q'"):
        _mapped(lambda block: lax.pmean(block, ("x", "q")))(X)


def test_collective_arguments():
    with pytest.raises(ValueError, match=r"axis_index_groups \[\[0, 0\]\] must hold every index of the axis"):
        _mapped(lambda block: lax.psum(block, "x", axis_index_groups=[[0, 0]]))(X)
    with pytest.raises(ValueError, match=r"axis_index_groups must be groups of one size"):
        _mapped(lambda block: lax.psum(block, "x", axis_index_groups=[[0], [1, 2, 3]]))(X)
    with pytest.raises(ValueError, match=r"axis_index_groups is not supported for all_to_all"):
        _mapped(lambda block: lax.all_to_all(block, "x", 0, 0, axis_index_groups=[[0, 1]]))(X)
    with pytest.raises(ValueError, match=r"all_gather: to must be 'varying' or 'invarying', got 'reduced'"):
        _mapped(lambda block: lax.all_gather(block, "x", to="reduced"))(X)
    with pytest.raises(ValueError, match=r"axis_name \('x', 'x'\) repeats an axis"):
        _mapped(lambda block: lax.psum(block, ("x", "x")))(X)
    with pytest.raises(TypeError, match=r"axis names are mesh axis name strings, got 0"):
        _mapped(lambda block: lax.psum(block, 0))(X)


# --- closures ---------------------------------------------------------------------------------------


EXPLICIT = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
_EXPLICIT_CLOSURE = (r"shard_map: the body closes over an array of type f32\[{type}\].*Explicit axes \('x', 'y'\);"
                     r" closing over such arrays inside shard_map is not implemented .*Pass the array to shard_map"
                     r" as an argument")


@pytest.mark.usefixtures("restore_runtime_state")
@pytest.mark.parametrize("closed_over, spec, text", [((8,), P("x"), "8@x"), ((2,), P(), "2")])
@pytest.mark.parametrize("under_jit", [False, True])
def test_closing_over_an_explicit_array_raises_what_jax_raises(closed_over, spec, text, under_jit):
    """JAX 0.10.2 raises NotImplementedError, with the workaround, for a committed Array or an
    outer Tracer on Explicit axes that a shard_map body closes over, sharded or not."""
    with jax.set_mesh(EXPLICIT):
        block = jax.device_put(np.ones(8, np.float32), P("y"))
        other = jax.device_put(np.arange(float(np.prod(closed_over)), dtype=np.float32), spec)

        def program(block, other):
            body = (lambda b: b + other.sum()) if closed_over == (8,) else (lambda b: b + other)
            return shard_map(body, mesh=EXPLICIT, in_specs=P("y"), out_specs=P("y"))(block)

        program = jax.jit(program) if under_jit else program
        with pytest.raises(NotImplementedError, match=_EXPLICIT_CLOSURE.format(type=text)):
            program(block, other)
        # the workaround works: the array as an argument
        total = (lambda o: lax.psum(o.sum(), "x")) if spec == P("x") else (lambda o: o.sum())
        passed = shard_map(lambda b, o: b + total(o), mesh=EXPLICIT, in_specs=(P("y"), spec), out_specs=P("y"))
        np.testing.assert_array_equal(np.asarray(passed(block, other)), 1.0 + np.asarray(other).sum())
