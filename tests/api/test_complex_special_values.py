"""Complex elementwise functions at special values (signed zeros, infinities, NaNs, tiny and huge
parts): equal to JAX 0.10.2's (data/jax_complex_special_values.npz, complex_special_cases.py)
except at the documented DEVIATIONS, the Array API standard's special cases as exact constants,
C99's symmetries of the inverse functions, sharded results equal to unsharded ones, holomorphic
gradients, and JAX's lexicographic order of complex numbers in sort, searchsorted, max and min."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

import complex_special_cases as cases
import meshjit as jax
import meshjit.numpy as jnp
from meshjit import config
from meshjit.sharding import NamedSharding
from meshjit.sharding import PartitionSpec as P

TABLE = np.load(os.path.join(os.path.dirname(__file__), "data", "jax_complex_special_values.npz"))
pytestmark = pytest.mark.usefixtures("restore_runtime_state")
INF, NAN, PI = math.inf, math.nan, math.pi


def _part_mismatches(actual, expected, tolerance: float, tiny: float):
    """Where a real array differs: NaN against a number, a zero or infinity not bit-equal in
    value and sign, a finite value beyond ``tolerance`` relative; a subnormal where JAX has a
    zero of the same sign counts as equal (XLA on CPU flushes subnormal results to zero)."""
    actual, expected = actual.astype(np.float64), expected.astype(np.float64)
    nan = np.isnan(expected)
    exact = ~np.isfinite(expected) | (expected == 0)
    flushed = (expected == 0) & (np.abs(actual) < tiny) & (np.signbit(actual) == np.signbit(expected))
    same = (actual == expected) & (np.signbit(actual) == np.signbit(expected))
    with np.errstate(invalid="ignore"):
        close = np.abs(actual - expected) <= tolerance * np.abs(expected)
    return np.where(nan, ~np.isnan(actual), np.where(exact, ~(same | flushed), ~close))


def _mismatches(actual, expected, dtype: str):
    tolerance, tiny = cases.RELATIVE_TOLERANCE[dtype], np.finfo(np.dtype(dtype)).tiny
    return (_part_mismatches(actual.real, expected.real, tolerance, tiny)
            | _part_mismatches(actual.imag, expected.imag, tolerance, tiny))


@pytest.mark.parametrize("dtype", cases.DTYPES)
def test_special_values_equal_jax_except_the_documented_deviations(dtype):
    config.update("jax_enable_x64", True)
    z = jnp.asarray(cases.GRID, dtype)
    for name, make in cases.FUNCTIONS.items():
        actual, expected = np.asarray(make(jax, jnp)(z)), TABLE[f"{dtype}/{name}"]
        assert actual.dtype == expected.dtype, name
        bad = _mismatches(actual, expected, dtype)
        if name in cases.DEVIATIONS:
            bad &= ~cases.DEVIATIONS[name][1](cases.GRID, dtype)
        where = [f"{cases.GRID[i]} -> {actual[i]} (JAX {expected[i]})" for i in np.nonzero(bad)[0][:4]]
        assert not bad.any(), f"{dtype} {name}: {int(bad.sum())} points differ from JAX: {where}"


# The Array API standard's (2024.12) special cases of complex functions: (function, input,
# expected); None for "either sign" of a zero or infinity. Left out, as JAX leaves them: log, log1p
# and sqrt of inf + NaN i and NaN + inf i (NaN + NaN i, as XLA gives).
STANDARD_CASES = [
    ("acos", (0, 0), (PI / 2, -0.0)), ("acos", (-0.0, 0), (PI / 2, -0.0)), ("acos", (2, INF), (PI / 2, -INF)),
    ("acos", (2, NAN), (NAN, NAN)), ("acos", (-INF, 1), (PI, -INF)), ("acos", (INF, 1), (0, -INF)),
    ("acos", (-INF, INF), (3 * PI / 4, -INF)), ("acos", (INF, INF), (PI / 4, -INF)),
    ("acos", (INF, NAN), (NAN, None)), ("acos", (NAN, 1), (NAN, NAN)), ("acos", (NAN, INF), (NAN, -INF)),
    ("acosh", (0, 0), (0, PI / 2)), ("acosh", (-0.0, 0), (0, PI / 2)), ("acosh", (2, INF), (INF, PI / 2)),
    ("acosh", (-INF, 1), (INF, PI)), ("acosh", (INF, 1), (INF, 0)), ("acosh", (-INF, INF), (INF, 3 * PI / 4)),
    ("acosh", (INF, INF), (INF, PI / 4)), ("acosh", (INF, NAN), (INF, NAN)), ("acosh", (NAN, INF), (INF, NAN)),
    ("acosh", (NAN, NAN), (NAN, NAN)),
    ("asinh", (0, 0), (0, 0)), ("asinh", (2, INF), (INF, PI / 2)), ("asinh", (2, NAN), (NAN, NAN)),
    ("asinh", (INF, 1), (INF, 0)), ("asinh", (INF, INF), (INF, PI / 4)), ("asinh", (INF, NAN), (INF, NAN)),
    ("asinh", (NAN, 1), (NAN, NAN)), ("asinh", (NAN, INF), (None, NAN)),
    ("atanh", (0, 0), (0, 0)), ("atanh", (0, NAN), (0, NAN)), ("atanh", (1, 0), (INF, 0)),
    ("atanh", (2, INF), (0, PI / 2)), ("atanh", (2, NAN), (NAN, NAN)), ("atanh", (INF, 1), (0, PI / 2)),
    ("atanh", (INF, INF), (0, PI / 2)), ("atanh", (INF, NAN), (0, NAN)), ("atanh", (NAN, 1), (NAN, NAN)),
    ("atanh", (NAN, INF), (None, PI / 2)),
    ("cosh", (0, 0), (1, 0)), ("cosh", (INF, 0), (INF, 0)), ("cosh", (NAN, 0), (NAN, 0)),
    ("cosh", (NAN, 1), (NAN, NAN)),
    ("sinh", (0, 0), (0, 0)), ("sinh", (INF, 0), (INF, 0)), ("sinh", (NAN, 0), (NAN, 0)),
    ("sinh", (NAN, 1), (NAN, NAN)),
    ("tanh", (0, 0), (0, 0)), ("tanh", (2, NAN), (NAN, NAN)), ("tanh", (INF, 1), (1, 0)),
    ("tanh", (INF, INF), (1, None)), ("tanh", (INF, NAN), (1, None)), ("tanh", (NAN, 0), (NAN, 0)),
    ("exp", (0, 0), (1, 0)), ("exp", (-0.0, 0), (1, 0)), ("exp", (INF, 0), (INF, 0)),
    ("exp", (-INF, 1), (0, 0)), ("exp", (NAN, 0), (NAN, 0)), ("exp", (NAN, 1), (NAN, NAN)),
    ("expm1", (0, 0), (0, 0)), ("expm1", (INF, 0), (INF, 0)), ("expm1", (-INF, 1), (-1, 0)),
    ("expm1", (-INF, INF), (-1, None)), ("expm1", (-INF, NAN), (-1, None)), ("expm1", (NAN, 0), (NAN, 0)),
    ("log", (-0.0, 0), (-INF, PI)), ("log", (0, 0), (-INF, 0)), ("log", (2, INF), (INF, PI / 2)),
    ("log", (-INF, 1), (INF, PI)), ("log", (INF, 1), (INF, 0)), ("log", (-INF, INF), (INF, 3 * PI / 4)),
    ("log", (INF, INF), (INF, PI / 4)),
    ("log1p", (-1, 0), (-INF, 0)), ("log1p", (2, INF), (INF, PI / 2)), ("log1p", (-INF, 1), (INF, PI)),
    ("sqrt", (0, 0), (0, 0)), ("sqrt", (2, INF), (INF, INF)), ("sqrt", (-INF, 1), (0, INF)),
    ("sqrt", (INF, 1), (INF, 0)),
    ("sign", (0, 0), (0, 0)), ("sign", (-0.0, 0), (-0.0, 0)), ("sign", (0, -0.0), (0, -0.0)),
]


def _check_part(actual: float, expected, dtype, what: str) -> None:
    if expected is None:
        assert actual == 0 or math.isinf(actual), what
    elif math.isnan(expected):
        assert math.isnan(actual), what
    elif expected == 0 or math.isinf(expected):
        assert actual == expected and math.copysign(1, actual) == math.copysign(1, expected), what
    else:
        assert abs(actual - expected) <= 4 * np.finfo(dtype).eps * abs(expected), what


def _standard_inputs(dtype):
    inputs = np.array([complex(*point) for _, point, _ in STANDARD_CASES], dtype)
    return np.concatenate([inputs, np.zeros(-len(inputs) % 8, dtype)])  # a multiple of 8 devices


@pytest.mark.parametrize("mode", ["eager", "jit", "sharded"])
@pytest.mark.parametrize("dtype", cases.DTYPES)
def test_array_api_standard_special_cases(dtype, mode, mesh_8):
    config.update("jax_enable_x64", True)
    z = jnp.asarray(_standard_inputs(dtype))
    if mode == "sharded":
        z = jax.device_put(z, NamedSharding(mesh_8, P("x")))
    for name in sorted({case[0] for case in STANDARD_CASES}):
        function = getattr(jnp, name)
        result = np.asarray(function(z) if mode == "eager" else jax.jit(function)(z))
        for index, (case_name, point, expected) in enumerate(STANDARD_CASES):
            if case_name == name:
                what = f"{dtype} {mode} {name}{complex(*point)} = {result[index]}, expected {expected}"
                _check_part(float(result[index].real), expected[0], dtype, what)
                _check_part(float(result[index].imag), expected[1], dtype, what)


def _bits_equal(a, b) -> bool:
    """Equal values, signs of zero included, and NaNs in the same places (any sign of NaN)."""
    def same(x, y):
        return np.all((np.isnan(x) & np.isnan(y)) | ((x == y) & (np.signbit(x) == np.signbit(y))))

    return bool(same(a.real, b.real) and same(a.imag, b.imag))


@pytest.mark.parametrize("dtype", cases.DTYPES)
def test_inverse_functions_keep_c99_symmetries(dtype):
    config.update("jax_enable_x64", True)
    z = np.asarray(cases.GRID, dtype)
    for name in ("arcsin", "arcsinh", "arctan", "arctanh"):  # odd and conjugate-symmetric
        function = getattr(jnp, name)
        value = np.asarray(function(jnp.asarray(z)))
        assert _bits_equal(np.asarray(function(jnp.asarray(-z))), -value), name
        assert _bits_equal(np.asarray(function(jnp.asarray(np.conj(z)))), np.conj(value)), name
    for name in ("arccos", "arccosh"):  # conjugate-symmetric
        function = getattr(jnp, name)
        value = np.asarray(function(jnp.asarray(z)))
        assert _bits_equal(np.asarray(function(jnp.asarray(np.conj(z)))), np.conj(value)), name


def _same_up_to_rounding(a, b) -> bool:
    """Zeros (with their signs), infinities and NaNs in the same places; finite values within
    four roundings. Jitted programs contract a*b+c into one rounding as XLA does
    (compiler/optimize/xla_arithmetic.py) where eager complex formulas run op by op, and float64
    exp/log are the kernel helpers where a lone small op runs numpy's (docs/execution.md); the
    float32 functions themselves are XLA's on every path."""
    scale = np.maximum(np.abs(a), np.abs(b))  # a part's error is relative to the whole number

    def same(x, y):
        special = ~np.isfinite(x) | ~np.isfinite(y) | (x == 0) | (y == 0)
        exact = (np.isnan(x) & np.isnan(y)) | ((x == y) & (np.signbit(x) == np.signbit(y)))
        with np.errstate(invalid="ignore"):
            close = np.abs(x - y) <= 4 * np.finfo(x.dtype).eps * scale
        return np.all(np.where(special, exact, close))

    return bool(same(a.real, b.real) and same(a.imag, b.imag))


