"""Random jnp programs on unusual shapes and meshes through the public API: size-0, size-1 and
uneven dims, meshes with a size-1 axis, specs naming axes out of mesh order, committed and
uncommitted arguments, run under jit, eagerly, through grad and with donation.

numpy is the oracle for values; for gradients the oracle is the same program differentiated on
unsharded host arrays. Layouts that do not divide a dim are passed the way JAX accepts them (as
uncommitted numpy arguments) and, as out_shardings, must raise JAX's ValueError.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import meshjit as jax
import meshjit.numpy as jnp
from meshjit import lax
from meshjit.sharding import Mesh, NamedSharding
from meshjit.sharding import PartitionSpec as P

pytestmark = [pytest.mark.filterwarnings("ignore:involuntary full rematerialization"),
              pytest.mark.usefixtures("restore_runtime_state")]

MESH_SHAPES = {"8": ((8,), ("x",)), "2x4": ((2, 4), ("x", "y")), "4x2": ((4, 2), ("x", "y")),
               "2x2x2": ((2, 2, 2), ("x", "y", "z")), "1x8": ((1, 8), ("x", "y"))}
MESHES = {name: Mesh(np.array(jax.devices()[:math.prod(shape)]).reshape(shape), names)
          for name, (shape, names) in MESH_SHAPES.items()}
SIZES = (0, 1, 2, 3, 4, 8)


UNARY = {
    "tanh": (jnp.tanh, np.tanh),
    "affine": (lambda v: v * 0.5 - 1.0, lambda v: v * 0.5 - 1.0),
    "broadcast size-1 slice": (lambda v: v - v[..., :1], lambda v: v - v[..., :1]),
    "transpose": (lambda v: v.T, lambda v: v.T),
    "flatten and back": (lambda v: v.reshape((v.size,)).reshape(v.shape),
                         lambda v: v.reshape((v.size,)).reshape(v.shape)),
    "stack and sum": (lambda v: jnp.sum(jnp.stack([v, v], v.ndim), v.ndim),
                      lambda v: np.sum(np.stack([v, v], v.ndim), v.ndim)),
    "expand and squeeze": (lambda v: jnp.squeeze(jnp.expand_dims(v, 0), 0), lambda v: v),
}
AXIS_STEPS = {
    # name: (jnp function of (value, axis), numpy function of (value, axis))
    "sum keepdims": (lambda v, k: jnp.sum(v, k, keepdims=True) + v, lambda v, k: np.sum(v, k, keepdims=True) + v),
    "max with initial": (lambda v, k: v - jnp.max(v, k, keepdims=True, initial=-2.0),
                         lambda v, k: v - np.max(v, k, keepdims=True, initial=-2.0)),
    "cumsum": (lambda v, k: jnp.tanh(jnp.cumsum(v, k)), lambda v, k: np.tanh(np.cumsum(v, k))),
    "sort": (lambda v, k: jnp.sort(v, k), lambda v, k: np.sort(v, k)),
    "flip": (lambda v, k: jnp.flip(v, k), lambda v, k: np.flip(v, k)),
    "concatenate": (lambda v, k: jnp.concatenate([v, v * 2.0], k), lambda v, k: np.concatenate([v, v * 2.0], k)),
}
BINARY = {
    "add": (lambda v, b: v + b, lambda v, b: v + b),
    "mul": (lambda v, b: jnp.tanh(v * b), lambda v, b: np.tanh(v * b)),
    "maximum": (jnp.maximum, np.maximum),
    "where": (lambda v, b: jnp.where(v > 0, v, b), lambda v, b: np.where(v > 0, v, b)),
}


@st.composite
def programs(draw, rank: int):
    """Steps that keep the rank (so ``b``, of the input's shape, stays usable where shapes match)."""
    steps = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["unary", "axis", "binary", "slice", "matmul"]))
        if kind == "unary":
            steps.append(("unary", draw(st.sampled_from(sorted(UNARY)))))
        elif kind == "axis":
            steps.append(("axis", draw(st.sampled_from(sorted(AXIS_STEPS))), draw(st.integers(0, rank - 1))))
        elif kind == "binary":
            steps.append(("binary", draw(st.sampled_from(sorted(BINARY)))))
        elif kind == "slice":
            start = draw(st.integers(0, 4))
            steps.append(("slice", start, start + draw(st.integers(0, 4))))
        elif rank >= 2:
            steps.append(("matmul",))
    return steps


