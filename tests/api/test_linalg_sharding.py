"""The linear algebra functions sharded: jit under shardings of the batch and the matrix dims
equals the unsharded result; the batch stays sharded with no collective, a sharded matrix dim
is all-gathered (the collective named in the compiled program with its reason); explicit mode
keeps a sharded batch and refuses sharded matrix dims with JAX's error; vmap, empty batches,
and derivatives (check_grads) of qr, eigh, svd, cholesky and the triangular solve; complex
matrices, the general eigendecomposition (eig, eigvals) and the Schur and Hessenberg forms
alike."""

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
import meshjit.scipy.linalg as jsl
from meshjit.sharding import AxisType, NamedSharding, PartitionSpec as P, ShardingTypeError
from meshjit.test_util import check_grads

RNG = np.random.default_rng(7)
BASE = RNG.standard_normal((8, 4, 4)).astype(np.float32)
SPD = (BASE @ np.swapaxes(BASE, 1, 2) + 4 * np.eye(4)).astype(np.float32)
SQUARE = (BASE + 3 * np.eye(4)).astype(np.float32)
TALL = RNG.standard_normal((8, 8, 4)).astype(np.float32)
COMPLEX = (BASE + 1j * RNG.standard_normal((8, 4, 4)) + 3 * np.eye(4)).astype(np.complex64)
HPD = (COMPLEX @ np.conj(np.swapaxes(COMPLEX, 1, 2)) + np.eye(4)).astype(np.complex64)

FUNCTIONS = {
    "cholesky": (jnp.linalg.cholesky, SPD),
    "eigh": (lambda a: jnp.linalg.eigh(a).eigenvalues, SPD),
    "eigh_vectors": (lambda a: jnp.linalg.eigh(a).eigenvectors, SPD),
    "svd": (lambda a: jnp.linalg.svd(a, full_matrices=False), TALL),
    "qr": (jnp.linalg.qr, TALL),
    "lu": (jsl.lu, SQUARE),
    "solve_triangular": (lambda a: jsl.solve_triangular(a, a, lower=True), SQUARE),
    "inv": (jnp.linalg.inv, SQUARE),
    "det": (jnp.linalg.det, SQUARE),
    "pinv": (jnp.linalg.pinv, TALL),
    "expm": (lambda a: jsl.expm(0.3 * a), SQUARE),
    "eig": (lambda a: [abs(part) for part in jnp.linalg.eig(a)], SQUARE),
    "eigvals": (jnp.linalg.eigvals, COMPLEX),
    "cholesky_complex": (jnp.linalg.cholesky, HPD),
    "eigh_complex": (lambda a: jnp.linalg.eigh(a).eigenvalues, HPD),
    "svd_complex": (lambda a: jnp.linalg.svd(a, compute_uv=False), COMPLEX),
    "qr_complex": (jnp.linalg.qr, COMPLEX),
    "solve_complex": (lambda a: jnp.linalg.solve(a, a[..., :1]), COMPLEX),
    "schur": (jsl.schur, SQUARE),
    "schur_complex": (jsl.schur, COMPLEX),
    "hessenberg": (lambda a: jsl.hessenberg(a, calc_q=True), COMPLEX),
    "sqrtm": (jsl.sqrtm, SPD),
    "rsf2csf": (lambda a: jsl.rsf2csf(*jsl.schur(a)), SQUARE),
}
SPECS = [P("x"), P(("x", "y")), P(None, "y"), P("x", None, "y"), P(None, "x", "y")]


def leaves(result):
    return [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(result)]


@pytest.mark.parametrize("spec", SPECS, ids=str)
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_sharded_equals_unsharded(name, spec):
    function, value = FUNCTIONS[name]
    expected = leaves(jax.jit(function)(value))
    mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    sharded = jax.device_put(value, NamedSharding(mesh, spec))
    for actual, want in zip(leaves(jax.jit(function)(sharded)), expected):
        np.testing.assert_allclose(actual, want, rtol=2e-6, atol=2e-6, err_msg=f"{name} {spec}")


def _collectives(function, value, spec):
    mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    compiled = jax.jit(function).lower(jax.device_put(value, NamedSharding(mesh, spec))).compile()
    return compiled, compiled.collectives()


@pytest.mark.parametrize("name", ["cholesky", "eigh", "svd", "qr", "lu", "eigvals", "cholesky_complex", "schur",
                                  "hessenberg"])
def test_batch_stays_sharded_and_matrix_dims_are_gathered(name):
    function, value = FUNCTIONS[name]
    compiled, records = _collectives(function, value, P(("x", "y")))
    assert records == []
    assert all(spec[0] == ("x", "y") for spec in jax.tree_util.tree_leaves(
        jax.tree_util.tree_map(lambda sharding: sharding.spec, compiled.output_shardings)))
    compiled, records = _collectives(lambda a: function(a * 2.0), value, P("x", "y"))
    assert "all_gather" in compiled.as_text()
    kinds = {record.kind for record in records}
    assert "all_gather" in kinds, records
    reasons = " ".join(str(record.reason) for record in records)
    assert name.split("_")[0].removesuffix("vals") in reasons or "lu" in reasons, reasons