@pytest.mark.parametrize("dtype", cases.DTYPES)
def test_sharded_jitted_and_interpreted_results_equal_eager_ones(dtype, mesh_8):
    config.update("jax_enable_x64", True)
    grid = np.concatenate([cases.GRID, np.zeros(-len(cases.GRID) % 8)]).astype(dtype)
    z = jnp.asarray(grid)
    sharded = jax.device_put(z, NamedSharding(mesh_8, P("x")))
    for name, make in cases.FUNCTIONS.items():
        function = make(jax, jnp)
        eager = np.asarray(function(z))
        assert _same_up_to_rounding(np.asarray(jax.jit(function)(z)), eager), name
        compiled = jax.jit(function).lower(sharded).compile()
        result = compiled(sharded)
        assert result.sharding.spec == P("x"), name
        assert _same_up_to_rounding(np.asarray(result), eager), name
        # the reference interpreter (the kernels' oracle) runs the partitioned program alike
        assert _same_up_to_rounding(np.asarray(compiled.run_reference(sharded)), eager), name


def test_holomorphic_gradients_equal_jax():
    config.update("jax_enable_x64", True)
    z = jnp.asarray(cases.GRADIENT_POINTS, jnp.complex128)
    for name in cases.GRADIENT_FUNCTIONS:
        function = getattr(jnp, name)
        gradient = np.asarray(jax.vmap(jax.grad(function, holomorphic=True))(z))
        expected = TABLE[f"grad/{name}"]
        if name == "arccosh":
            # JAX differentiates acosh as 1 / sqrt(z^2 - 1), the other branch for Re z < 0;
            # meshjit's is the derivative of the function it computes: 1 / (sqrt(z - 1) sqrt(z + 1))
            expected = np.asarray(1 / (jnp.sqrt(z - 1) * jnp.sqrt(z + 1)))
            left = cases.GRADIENT_POINTS.real < 0
            np.testing.assert_allclose(-gradient[left], TABLE[f"grad/{name}"][left], rtol=1e-12)
        np.testing.assert_allclose(gradient, expected, rtol=1e-12, err_msg=name)