def _run(steps, module: str, a, b):
    table = 0 if module == "jnp" else 1
    value = a
    for step in steps:
        if step[0] == "unary":
            value = UNARY[step[1]][table](value)
        elif step[0] == "axis":
            value = AXIS_STEPS[step[1]][table](value, step[2])
        elif step[0] == "binary":
            # NOTE: every step keeps the rank; where the shape changed the partner is the value flipped
            flip = jnp.flip if module == "jnp" else np.flip
            partner = b if value.shape == b.shape else flip(value, 0)
            value = BINARY[step[1]][table](value, partner)
        elif step[0] == "slice":
            value = value[step[1]:step[2]]
        else:
            tanh = jnp.tanh if module == "jnp" else np.tanh
            value = tanh(value @ value.swapaxes(-1, -2) / 4.0)
    return value


@st.composite
def specs(draw, mesh: Mesh, rank: int):
    """A PartitionSpec for a rank-``rank`` value: each dim None, an axis, or two axes in any
    order (out of mesh order included); every axis at most once."""
    free = list(mesh.axis_names)
    entries = []
    for _ in range(rank):
        choice = draw(st.sampled_from(["none", "one", "two"]))
        if choice == "one" and free:
            axis = draw(st.sampled_from(free))
            free.remove(axis)
            entries.append(axis)
        elif choice == "two" and len(free) >= 2:
            pair = tuple(draw(st.permutations(free))[:2])
            for axis in pair:
                free.remove(axis)
            entries.append(pair)
        else:
            entries.append(None)
    return P(*entries)


def _divides(mesh: Mesh, spec: P, shape) -> bool:
    return all(size % math.prod(mesh.shape[name] for name in spec.axis_names_of(dim)) == 0
               for dim, size in enumerate(shape))


def _place(value, mesh: Mesh, spec: P, commit: bool):
    """Committed to ``spec`` when asked and it divides the value, else the numpy value
    (uncommitted: propagation may lay it out, never so that the call fails)."""
    if commit and _divides(mesh, spec, value.shape):
        return jax.device_put(value, NamedSharding(mesh, spec))
    return value


def _compare(result, expected):
    assert result.shape == np.shape(expected)
    np.testing.assert_allclose(np.asarray(result), expected, rtol=2e-4, atol=2e-5)
    whole = np.asarray(result)
    for shard in result.addressable_shards:
        np.testing.assert_array_equal(np.asarray(shard.data), whole[shard.index])


@st.composite
def cases(draw):
    """A mesh, an input shape, a program, and the two inputs' specs and whether to commit them."""
    mesh = MESHES[draw(st.sampled_from(sorted(MESHES)))]
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.sampled_from(SIZES)) for _ in range(rank))
    steps = draw(programs(rank))
    layouts = [(draw(specs(mesh, rank)), draw(st.booleans())) for _ in range(2)]
    return mesh, shape, steps, layouts


def _inputs(shape, seed):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, shape).astype(np.float32) for _ in range(2)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(), mode=st.sampled_from(["jit", "eager", "donate"]), data=st.data(), seed=st.integers(0, 2**16))
def test_random_program_on_unusual_shapes(case, mode, data, seed):
    mesh, shape, steps, layouts = case
    a, b = _inputs(shape, seed)
    expected = _run(steps, "np", a.astype(np.float64), b.astype(np.float64))
    placed = [_place(value, mesh, spec, commit) for value, (spec, commit) in zip((a, b), layouts)]
    function = lambda a, b: _run(steps, "jnp", a, b)
    if mode == "eager":
        _compare(function(*(jnp.asarray(value) for value in placed)), expected)
        return
    out_spec = data.draw(st.one_of(st.none(), specs(mesh, np.ndim(expected))))
    out_shardings = None if out_spec is None else NamedSharding(mesh, out_spec)
    jitted = jax.jit(function, out_shardings=out_shardings, donate_argnums=(0,) if mode == "donate" else ())
    if out_spec is not None and not _divides(mesh, out_spec, np.shape(expected)):
        with pytest.raises(ValueError):  # JAX: out_shardings must divide the result
            jitted(*placed)
        return
    result = jitted(*placed)
    _compare(result, expected)
    if out_spec is not None:
        assert result.sharding.is_equivalent_to(out_shardings, result.ndim)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(), seed=st.integers(0, 2**16))