def test_triangular_solve_keeps_the_right_hand_sides_columns_sharded():
    mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    b = jax.device_put(np.tile(SQUARE, (1, 1, 2)), NamedSharding(mesh, P("x", None, "y")))
    a = jax.device_put(SQUARE, NamedSharding(mesh, P("x")))
    function = jax.jit(lambda a, b: jsl.solve_triangular(a, b, lower=True))
    assert function.lower(a, b).compile().collectives() == []
    result = function(a, b)
    assert result.sharding.spec == P("x", None, "y")
    np.testing.assert_allclose(np.asarray(result), np.asarray(function(np.asarray(a), np.asarray(b))), rtol=1e-6)


def test_explicit_batch_stays_sharded():
    mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
    sharded = jax.device_put(TALL, NamedSharding(mesh, P("x")))
    u, s, vh = jax.jit(lambda a: jnp.linalg.svd(a, full_matrices=False))(sharded)
    assert (u.sharding.spec, s.sharding.spec, vh.sharding.spec) == (P("x", None, None), P("x", None), P("x", None, None))
    factor = jax.jit(jnp.linalg.cholesky)(jax.device_put(SPD, NamedSharding(mesh, P(("x", "y")))))
    assert factor.sharding.spec == P(("x", "y"), None, None)


@pytest.mark.parametrize("name, function, message", [
    ("qr", jnp.linalg.qr, "Input 0 to qr must be unsharded on non-batch dimensions, but got P(None, 'y', None)."),
    ("svd", jnp.linalg.svd, "Input 0 to svd must be unsharded on non-batch dimensions, but got P(None, 'y', None)."),
    ("lu", jnp.linalg.inv, "Input 0 to lu must be unsharded on non-batch dimensions, but got P(None, 'y', None)."),
    ("eig", jnp.linalg.eigvals, "Input 0 to eig must be unsharded on non-batch dimensions, but got P(None, 'y', None)."),
    ("schur", jsl.schur, "Input 0 to schur must be unsharded on non-batch dimensions, but got P(None, 'y', None)."),
    ("solve_triangular", lambda a: jsl.solve_triangular(a, a, lower=True),
     "triangular solve input `a` must be unsharded on the contracting axis, but got P(None, 'y', None) with "
     "left_side=True and transpose_a=False."),
])
def test_explicit_sharded_matrix_dims_are_jaxs_error(name, function, message):
    mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
    sharded = jax.device_put(SQUARE, NamedSharding(mesh, P(None, "y")))
    with pytest.raises(ShardingTypeError) as raised:
        jax.jit(function)(sharded)
    assert str(raised.value) == message


@pytest.mark.parametrize("name", ["cholesky", "eigh_vectors", "svd", "qr", "lu", "inv", "solve_triangular", "eig",
                                  "eigvals", "qr_complex", "solve_complex", "schur", "hessenberg", "sqrtm"])
def test_vmap_equals_the_batched_call(name):
    function, value = FUNCTIONS[name]
    expected = leaves(function(value))
    moved = np.moveaxis(value, 0, 2)
    for actual, want in zip(leaves(jax.vmap(function, in_axes=2)(moved)), expected):
        np.testing.assert_allclose(actual, want, rtol=2e-6, atol=2e-6, err_msg=name)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_empty_batches(name):
    function, value = FUNCTIONS[name]
    empty = value[:0]
    expected = [np.asarray(leaf).shape[1:] for leaf in leaves(function(value))]
    results = leaves(function(empty))
    assert [leaf.shape for leaf in results] == [(0,) + shape for shape in expected]
    mesh = jax.make_mesh((2,), ("x",))
    sharded = leaves(jax.jit(function)(jax.device_put(empty, NamedSharding(mesh, P("x")))))
    assert [leaf.shape for leaf in sharded] == [leaf.shape for leaf in results]


def test_empty_matrices():
    assert jnp.linalg.cholesky(np.zeros((2, 0, 0), np.float32)).shape == (2, 0, 0)
    assert jnp.linalg.qr(np.zeros((2, 0, 3), np.float32)).R.shape == (2, 0, 3)
    assert jnp.linalg.svd(np.zeros((3, 0), np.float32), compute_uv=False).shape == (0,)
    assert jnp.linalg.pinv(np.zeros((2, 0, 3), np.float32)).shape == (2, 3, 0)
    np.testing.assert_array_equal(np.asarray(jnp.linalg.det(np.zeros((0, 0), np.float32))), 1.0)


