"""The fixes JAX's docstring examples found (tests/api/test_jax_docstrings.py), checked beyond
the examples: against numpy/scipy where they define the function, against values printed by
JAX 0.10.2 otherwise (copied here), on more shapes, dtypes and forms than the docstrings show."""

import numpy as np
import pytest
import scipy.linalg
import scipy.signal
import scipy.stats

import meshjit
import meshjit.numpy as jnp
import meshjit.scipy.linalg as jsl
import meshjit.scipy.signal as jss
import meshjit.scipy.stats as jst
from meshjit import lax


def test_convolve_promotes_to_inexact_and_takes_complex_operands():
    a, v = np.array([1 + 2j, 3 - 1j, 2j], np.complex64), np.array([2 - 1j, 1j], np.complex64)
    for mode in ("full", "same", "valid"):
        np.testing.assert_allclose(jnp.correlate(a, v, mode), np.correlate(a, v, mode), rtol=1e-6)
        np.testing.assert_allclose(jnp.convolve(a, v, mode), np.convolve(a, v, mode), rtol=1e-6)
    # JAX 0.10.2: integers and bools convolve as float32 unless preferred_element_type says otherwise
    assert jnp.convolve(jnp.array([1, 2, 3]), jnp.array([1, 1])).dtype == jnp.float32
    assert jnp.convolve(jnp.array([True, False]), jnp.array([True, True])).tolist() == [1.0, 1.0, 0.0]
    assert jnp.convolve(jnp.array([1, 2, 3]), jnp.array([1, 1]), preferred_element_type=jnp.int32).dtype == jnp.int32


@pytest.mark.parametrize("args", [
    ("ii->i", "M"), ("ii", "M"), ("...ii->...i", "T"), ("iij->j", "T"), ("ij,jj->i", "M", "M"), ("ii,i", "M", "x"),
])
def test_einsum_repeated_labels_are_diagonals_and_traces(args):
    values = {"M": np.arange(16).reshape(4, 4), "T": np.arange(32).reshape(2, 4, 4)[:, :4, :4].reshape(2, 4, 4),
              "x": np.arange(4)}
    if args[0] == "iij->j":
        values["T"] = np.arange(32).reshape(4, 4, 2)
    operands = [values[name] for name in args[1:]]
    np.testing.assert_array_equal(jnp.einsum(args[0], *operands), np.einsum(args[0], *operands))


def test_einsum_interleaved_sublists():
    x, y, m = np.arange(4), np.array([5, 4, 3, 2]), np.arange(12).reshape(3, 4)
    for operands in [(x, [0], y, [0]), (x, [0], y, [1], [1, 0]), (m, [Ellipsis, 0], [Ellipsis]), (m, [0, 1], x, [1])]:
        np.testing.assert_array_equal(jnp.einsum(*operands), np.einsum(*operands))
    with pytest.raises(TypeError, match="sublist"):
        jnp.einsum(x, ["a"])


def test_polynomials():
    np.testing.assert_allclose(jnp.poly(jnp.array([1.0, 2.0, 3.0])), np.poly([1.0, 2.0, 3.0]))
    quotient, remainder = jnp.polydiv(jnp.array([5.0, 6, 7, 8]), jnp.array([4.0, 3, 2]))
    expected = np.polydiv([5.0, 6, 7, 8], [4.0, 3, 2])
    np.testing.assert_allclose(quotient, expected[0], rtol=1e-6)
    np.testing.assert_allclose(remainder[2:], expected[1], rtol=1e-6)
    # JAX 0.10.2: coefficients along axis 0 of higher-rank arrays
    assert jnp.polyadd(jnp.array([[2, 3, 1]]), jnp.array([[5, 7, 3], [8, 2, 6]])).tolist() == [[5, 7, 3], [10, 5, 7]]
    assert jnp.polysub(jnp.array([[5, 7, 9], [8, 6, 4]]), jnp.array([2])).tolist() == [[5, 7, 9], [6, 4, 2]]
    assert jnp.polymul(jnp.array([2, 1, 0]), jnp.array([0, 5, 0, 3]), trim_leading_zeros=True).tolist() == \
        [10.0, 5.0, 6.0, 3.0, 0.0]