def test_complex_order_in_sort_searchsorted_unique_max_and_min(mesh_8):
    values = np.array([2 + 1j, 1 + 5j, 2 - 1j, complex(NAN, 0), 1 + 1j, complex(0, NAN), -1 + 0j, 2 + 1j])
    x = jnp.asarray(values, jnp.complex64)
    # JAX: by real part, then imaginary part, NaNs last within each part
    expected = [-1 + 0j, complex(0, NAN), 1 + 1j, 1 + 5j, 2 - 1j, 2 + 1j, 2 + 1j, complex(NAN, 0)]
    for result in (jnp.sort(x), jax.jit(jnp.sort)(jax.device_put(x, NamedSharding(mesh_8, P("x"))))):
        assert _bits_equal(np.asarray(result), np.asarray(expected, np.complex64))
    assert jnp.argsort(x).tolist() == [6, 5, 4, 1, 2, 0, 7, 3]
    finite = jnp.asarray([2 + 1j, 1 + 5j, 2 - 1j, 1 + 1j, -1 + 0j, 2 + 1j], jnp.complex64)
    assert complex(jnp.max(finite)) == 2 + 1j and complex(jnp.min(finite)) == -1 + 0j
    assert jnp.max(finite.reshape(2, 3), axis=1).tolist() == [2 + 1j, 2 + 1j]
    assert complex(jnp.max(finite, where=finite.real < 2, initial=-5)) == 1 + 5j
    assert jnp.searchsorted(jnp.sort(finite[:5]), finite).tolist() == [4, 2, 3, 1, 0, 4]
    # unique: a NaN part makes NaN + 0i, last; equal_nan collapses them (JAX's)
    with_nans = jnp.asarray([complex(0, NAN), 1 + 1j, complex(NAN, 2), 3 + 0j, 1 + 1j], jnp.complex64)
    values, counts = jnp.unique(with_nans, return_counts=True)
    assert _bits_equal(np.asarray(values), np.asarray([1 + 1j, 3 + 0j, complex(NAN, 0)], np.complex64))
    assert counts.tolist() == [2, 1, 2] and jnp.unique(with_nans, equal_nan=False).shape == (4,)
    assert jnp.sort_complex(jnp.asarray([3, 1, 2])).tolist() == [1, 2, 3]
    assert jnp.sort_complex(jnp.asarray([3.0, 1.0])).dtype == np.complex64


def test_vecdot_conjugates_its_first_argument():
    result = jnp.linalg.vecdot(jnp.asarray([1j, 2j, 3j]), jnp.asarray([1, 2j, 3]))
    assert complex(result) == 4 - 10j
    assert complex(jnp.vecdot(jnp.asarray([1j, 2j, 3j]), jnp.asarray([1, 2j, 3]))) == 4 - 10j
