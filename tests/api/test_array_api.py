"""The Python Array API standard's (2024.12) namespace pieces of meshjit.numpy: inspection,
dtype queries, DLPack, devices, data-dependent functions and 0-d boolean indices."""

from __future__ import annotations

import numpy as np
import pytest

import meshjit
import meshjit.numpy as jnp
from meshjit.compiler.frontend.trace import ConcretizationTypeError

pytestmark = pytest.mark.usefixtures("restore_runtime_state")


def test_namespace_and_version():
    x = jnp.arange(3)
    assert x.__array_namespace__() is jnp
    assert x.__array_namespace__(api_version="2023.12") is jnp
    assert jnp.__array_api_version__ == "2024.12"
    with pytest.raises(ValueError, match="2019.12"):
        x.__array_namespace__(api_version="2019.12")
    assert meshjit.jit(lambda y: y.__array_namespace__() is jnp and y)(x) is not None
    with pytest.raises(TypeError, match=r"x.at\[idx\].set\(y\)"):
        x[0] = 1


def test_namespace_info_follows_x64():
    info = jnp.__array_namespace_info__()
    assert info.capabilities()["max dimensions"] == 64
    assert info.default_device() == meshjit.devices()[0] and info.devices() == list(meshjit.devices())
    assert info.default_dtypes()["integral"] == np.int32
    assert set(info.dtypes()) == {"bool", "int8", "int16", "int32", "uint8", "uint16", "uint32", "float32",
                                  "complex64"}
    assert set(info.dtypes(kind=("bool", "real floating"))) == {"bool", "float32"}
    meshjit.config.update("jax_enable_x64", True)
    assert info.default_dtypes()["real floating"] == np.float64
    assert set(info.dtypes(kind="signed integer")) == {"int8", "int16", "int32", "int64"}
    with pytest.raises(ValueError, match="unknown kind 'float'"):
        info.dtypes(kind="float")


def test_dtype_queries():
    assert jnp.isdtype(jnp.int32, "integral") and jnp.isdtype(jnp.float32, ("bool", "real floating"))
    assert not jnp.isdtype(jnp.uint32, "signed integer") and jnp.isdtype(jnp.bool, jnp.bool_)
    assert jnp.result_type(jnp.int32, 1.0) == np.float32
    assert jnp.result_type(jnp.arange(2, dtype=jnp.uint32), 1) == np.uint32
    assert jnp.result_type(jnp.float32, jnp.int32) == np.float32
    assert jnp.can_cast(jnp.int32, jnp.float64) and not jnp.can_cast(jnp.float32, jnp.int32)
    assert jnp.iinfo(jnp.int32).max == 2**31 - 1 and jnp.iinfo(jnp.arange(2, dtype=jnp.uint32)).min == 0
    info = jnp.finfo(jnp.float32)
    assert type(info.eps) is float and info.eps == float(np.finfo(np.float32).eps)
    assert info.bits == 32 and info.dtype == np.float32 and info.nmant == 23
    with pytest.raises(ValueError, match="floating dtype"):
        jnp.finfo(jnp.int32)


def test_dlpack_both_ways():
    x = jnp.arange(6.0).reshape(2, 3)
    host = np.from_dlpack(x)
    np.testing.assert_array_equal(host, np.arange(6.0).reshape(2, 3))
    assert x.__dlpack_device__() == (1, 0)
    source = np.arange(6, dtype=np.float32)
    shared = jnp.from_dlpack(source)
    assert np.shares_memory(np.asarray(shared), source)  # zero-copy import of a host buffer
    widened = jnp.from_dlpack(np.arange(3, dtype=np.float64))  # canonicalised: a copy
    assert widened.dtype == np.float32
    with pytest.raises(BufferError, match="copy=False"):
        jnp.from_dlpack(np.arange(3, dtype=np.float64), copy=False)
    assert jnp.from_dlpack(x) is x
    assert complex(jnp.asarray(2.5)) == 2.5 + 0j


def test_device_arguments_place_results():
    device = meshjit.devices()[1]
    for result in (jnp.eye(2, device=device), jnp.zeros(3, device=device), jnp.asarray([1, 2], device=device),
                   jnp.arange(3, device=device), jnp.linspace(0, 1, 3, device=device),
                   jnp.astype(jnp.ones(2), jnp.int32, device=device), jnp.ones(2).to_device(device)):
        assert result.devices() == {device}
    with pytest.raises(ValueError, match="inside jit"):
        meshjit.jit(lambda: jnp.zeros(2, device=device))()