def test_matvec_vecmat_mask_indices_vdot():
    m, v = np.arange(24).reshape(2, 3, 4), np.arange(8).reshape(2, 4)
    np.testing.assert_array_equal(jnp.matvec(m, v), np.einsum("bij,bj->bi", m, v))
    w = np.array([1 + 1j, 2 - 1j, 0.5j], np.complex64)
    np.testing.assert_allclose(jnp.vecmat(w, np.ones((3, 2), np.complex64)), np.conj(w) @ np.ones((3, 2)))
    for got, want in zip(jnp.mask_indices(4, jnp.triu, 1), np.mask_indices(4, np.triu, 1)):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(jnp.vdot(w, w[::-1]), np.vdot(w, w[::-1]), rtol=1e-6)


@pytest.mark.parametrize("name, args", [
    ("toeplitz", ([1, 2, 3],)), ("toeplitz", ([1.0, 2 + 1j, 1 + 2j],)), ("toeplitz", ([1, 2, 3], [9, 4, 5, 6])),
    ("hankel", ([1, 2, 3],)), ("hankel", ([1, 2, 3], [9, 4, 5, 6])), ("circulant", ([1, 2, 3, 4],)),
    ("companion", ([2.0, -10.0, 31.0, -30.0],)), ("fiedler", ([1, 4, 12, 45, 77],)),
    ("fiedler_companion", ([1.0, -16.0, 86.0, -176.0, 105.0],)), ("fiedler_companion", ([2.0, 3.0, -1.0, 5.0],)),
    ("leslie", ([0.1, 2.0, 1.0, 0.1], [0.2, 0.8, 0.7])), ("block_diag", ([[1, 2]], [[3], [4]], 5)),
    ("hadamard", (8,)), ("hilbert", (4,)), ("helmert", (5,)), ("pascal", (5,)), ("invpascal", (5,)),
    ("invhilbert", (4,)), ("dft", (5,)), ("convolution_matrix", ([-1, 4, -2], 5, "same")),
    ("convolution_matrix", ([1, 2, 3, 4], 3, "valid")), ("convolution_matrix", ([1, 2], 4)),
])
def test_special_matrices_equal_scipy(name, args):
    got, want = getattr(jsl, name)(*[np.asarray(a) if isinstance(a, list) else a for a in args]), \
        getattr(scipy.linalg, name)(*args)
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-6, atol=2e-6)


def test_special_matrices_batch_over_leading_dims():
    c = np.array([[1, 2, 3], [4, 5, 6]])
    for name in ("toeplitz", "hankel", "circulant"):
        np.testing.assert_array_equal(getattr(jsl, name)(c), np.stack([getattr(scipy.linalg, name)(row) for row in c]))


def test_lax_shape_helpers():
    x = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(lax.stack([x, x + 1], axis=2), np.stack([x, x + 1], axis=2))
    assert [a.tolist() for a in lax.unstack(x, axis=1)] == [[0, 3], [1, 4], [2, 5]]
    np.testing.assert_array_equal(lax.tile(x, (2, 3)), np.tile(x, (2, 3)))
    np.testing.assert_array_equal(lax.broadcast_like(np.arange(3), np.zeros((2, 4, 3))), np.broadcast_to(np.arange(3),
                                                                                                       (2, 4, 3)))
    np.testing.assert_array_equal(lax.broadcast_in_dim(x, (3, 4, 2), (2, 0)),
                                  np.broadcast_to(x.T[:, None, :], (3, 4, 2)))
    assert lax.round(jnp.array([0.5, 1.5, -0.5]), lax.RoundingMethod.TO_NEAREST_EVEN).tolist() == [0.0, 2.0, -0.0]
    values, indices = lax.approx_min_k(jnp.array([[3.0, 1, 2, 5], [0, -1, 7, 2]]), 2)
    assert values.tolist() == [[1.0, 2.0], [-1.0, 0.0]] and indices.tolist() == [[1, 2], [1, 0]]
    assert isinstance(lax.approx_max_k(jnp.ones(3), 1), list)  # a list, as JAX returns
    assert lax.composite(lambda v: v * 2, name="my.double")(jnp.arange(3)).tolist() == [0, 2, 4]


