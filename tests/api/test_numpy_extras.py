"""jax.numpy's functions beyond the core (issue 32) against JAX 0.10.2's values and error types
(numpy_extra_cases.py holds the cases and regenerates the data), eagerly, under jit, on sharded
inputs and under grad."""

import json
from pathlib import Path

import numpy as np
import pytest

import meshjit
import meshjit.numpy as jnp

from numpy_extra_cases import ERROR_CASES, M, N, XS, YS, compute, error_types, flatten

DATA = Path(__file__).parent / "data"
EXPECTED = np.load(DATA / "jax_numpy_extra_values.npz")
EXPECTED_ERRORS = json.loads((DATA / "jax_numpy_extra_errors.json").read_text())
# transcendental results (cos, log, pow, division chains): within a few ulps of JAX's
CLOSE = ("sinc", "logaddexp2", "rad2deg", "deg2rad", "radians", "degrees", "logspace", "geomspace", "hamming",
         "hanning", "blackman", "unwrap", "corrcoef", "cov", "nanstd", "std", "float_power", "interp", "average",
         "gradient", "histogram_density", "nanvar", "vander", "polyint", "quantile", "percentile", "histogram_bin_edges", "histogram2d.1", "histogram2d.2")


@pytest.fixture(scope="module")
def values():
    return flatten(compute(jnp))


@pytest.mark.parametrize("name", sorted(EXPECTED.files))
def test_equal_to_jax(values, name):
    expected = EXPECTED[name]
    got = np.asarray(values[name])
    assert got.shape == expected.shape, name
    assert got.dtype == expected.dtype, name
    if any(name.startswith(prefix) or prefix in name for prefix in CLOSE):
        np.testing.assert_allclose(got, expected, rtol=4e-6, atol=1e-6, equal_nan=True, err_msg=name)
    else:
        np.testing.assert_array_equal(got, expected, err_msg=name)


def test_error_types_match_jax():
    assert error_types(jnp) == EXPECTED_ERRORS
    assert set(EXPECTED_ERRORS) == set(ERROR_CASES)


JITTED = {
    "nan_to_num": lambda x: jnp.nan_to_num(x), "frexp": lambda x: jnp.frexp(x)[0], "fmax": lambda x: jnp.fmax(x, 1.0),
    "quantile": lambda x: jnp.quantile(x, np.array([0.25, 0.5], np.float32), axis=1),
    "nanmedian": lambda x: jnp.nanmedian(x, axis=1), "nanvar": lambda x: jnp.nanvar(x, axis=1),
    "cov": lambda x: jnp.cov(jnp.nan_to_num(x)), "diagonal": lambda x: jnp.diagonal(x, 1),
    "rot90": lambda x: jnp.rot90(x), "insert": lambda x: jnp.insert(x, 1, 0.0, axis=1),
    "delete": lambda x: jnp.delete(x, np.array([0, 2]), axis=1), "partition": lambda x: jnp.partition(x, 1, axis=1),
    "histogram": lambda x: jnp.histogram(jnp.nan_to_num(x), 4)[0], "gradient": lambda x: jnp.gradient(x, axis=1),
    "unique_size": lambda x: jnp.unique(jnp.nan_to_num(x), size=6), "argwhere": lambda x: jnp.argwhere(x > 4, size=5),
    "union1d": lambda x: jnp.union1d(x[0], x[1], size=10), "bincount": lambda x: jnp.bincount(x[1].astype(int), length=10),
    "compress": lambda x: jnp.compress(x[1] > 4, x[1], size=4, fill_value=-1.0),
}


@pytest.mark.parametrize("name", sorted(JITTED))
def test_jit_equals_eager(name):
    function = JITTED[name]
    eager = function(N)
    jitted = meshjit.jit(function)(N)
    np.testing.assert_array_equal(np.asarray(jitted), np.asarray(eager))


def test_traced_sizes_need_static_arguments():
    with pytest.raises(meshjit.errors.ConcretizationTypeError, match="size="):
        meshjit.jit(jnp.unique)(M)
    with pytest.raises(meshjit.errors.ConcretizationTypeError, match="length"):
        meshjit.jit(jnp.bincount)(np.arange(3))
    with pytest.raises(TypeError, match="concrete"):
        meshjit.jit(jnp.trim_zeros)(YS)