def test_nonzero_and_unique_are_eager_or_need_a_size():
    x = jnp.asarray([[0, 3], [3, 0], [1, 0]])
    rows, columns = jnp.nonzero(x)
    np.testing.assert_array_equal(rows, [0, 1, 2])
    np.testing.assert_array_equal(columns, [1, 0, 0])
    with pytest.raises(ConcretizationTypeError, match="size="):
        meshjit.jit(jnp.nonzero)(x)
    sized = meshjit.jit(lambda y: jnp.nonzero(y, size=4, fill_value=-1))(x)
    np.testing.assert_array_equal(sized[0], [0, 1, 2, -1])
    np.testing.assert_array_equal(jnp.flatnonzero(x), [1, 2, 4])
    result = jnp.unique_all(jnp.asarray([3.0, 1.0, 3.0, np.nan, np.nan]))
    np.testing.assert_array_equal(result.values, [1.0, 3.0, np.nan, np.nan])
    np.testing.assert_array_equal(result.indices, [1, 0, 3, 4])
    np.testing.assert_array_equal(result.counts, [1, 2, 1, 1])
    inverse = jnp.unique_inverse(x).inverse_indices
    assert inverse.shape == (3, 2) and inverse.dtype == np.int32
    np.testing.assert_array_equal(jnp.unique_values(x), [0, 1, 3])
    np.testing.assert_array_equal(jnp.unique_counts(x).counts, [3, 1, 2])
    with pytest.raises(ConcretizationTypeError, match="concrete"):
        meshjit.jit(jnp.unique_values)(x)


@pytest.mark.parametrize("index", [True, False, np.bool_(True), (Ellipsis, True), (0, False), (True, 1),
                                   (slice(None), np.asarray(True), 1)], ids=repr)
def test_zero_dim_boolean_index_is_numpy_s(index):
    host = np.arange(6).reshape(2, 3)
    expected = host[index]
    for result in (jnp.asarray(host)[index], meshjit.jit(lambda y: y[index])(jnp.asarray(host))):
        assert result.shape == expected.shape
        np.testing.assert_array_equal(result, expected)


def test_repeat_with_traced_counts_needs_the_total():
    x = jnp.arange(6).reshape(2, 3)
    counts = jnp.asarray([1, 0, 2])
    result = meshjit.jit(lambda y, r: jnp.repeat(y, r, axis=1, total_repeat_length=5))(x, counts)
    np.testing.assert_array_equal(result, [[0, 2, 2, 2, 2], [3, 5, 5, 5, 5]])  # JAX 0.10.2's value
    with pytest.raises(ConcretizationTypeError, match="total_repeat_length"):
        meshjit.jit(lambda y, r: jnp.repeat(y, r, axis=1))(x, counts)
    with pytest.raises(ValueError, match="non-negative"):
        jnp.repeat(x, np.asarray([1, -1, 2]), axis=1)


def test_linalg_namespace_has_the_products():
    np.testing.assert_allclose(jnp.linalg.vecdot(jnp.ones((2, 3)), jnp.arange(3.0)), [3.0, 3.0])
    assert jnp.linalg.matrix_transpose(jnp.ones((2, 3))).shape == (3, 2)


def test_small_integers_keep_their_dtype_and_wrap_as_jax():
    x = jnp.asarray(np.array([1, -2, 100, -128], np.int8))
    y = jnp.asarray(np.array([3, 2, 100, 1], np.uint8))
    assert (x + 1).dtype == np.int8 and (x + y).dtype == np.int16  # JAX's lattice: i8 with u8 is i16
    np.testing.assert_array_equal(x * x, np.array([1, 4, 16, 0], np.int8))
    assert jnp.sum(x).dtype == np.int32 and jnp.sum(y).dtype == np.uint32  # JAX's promote_integers
    np.testing.assert_array_equal(meshjit.jit(lambda v: (v.astype(jnp.float32) * 1000).astype(jnp.int8))(x),
                                  [127, -128, 127, -128])  # float to int saturates, as XLA
    assert jnp.zeros(2, jnp.uint16).dtype == np.uint16 and jnp.int16(3).dtype == np.int16


def test_cumulative_sum_widens_narrow_integers_as_jax():
    """JAX 0.10.2: cumulative_sum of u8/i8/i16 accumulates in u32/i32 (cumsum and
    cumulative_prod keep the dtype)."""
    import meshjit.numpy as jnp

    for dtype, expected in ((np.uint8, np.uint32), (np.int8, np.int32), (np.int16, np.int32), (np.float16, np.float16)):
        values = np.ones(3, dtype)
        assert jnp.cumulative_sum(values).dtype == expected
        assert jnp.cumsum(values).dtype == dtype and jnp.cumulative_prod(values).dtype == dtype
    np.testing.assert_array_equal(np.asarray(jnp.cumulative_sum(np.full(300, 1, np.uint8))), np.arange(1, 301))