@pytest.mark.usefixtures("x64")
@pytest.mark.parametrize("name", ["cholesky", "triangular", "qr", "qr_wide", "eigh", "svd", "svd_wide", "pinv", "expm",
                                  "eigvals", "eig_vectors", "cholesky_complex", "triangular_complex", "qr_complex",
                                  "eigh_complex", "svd_complex", "det_complex", "eigvals_complex"])
def test_derivatives_check_grads(name):
    rng = np.random.default_rng(3)
    base = rng.standard_normal((2, 3, 3))
    spd = base @ np.swapaxes(base, 1, 2) + 3 * np.eye(3)
    tall = rng.standard_normal((4, 3))
    complex_base = base + 1j * rng.standard_normal((2, 3, 3))
    hpd = complex_base @ np.conj(np.swapaxes(complex_base, 1, 2)) + 3 * np.eye(3)
    complex_tall = tall + 1j * rng.standard_normal((4, 3))

    def eig_vectors(a):
        values, left, right = jax.lax.linalg.eig(a, enable_eigvec_derivs=True)
        return values, jnp.abs(left) ** 2, jnp.abs(right) ** 2

    functions = {
        "eigvals": (jnp.linalg.eigvals, base),
        "eig_vectors": (eig_vectors, base[0]),
        "cholesky_complex": (jnp.linalg.cholesky, hpd),
        "triangular_complex": (lambda a: jsl.solve_triangular(a, complex_base[:, :, :2], trans="C"),
                               complex_base + 4 * np.eye(3)),
        "qr_complex": (lambda a: jnp.linalg.qr(a), complex_tall),
        "eigh_complex": (lambda a: (jnp.linalg.eigh(a).eigenvalues, jnp.abs(jnp.linalg.eigh(a).eigenvectors)), hpd),
        "svd_complex": (lambda a: (jnp.linalg.svd(a, compute_uv=False),
                                   jnp.abs(jnp.linalg.svd(a, full_matrices=False).U)), complex_tall),
        "det_complex": (jnp.linalg.det, complex_base),
        "eigvals_complex": (jnp.linalg.eigvals, complex_base),
        "cholesky": (jnp.linalg.cholesky, spd),
        "triangular": (lambda a: jsl.solve_triangular(a, base[:, :, :2], lower=True, trans=1), base + 4 * np.eye(3)),
        "qr": (lambda a: jnp.linalg.qr(a), tall),
        "qr_wide": (lambda a: jnp.linalg.qr(a), tall.T),
        "eigh": (lambda a: (jnp.linalg.eigh(a).eigenvalues, jnp.linalg.eigh(a).eigenvectors ** 2), spd),
        "svd": (lambda a: jnp.linalg.svd(a, full_matrices=False), tall),
        "svd_wide": (lambda a: jnp.linalg.svd(a, full_matrices=False), tall.T),
        "pinv": (jnp.linalg.pinv, tall),
        "expm": (lambda a: jsl.expm(0.5 * a), base[0]),
    }
    function, value = functions[name]
    # NOTE: the eigenvalues' derivative uses the eigenvectors, which have no second derivative
    # without enable_eigvec_derivs (JAX's NotImplementedError too)
    order = 1 if name.startswith("eigvals") else 2
    check_grads(function, (value,), order=order, modes=["fwd", "rev"], atol=1e-5, rtol=1e-5)


def test_derivative_without_a_definition_is_jaxs_error():
    with pytest.raises(NotImplementedError, match="^Singular value decomposition JVP not implemented for full matrices$"):
        jax.grad(lambda a: jnp.sum(jnp.linalg.svd(a, full_matrices=True)[0]))(TALL[0])


@pytest.mark.usefixtures("x64")
def test_complete_qr_of_a_tall_matrix_differentiates_as_jax():
    """JAX 0.10.2 differentiates it (arXiv:2409.13374); the gradients it printed for this matrix."""
    a = np.random.default_rng(0).normal(size=(4, 2)).astype(np.float32)
    q_gradient = jax.grad(lambda a: jnp.linalg.qr(a, mode="complete")[0].sum())(a)
    r_gradient = jax.grad(lambda a: jnp.linalg.qr(a, mode="complete")[1].sum())(a)
    np.testing.assert_allclose(np.asarray(q_gradient), [[-0.04485664, 0.11283538], [-1.4588095, -0.9365938],
                                                        [-2.787515, -0.41588333], [-0.42430356, 0.27826142]], atol=2e-5)
    np.testing.assert_allclose(np.asarray(r_gradient), [[0.15476301, -0.33299553], [-0.18171458, -0.65879023],
                                                        [-0.4083954, 1.1503255], [-1.2847633, -0.363126]], atol=2e-5)
    check_grads(lambda a: jnp.linalg.qr(a, mode="complete")[0], (a.astype(np.float64),), order=1, modes=["fwd", "rev"],
                atol=1e-5, rtol=1e-5)
