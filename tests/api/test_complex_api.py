"""complex64/complex128 at the API, as JAX 0.10.2 behaves (its outputs were read side by side):
Python complex scalars and weak types, dtype names and queries, the Array API inspection
namespace, JAX's autodiff errors, IR text, sharded programs equal to unsharded ones (uneven,
0-d and size-0 arrays included), shard_map collectives, transfers, and jnp.fft's sharding: batch
dims stay sharded, a sharded transform dim is gathered and shows in the partitioned program."""

from __future__ import annotations

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp
from meshjit import config
from meshjit.ir import parse_module, print_module
from meshjit.sharding import Mesh, NamedSharding
from meshjit.sharding import PartitionSpec as P

pytestmark = pytest.mark.usefixtures("restore_runtime_state")


def _mesh():
    return Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))


def _values(*shape, seed=0, dtype=np.complex64):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


# --- scalars, dtypes and queries -------------------------------------------------------------------


def test_python_complex_scalars_are_weak_and_canonical():
    assert jnp.asarray(1j).dtype == np.complex64 and jnp.asarray(1j).weak_type
    assert jnp.zeros(3, dtype=complex).dtype == np.complex64
    assert (jnp.arange(3) * 1j).dtype == np.complex64 and (jnp.arange(3) * 1j).weak_type
    product = jnp.float32(2) * (1 + 1j)
    assert product.dtype == np.complex64 and not product.weak_type
    assert jnp.array([1, 2j]).dtype == np.complex64
    config.update("jax_enable_x64", True)
    assert jnp.asarray(1j).dtype == np.complex128
    assert (jnp.ones(2, jnp.float32) * 1j).dtype == np.complex64  # a weak scalar keeps f32's width


def test_scalar_types_queries_and_conversions():
    assert jnp.complex64(3).dtype == np.complex64 and complex(jnp.complex64(3)) == 3 + 0j
    assert complex(jnp.asarray(1 + 2j)) == 1 + 2j
    assert jnp.finfo(jnp.complex64).dtype == np.float32
    assert jnp.finfo(jnp.complex64).eps == np.finfo(np.float32).eps
    assert jnp.iscomplexobj(1j) and jnp.iscomplexobj(jnp.ones(2, jnp.complex64))
    assert not jnp.iscomplexobj(jnp.ones(2)) and jnp.isrealobj(jnp.ones(2))
    assert jnp.isdtype(jnp.complex64, "complex floating") and not jnp.isdtype(jnp.complex64, "real floating")
    assert jnp.asarray(1 + 1j).astype(jnp.float32) == 1.0  # the real part, as XLA converts
    np.testing.assert_array_equal(jnp.iscomplex(jnp.array([1 + 0j, 1j])), [False, True])
    np.testing.assert_array_equal(jnp.isfinite(jnp.array([1, complex(np.inf, 0), complex(0, np.nan)])),
                                  [True, False, False])


def test_array_namespace_info_lists_complex_dtypes():
    info = jnp.__array_namespace_info__()
    assert info.dtypes(kind="complex floating") == {"complex64": np.dtype(np.complex64)}
    assert info.default_dtypes()["complex floating"] == np.complex64
    assert "complex64" in info.dtypes() and "complex64" in info.dtypes(kind="numeric")
    config.update("jax_enable_x64", True)
    assert set(info.dtypes(kind="complex floating")) == {"complex64", "complex128"}
    assert info.default_dtypes()["complex floating"] == np.complex128


def test_real_functions_of_real_arrays_and_lexicographic_extrema():
    assert jnp.real(jnp.arange(3.0)).dtype == np.float32
    np.testing.assert_array_equal(jnp.imag(jnp.arange(3.0)), [0, 0, 0])
    assert jnp.conj(jnp.arange(3)).dtype == jnp.arange(3).dtype
    np.testing.assert_allclose(jnp.angle(jnp.array([1j, -1, 1 + 1j]), deg=True), [90, 180, 45])
    np.testing.assert_array_equal(jnp.maximum(jnp.array([1j, 2 + 0j]), jnp.array([2j, 1 + 5j])), [2j, 2 + 0j])
    x = jnp.array([1 + 2j, 3 - 1j])
    assert x.real.dtype == np.float32 and x.imag[1] == -1 and x.conj()[0] == 1 - 2j


# --- autodiff errors, as JAX raises them -----------------------------------------------------------