def test_gradients():
    """Differentiable where JAX's are: the derivative of each function at a point without ties."""
    x = np.array([[0.3, 1.7, 0.9, 2.5], [1.1, 0.2, 3.3, 1.9]], np.float32)
    grad = meshjit.grad(lambda v: jnp.quantile(v, 0.4))(x)
    # 8 values, position 0.4 * 7 = 2.8 between the 3rd (0.9) and 4th (1.1) smallest
    expected = np.zeros_like(x)
    expected[0, 2], expected[1, 0] = np.float32(1) - np.float32(0.8), np.float32(0.8)
    np.testing.assert_allclose(grad, expected, rtol=1e-6)
    grad = meshjit.grad(lambda v: jnp.trapezoid(v * v, XS))(YS)
    np.testing.assert_allclose(grad, 2 * YS * np.array([0.5, 0.75, 1.0, 1.25, 1.5, 1.0], np.float32), rtol=1e-6)
    grad = meshjit.grad(lambda v: jnp.nansum(jnp.nanmax(v, axis=1)))(N[:2])
    np.testing.assert_array_equal(grad, (N[:2] == np.nanmax(N[:2], axis=1, keepdims=True)).astype(np.float32))
    grad = meshjit.grad(lambda v: jnp.sum(jnp.sinc(v)))(np.array([0.0], np.float32))
    np.testing.assert_array_equal(grad, [0.0])


def test_sharded_inputs_give_unsharded_results():
    mesh = meshjit.make_mesh((2,), ("x",), axis_types=meshjit.sharding.AxisType.Auto)
    x = np.arange(32, dtype=np.float32).reshape(8, 4) ** 1.5 % 7
    sharded = meshjit.device_put(x, meshjit.NamedSharding(mesh, meshjit.P("x")))
    for name in ("quantile", "nanvar", "cov", "rot90", "diagonal", "insert", "delete", "partition", "gradient",
                 "histogram", "unique_size", "argwhere"):
        function = JITTED[name]
        np.testing.assert_array_equal(np.asarray(meshjit.jit(function)(sharded)), np.asarray(function(x)),
                                      err_msg=name)


def test_median_over_sharded_axis_keeps_batch_sharded():
    """The median over the unsharded axis needs no collective; over the sharded axis the sort
    gathers it."""
    mesh = meshjit.make_mesh((2,), ("x",), axis_types=meshjit.sharding.AxisType.Auto)
    x = np.arange(32, dtype=np.float32).reshape(8, 4) % 5
    sharded = meshjit.device_put(x, meshjit.NamedSharding(mesh, meshjit.P("x")))
    rows = meshjit.jit(lambda v: jnp.median(v, axis=1))
    np.testing.assert_array_equal(np.asarray(rows(sharded)), np.median(x, axis=1))
    assert "all_gather" not in rows.lower(sharded).compile().as_text()
    columns = meshjit.jit(lambda v: jnp.median(v, axis=0))
    np.testing.assert_array_equal(np.asarray(columns(sharded)), np.median(x, axis=0))
    assert "all_gather" in columns.lower(sharded).compile().as_text() or "all_to_all" in columns.lower(
        sharded).compile().as_text()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_binary_exponent_functions_on_every_float_width(dtype):
    """frexp/ldexp read and write the IEEE fields of each width exactly (numpy's frexp/ldexp
    are exact, not transcendental)."""
    x = np.array([1.5, -3.0, 0.25, 0.0, 1e-3, 40.0, -0.0078125], np.float32)
    array = jnp.asarray(x, dtype=getattr(jnp, dtype))
    reference = np.asarray(array).astype(np.float32)
    mantissa, exponent = jnp.frexp(array)
    expected_mantissa, expected_exponent = np.frexp(reference)
    np.testing.assert_array_equal(np.asarray(mantissa).astype(np.float32), expected_mantissa)
    np.testing.assert_array_equal(np.asarray(exponent), expected_exponent)
    np.testing.assert_array_equal(np.asarray(jnp.ldexp(mantissa, exponent)).astype(np.float32), reference)
    filled = jnp.nan_to_num(jnp.asarray(np.array([np.nan, np.inf], np.float32), dtype=getattr(jnp, dtype)))
    assert np.asarray(filled).astype(np.float32)[1] == np.float32(jnp.finfo(getattr(jnp, dtype)).max)


def test_matrix_directives_and_string_bins_as_jax():
    """JAX 0.10.2: r_/c_ take the "r"/"c" directives (a 1-d result as a row or a column); a
    string ``bins`` is a TypeError."""
    np.testing.assert_array_equal(np.asarray(jnp.r_["c", [1, 2], [3]]), [[1], [2], [3]])
    np.testing.assert_array_equal(np.asarray(jnp.r_["r", 1, [2, 3]]), [[1, 2, 3]])
    np.testing.assert_array_equal(np.asarray(jnp.r_["r", [[1, 2], [3, 4]], [[5, 6]]]), [[1, 2], [3, 4], [5, 6]])
    np.testing.assert_array_equal(np.asarray(jnp.c_["r", [1, 2], [3, 4]]), [[1, 3], [2, 4]])
    with pytest.raises(TypeError, match="bins"):
        jnp.histogram(jnp.arange(5.0), bins="auto")