def test_stats_mode_sem_poisson_entropy():
    rows = np.array([[1, 2, 1, 3, 2, 1], [3, 1, 3, 2, 1, 3], [1, 2, 2, 3, 1, 2]])
    for axis in (0, 1, None):
        got, want = jst.mode(rows, axis=axis), scipy.stats.mode(rows, axis=axis)
        np.testing.assert_array_equal(got[0], want.mode)
        np.testing.assert_array_equal(got[1], want.count)
    data = np.array([[1.0, 2, 3, np.nan, 4, 2], [4, 5, 4, 3, np.nan, 1], [7, np.nan, 8, 7, 9, np.nan]], np.float32)
    np.testing.assert_allclose(jst.sem(rows, axis=1), scipy.stats.sem(rows, axis=1), rtol=1e-6)
    np.testing.assert_allclose(jst.sem(data, nan_policy="omit"), scipy.stats.sem(data, nan_policy="omit"), rtol=1e-6)
    mu = np.array([0.0, 0.5, 3.0, 10.0, 55.5, 99.0, 100.0, 1e4], np.float32)
    # printed by JAX 0.10.2 (its regimes: a sum below mu = 100, the asymptotic series above); the
    # sums' last bits are XLA's float32 exp/log, hence 1e-5
    jax_values = [0.0, 0.9276376, 1.9314697, 2.561407, 3.4256208, 3.7156436, 3.7206903, 6.024101]
    np.testing.assert_allclose(jst.poisson.entropy(mu), jax_values, rtol=1e-5)


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_signal_convolutions_equal_scipy(mode):
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(5, 6)).astype(np.float32), rng.normal(size=(2, 3)).astype(np.float32)
    c = (rng.normal(size=7) + 1j * rng.normal(size=7)).astype(np.complex64)
    d = (rng.normal(size=4) + 1j * rng.normal(size=4)).astype(np.complex64)
    for ours, theirs, args in [(jss.convolve, scipy.signal.convolve, (a, b)), (jss.correlate, scipy.signal.correlate, (a, b)),
                               (jss.convolve2d, scipy.signal.convolve2d, (a, b)),
                               (jss.correlate2d, scipy.signal.correlate2d, (a, b)),
                               (jss.convolve, scipy.signal.convolve, (c, d)), (jss.correlate, scipy.signal.correlate, (c, d)),
                               (jss.fftconvolve, scipy.signal.fftconvolve, (a, b))]:
        np.testing.assert_allclose(ours(*args, mode=mode), theirs(*args, mode=mode), rtol=1e-4, atol=1e-5)


def test_signal_detrend_equals_scipy():
    data = np.array([[1.0, 4, 8, 8, 9, 3], [2, 2, 5, 1, 0, 7]], np.float32)
    for kind in ("linear", "constant"):
        np.testing.assert_allclose(jss.detrend(data, type=kind), scipy.signal.detrend(data, type=kind), atol=1e-5)
    np.testing.assert_allclose(jss.detrend(data, axis=1, bp=3), scipy.signal.detrend(data, axis=1, bp=3), atol=1e-5)


def test_weighted_quantiles_equal_jax():
    x, w = jnp.array([1, 2, 3, 4, 5]), jnp.array([1, 1, 2, 1, 1])
    # printed by JAX 0.10.2
    assert jnp.quantile(x, jnp.array([0.1, 0.5, 0.9, 1.0, 0.0]), weights=w, method="inverted_cdf").tolist() == \
        [1.0, 3.0, 5.0, 5.0, 1.0]
    m, mw = jnp.array([[3.0, 1, 2], [6, 5, 4]]), jnp.array([[1.0, 2, 1], [1, 1, 3]])
    assert jnp.quantile(m, jnp.array([0.3, 0.7]), axis=1, weights=mw, method="inverted_cdf", keepdims=True).tolist() \
        == [[[1.0], [4.0]], [[2.0], [5.0]]]
    assert jnp.quantile(m, 0.5, axis=0, weights=jnp.array([1.0, 3.0]), method="inverted_cdf").tolist() == [6.0, 5.0, 4.0]
    assert np.isnan(jnp.quantile(jnp.array([1.0, np.nan, 3.0]), 0.5, weights=jnp.ones(3), method="inverted_cdf"))
    assert jnp.nanpercentile(jnp.array([1, 2, np.nan, 4, 5]), 50, weights=jnp.array([1, 1, 1, 2, 1]),
                             method="inverted_cdf") == 4.0
    with pytest.raises(ValueError, match="inverted_cdf"):
        jnp.quantile(x, 0.5, weights=w)