def test_random_gradient_on_unusual_shapes(case, seed):
    """The gradient with the first input committed to its layout (where it divides) equals the
    gradient of the same program on host arrays."""
    mesh, shape, steps, layouts = case
    a, b = _inputs(shape, seed)
    objective = lambda a, b: jnp.sum(jnp.tanh(_run(steps, "jnp", a, b)))
    reference = jax.grad(objective)(a, b)
    placed = [_place(value, mesh, spec, commit or index == 0)
              for index, (value, (spec, commit)) in enumerate(zip((a, b), layouts))]
    gradient = jax.grad(objective)(*placed)
    np.testing.assert_allclose(np.asarray(gradient), np.asarray(reference), rtol=2e-4, atol=2e-5)
    spec = layouts[0][0]
    if _divides(mesh, spec, shape):
        # vjp runs its pullback as a later program, here on host arrays: the constraint's mesh
        # must come along
        constrained = lambda a, b: objective(lax.with_sharding_constraint(a, NamedSharding(mesh, spec)), b)
        _, pullback = jax.vjp(constrained, a, b)
        np.testing.assert_allclose(np.asarray(pullback(jnp.ones(()))[0]), np.asarray(reference),
                                   rtol=2e-4, atol=2e-5)
        # a linear function saves no residuals, so its pullback program starts with no mesh at all
        linear = lambda a: jnp.flip(lax.with_sharding_constraint(a, NamedSharding(mesh, spec)), 0) * 2.0
        _, pullback = jax.vjp(linear, a)
        np.testing.assert_array_equal(np.asarray(pullback(np.ones(shape, np.float32))[0]), np.full(shape, 2.0))


RESIZING = {
    # programs that change a dim's size, so a layout chosen for the result may not divide the input
    "concatenate": (lambda a, b: jnp.concatenate([a, b]), lambda a, b: np.concatenate([a, b])),
    "concatenate three": (lambda a, b: jnp.concatenate([a, b, a]), lambda a, b: np.concatenate([a, b, a])),
    "stack": (lambda a, b: jnp.stack([a, b]), lambda a, b: np.stack([a, b])),
    "slice": (lambda a, b: a[1:] + b[:-1], lambda a, b: a[1:] + b[:-1]),
    "tile": (lambda a, b: jnp.concatenate([a * b] * 4), lambda a, b: np.concatenate([a * b] * 4)),
}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), mesh_name=st.sampled_from(sorted(MESHES)), name=st.sampled_from(sorted(RESIZING)),
       shape=st.tuples(st.sampled_from((1, 2, 3, 4, 6)), st.sampled_from((1, 2, 4))))
def test_uncommitted_arguments_only_get_layouts_that_divide_them(data, mesh_name, name, shape):
    mesh = MESHES[mesh_name]
    a, b = _inputs(shape, 0)
    expected = RESIZING[name][1](a, b)
    out_spec = data.draw(specs(mesh, expected.ndim))
    if not _divides(mesh, out_spec, expected.shape):
        return
    jitted = jax.jit(RESIZING[name][0], out_shardings=NamedSharding(mesh, out_spec))
    _compare(jitted(a, b), expected)
    arg_shardings, _ = jitted.lower(a, b).compile().input_shardings
    for sharding, value in zip(arg_shardings, (a, b)):
        if sharding is not None:
            sharding.shard_shape(value.shape)  # IndivisibleError unless the layout divides the argument


def _single_placements(mesh: Mesh, rank: int) -> list:
    """Every spec with at most one axis on one dim."""
    placements = [P()]
    for dim in range(rank):
        for axis in mesh.axis_names:
            placements.append(P(*([None] * dim + [axis])))
    return placements