def test_grad_of_a_complex_output_needs_holomorphic():
    with pytest.raises(TypeError, match=r"grad requires real-valued outputs \(output dtype that is a sub-dtype of "
                                        r"np.floating\), but got complex64. For holomorphic differentiation, pass "
                                        r"holomorphic=True. For differentiation of non-holomorphic functions "
                                        r"involving complex outputs, use jax.vjp directly."):
        jax.grad(lambda z: z * z)(1 + 2j)
    with pytest.raises(TypeError, match="grad with holomorphic=True requires inputs with complex dtype, but got float32."):
        jax.grad(jnp.abs, holomorphic=True)(1.0)
    with pytest.raises(TypeError, match="grad with holomorphic=True requires outputs with complex dtype, but got float32."):
        jax.grad(jnp.abs, holomorphic=True)(1 + 1j)
    with pytest.raises(TypeError, match="grad requires real- or complex-valued inputs"):
        jax.grad(lambda z: z * z)(jnp.int32(1))


def test_gradients_follow_jax_conventions():
    assert complex(jax.grad(lambda z: jnp.abs(z) ** 2)(3 + 4j)) == pytest.approx(6 - 8j)
    assert complex(jax.grad(lambda z: z ** 2, holomorphic=True)(3 + 4j)) == pytest.approx(6 + 8j)
    assert complex(jax.grad(lambda z: z.real)(jnp.array(1 + 1j))) == 1 + 0j
    assert complex(jax.grad(jnp.abs)(0j)) == 0j
    gradient = jax.grad(lambda z: jnp.real(z) ** 2 + jnp.imag(z) ** 2)(3.0 + 4j)
    assert not gradient.weak_type  # strongly typed, as JAX's


# --- IR text, sharding, transfers ------------------------------------------------------------------


def test_complex_programs_print_and_read_back():
    program = jax.jit(lambda z: jnp.exp(z) * (1 + 2j) + jnp.abs(z) + jnp.fft.fft(z))
    text = program.lower(jnp.asarray(_values(4))).as_text()
    assert "c64[4]" in text and "dense<[1.0, 2.0]> : c64[]" in text and 'fft_type = "FFT"' in text
    assert print_module(parse_module(text)) == text


LAYOUTS = [P(), P("x"), P("x", "y"), P(None, "y"), P(("x", "y"))]


@pytest.mark.parametrize("spec", LAYOUTS, ids=str)
def test_sharded_programs_equal_the_unsharded_run(spec):
    z = _values(8, 12, seed=1)
    w = _values(12, 5, seed=2)
    placed = jax.device_put(z, NamedSharding(_mesh(), spec))

    def program(a, b):
        return (jnp.sum(a @ b, axis=0), jnp.exp(a) * a.conj() / (a + 2), jnp.abs(a).sum(), jnp.fft.fft(a, axis=0),
                jnp.where(jnp.real(a) > 0, a, 1j), jnp.prod(a[:, :3] / 2, axis=1), jnp.mean(a, axis=1))

    sharded = jax.jit(program)(placed, w)
    unsharded = jax.jit(program)(z, w)
    for got, want in zip(sharded, unsharded):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-6, atol=2e-6)


def test_uneven_zero_size_and_scalar_shapes():
    mesh = _mesh()

    def uneven(v):  # 6 rows over 4 devices and 10 columns over 2 and 4: padded shards
        v = jax.lax.with_sharding_constraint(v * 1j + 1, NamedSharding(mesh, P("y", "x")))
        return jnp.fft.fft(jax.lax.with_sharding_constraint(v, NamedSharding(mesh, P(None, "y"))), axis=0).sum(1)

    expected = np.fft.fft(_values(6, 10) * 1j + 1, axis=0).sum(1)
    np.testing.assert_allclose(np.asarray(jax.jit(uneven)(_values(6, 10))), expected, rtol=1e-5, atol=1e-5)
    empty = jnp.zeros((0, 3), jnp.complex64)
    np.testing.assert_array_equal(jnp.sum(empty, axis=0), np.zeros(3, np.complex64))
    assert jnp.fft.fft(jnp.zeros((3, 0), jnp.complex64)).shape == (3, 0)
    assert complex(jnp.sqrt(jnp.asarray(-4 + 0j))) == 2j
    with pytest.raises(ValueError, match="out of bounds"):
        jnp.fft.fft(jnp.asarray(1 + 0j))