@pytest.mark.parametrize("expression, weak", [
    # JAX 0.10.2's weak_type for each
    ("jnp.fmax(3, 7)", True), ("jnp.fmax(jnp.arange(3), 0.5)", True), ("jnp.gcd(12, 18)", True),
    ("jnp.modf(4.8)[0]", True), ("jnp.float_power(-3, 1.7)", True), ("jnp.float_power(jnp.arange(3), 2)", False),
    ("jnp.heaviside(1., 0.5)", True), ("jnp.heaviside(jnp.arange(3), 0.5)", False), ("jnp.isnan(6)", True),
    ("jnp.isfinite(3 - 4j)", True), ("jnp.isinf(2.0)", False), ("jnp.isnan(jnp.float32(2))", False),
    ("jnp.fabs(-2)", True), ("jnp.rint(3)", False),
])
def test_weak_types_as_jax(expression, weak):
    assert eval(expression).weak_type is weak


def test_small_numpy_api_fixes():
    assert jnp.rint(jnp.array([2.5 + 3.5j, -1.5 - 0.5j])).tolist() == [2 + 4j, -2 - 0j]
    assert jnp.rint(jnp.array([1, 2])).dtype == jnp.float32
    assert jnp.size(jnp.ones((2, 3, 4)), axis=(0, 2)) == 8 and jnp.size(jnp.ones((2, 3)), -1) == 3
    assert [part.tolist() for part in jnp.vsplit(jnp.arange(6), 3)] == [[0, 1], [2, 3], [4, 5]]
    assert jnp.column_stack([1, 2, 3]).shape == (1, 3)
    x = jnp.array([[8, np.nan, 4, 6], [np.nan, -2, np.nan, -4], [-2, 1, 7, np.nan]])
    where = jnp.array([[True], [False], [False]])
    assert jnp.nanmax(x, axis=0, keepdims=True, initial=0, where=where).tolist() == [[8.0, 0.0, 4.0, 6.0]]
    assert jnp.promote_types("uint8", int) == np.uint8 and jnp.promote_types("float16", float) == np.float16
    assert jnp.promote_types(np.dtype("int64"), "uint8") == np.int64


def test_sinc_derivatives_at_zero_as_jax():
    f, values = jnp.sinc, []
    for _ in range(4):
        f = meshjit.grad(f)
        values.append(float(f(0.0)))
    # JAX 0.10.2 prints these float32 values
    assert values == [0.0, float(np.float32(-3.2898684)), 0.0, float(np.float32(19.481821))]


def test_fwd_and_bwd_equals_vjp():
    x, w = jnp.arange(4.0).reshape(2, 2), jnp.ones((2, 2)) * 2

    def f(x, w):
        return jnp.sin(x @ w)

    fwd, bwd = meshjit.fwd_and_bwd(f, argnums=(0, 1))
    y, residuals = fwd(x, w)
    expected_y, vjp_fun = meshjit.vjp(f, x, w)
    np.testing.assert_array_equal(y, expected_y)
    for got, want in zip(bwd(residuals, jnp.ones((2, 2))), vjp_fun(jnp.ones((2, 2)))):
        np.testing.assert_array_equal(got, want)
    fwd, bwd = meshjit.fwd_and_bwd(lambda x, w: (x @ w, 3.0), argnums=1, has_aux=True)
    y, residuals, aux = fwd(x, w)
    assert aux == 3.0 and bwd(residuals, jnp.ones((2, 2))).shape == (2, 2)


def test_tree_static_and_transpose_without_inner():
    import dataclasses

    @meshjit.tree_util.register_dataclass
    @dataclasses.dataclass
    class Op:
        x: object
        op: str = meshjit.tree.static(default="add")

    leaves, treedef = meshjit.tree.flatten(Op(x=jnp.ones(2)))
    assert len(leaves) == 1 and meshjit.tree.unflatten(treedef, leaves).op == "add"
    outer = meshjit.tree.structure(["*", "*"])
    assert meshjit.tree.transpose(outer, None, [(1, 2, 3), (4, 5, 6)]) == ([1, 4], [2, 5], [3, 6])