@pytest.mark.parametrize("mesh_name", ["1x8", "2x2x2", "4x2"])
def test_contractions_over_every_pair_of_single_axis_layouts(mesh_name):
    """tensordot over both dims and matmul, for every pair of single-axis layouts of the
    operands: contracting dims on one axis (size-1 included) from both sides."""
    mesh = MESHES[mesh_name]
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (4, 8)).astype(np.float32)
    c = rng.uniform(-1, 1, (4, 8)).astype(np.float32)
    for spec_a in _single_placements(mesh, 2):
        for spec_c in _single_placements(mesh, 2):
            if not (_divides(mesh, spec_a, a.shape) and _divides(mesh, spec_c, c.shape)):
                continue
            in_shardings = (NamedSharding(mesh, spec_a), NamedSharding(mesh, spec_c))
            total = jax.jit(lambda a, c: jnp.tensordot(a, c, axes=2), in_shardings=in_shardings)(a, c)
            np.testing.assert_allclose(float(total), float(np.sum(a.astype(np.float64) * c)), rtol=1e-5)
            product = jax.jit(lambda a, c: a @ c.T, in_shardings=in_shardings)(a, c)
            np.testing.assert_allclose(np.asarray(product), a.astype(np.float64) @ c.T, rtol=1e-5, atol=1e-6)


def _every_step(rank: int) -> list:
    """One program per step (axis steps on every axis), each followed by an add with ``b``."""
    programs = [[("unary", name)] for name in sorted(UNARY)]
    programs += [[("axis", name, axis)] for name in sorted(AXIS_STEPS) for axis in range(rank)]
    programs += [[("binary", name)] for name in sorted(BINARY)] + [[("slice", 1, 3)], [("matmul",)]]
    return [steps + [("binary", "add")] for steps in programs]


@pytest.mark.parametrize("shape", [(2, 0), (0, 4), (1, 8)])
def test_every_step_on_empty_and_size_one_dims_next_to_a_sharded_operand(shape):
    """Each step on a replicated operand, then combined with a sharded one, under jit."""
    mesh = MESHES["2x4"]
    a, b = _inputs(shape, 0)
    placed_a = jax.device_put(a, NamedSharding(mesh, P()))
    spec_b = P("x") if shape[0] % 2 == 0 else P(None, "y")
    placed_b = jax.device_put(b, NamedSharding(mesh, spec_b))
    for steps in _every_step(len(shape)):
        expected = _run(steps, "np", a.astype(np.float64), b.astype(np.float64))
        _compare(jax.jit(lambda a, b, steps=steps: _run(steps, "jnp", a, b))(placed_a, placed_b), expected)


@pytest.mark.parametrize("spec", [P("x", "y"), P(None, ("y", "x"))])
def test_gradient_of_every_step_on_a_sharded_operand(spec):
    mesh = MESHES["2x4"]
    a, b = _inputs((4, 8), 1)
    placed = jax.device_put(a, NamedSharding(mesh, spec))
    for steps in _every_step(2):
        objective = lambda a, steps=steps: jnp.sum(jnp.tanh(_run(steps, "jnp", a, b)))
        np.testing.assert_allclose(np.asarray(jax.grad(objective)(placed)), np.asarray(jax.grad(objective)(a)),
                                   rtol=2e-4, atol=2e-5, err_msg=str(steps))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), mesh_name=st.sampled_from(sorted(MESHES)), shape=st.sampled_from([(8, 8), (0, 8), (8, 1)]))
def test_eager_sharding_constraints_with_unconstrained_dims(data, mesh_name, shape):
    """Outside jit, P.UNCONSTRAINED dims keep what the value has (JAX accepts them eagerly); the
    constrained dims are laid out as asked and the value is unchanged."""
    mesh = MESHES[mesh_name]
    value = np.arange(math.prod(shape), dtype=np.float32).reshape(shape)
    current = data.draw(specs(mesh, 2))
    placed = _place(value, mesh, current, data.draw(st.booleans()))
    target = data.draw(specs(mesh, 2))
    loose = data.draw(st.lists(st.booleans(), min_size=2, max_size=2))
    spec = P(*(P.UNCONSTRAINED if free else entry for entry, free in zip(tuple(target) + (None, None), loose)))
    if not _divides(mesh, P(*(None if free else entry for entry, free in zip(tuple(spec), loose))), shape):
        return
    result = lax.with_sharding_constraint(placed, NamedSharding(mesh, spec))
    np.testing.assert_array_equal(np.asarray(result), value)
    for dim, free in enumerate(loose):
        if not free:
            assert result.sharding.spec.axis_names_of(dim) == spec.axis_names_of(dim)