def test_shard_map_collectives_and_transfers_of_complex_values():
    mesh = _mesh()
    z = _values(8, 12, seed=3)
    placed = jax.device_put(z, NamedSharding(mesh, P("x", "y")))
    total = jax.shard_map(lambda v: jax.lax.psum(v, "x"), mesh=mesh, in_specs=P("x", "y"), out_specs=P(None, "y"))
    np.testing.assert_allclose(np.asarray(total(placed)), z.reshape(2, 4, 12).sum(0), rtol=1e-6)
    gathered = jax.shard_map(lambda v: jax.lax.all_gather(v, "y", axis=1, tiled=True), mesh=mesh,
                             in_specs=P("x", "y"), out_specs=P("x"), check_vma=False)
    np.testing.assert_array_equal(np.asarray(gathered(placed)), z)
    moved = jax.device_put(placed, NamedSharding(mesh, P(None, "x")))
    assert moved.addressable_shards[0].data.dtype == np.complex64
    np.testing.assert_array_equal(np.asarray(moved), z)
    built = jax.make_array_from_callback(z.shape, NamedSharding(mesh, P("y")), lambda index: z[index])
    np.testing.assert_array_equal(np.asarray(built), z)


# --- jnp.fft's sharding ------------------------------------------------------------------------------


@pytest.mark.parametrize("spec, gathers", [(P("x", None), False), (P(None, "y"), True), (P("x", "y"), True)],
                         ids=str)
def test_fft_gathers_only_a_sharded_transform_dim(spec, gathers):
    z = _values(8, 12, seed=4)
    placed = jax.device_put(z, NamedSharding(_mesh(), spec))
    program = jax.jit(jnp.fft.fft)
    np.testing.assert_allclose(np.asarray(program(placed)), np.asarray(jnp.fft.fft(z)), rtol=1e-6, atol=1e-5)
    partitioned = program.lower(placed).compile().as_text()
    assert ("all_gather" in partitioned) == gathers, partitioned
    if spec[0] == "x":
        assert "c64[4," in partitioned  # the batch dim stays sharded


def test_jacobians_of_complex_functions():
    z = jnp.array([1 + 1j, 2j])
    np.testing.assert_allclose(np.asarray(jax.jacfwd(lambda v: v * v, holomorphic=True)(z)), np.diag([2 + 2j, 4j]))
    np.testing.assert_allclose(np.asarray(jax.jacrev(jnp.abs)(z)), np.diag([(1 - 1j) / np.sqrt(2), -1j]), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jax.hessian(lambda v: jnp.sum(v ** 3), holomorphic=True)(z)),
                               np.diag([6 + 6j, 12j]), rtol=1e-6)
    with pytest.raises(TypeError, match="jacfwd with holomorphic=True requires inputs with complex dtype, but got float32."):
        jax.jacfwd(jnp.abs, holomorphic=True)(jnp.ones(2))
    with pytest.raises(TypeError, match="jacrev with holomorphic=True requires outputs with complex dtype, but got float32."):
        jax.jacrev(jnp.abs, holomorphic=True)(z)
    with pytest.raises(TypeError, match="jacrev requires real-valued outputs .* but got complex64. For holomorphic"):
        jax.jacrev(lambda v: v * v)(z)
    with pytest.raises(TypeError, match="jacfwd requires real-valued inputs .* but got complex64. For holomorphic"):
        jax.jacfwd(jnp.abs)(z)


def test_sixteen_bit_floats_have_no_complex_transform_or_lapack_form():
    """As in JAX: lax.complex, the real FFTs and the decompositions take float32/float64 only."""
    import meshjit as jax
    import meshjit.numpy as jnp

    half = np.ones((2, 2), np.float16)
    with pytest.raises(TypeError, match="expected f32 or f64"):
        jax.lax.complex(half, half)
    with pytest.raises(ValueError, match="RFFT input must be float32 or float64, got float16"):
        jnp.fft.rfft(half)
    with pytest.raises(TypeError, match="cholesky"):
        jnp.linalg.cholesky(half)
    assert jnp.fft.fft(half).dtype == np.complex64  # the complex transforms widen, as JAX's


def test_out_of_range_gather_of_complex_values_fills_nan_plus_zero_i():
    """JAX's fill value for a complex gather in mode "fill" is NaN + 0i."""
    values = jnp.take(jnp.array([1 + 2j, 3j], jnp.complex64), jnp.array([1, 5]), mode="fill")
    result = np.asarray(values)
    assert result[0] == 3j and np.isnan(result[1].real) and result[1].imag == 0
