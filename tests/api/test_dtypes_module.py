"""``meshjit.dtypes`` answers as ``jax.dtypes`` 0.10.2 does (values checked side by side)."""

import numpy as np
import pytest

import meshjit as jax
import meshjit.numpy as jnp


def test_float0_is_jaxs_zero_width_dtype():
    assert jax.dtypes.float0 == np.dtype([("float0", np.void, 0)])
    assert np.zeros(3, jax.dtypes.float0).nbytes == 0
    assert not jax.dtypes.issubdtype(jax.dtypes.float0, np.inexact)
    assert jax.dtypes.issubdtype(jax.dtypes.float0, jax.dtypes.float0)


def test_key_dtypes_are_extended_prng_keys():
    key_dtype = jax.random.key(0).dtype
    assert jax.dtypes.issubdtype(key_dtype, jax.dtypes.prng_key)
    assert jax.dtypes.issubdtype(key_dtype, jax.dtypes.extended)
    assert not jax.dtypes.issubdtype(key_dtype, np.integer)
    assert not jax.dtypes.issubdtype(np.uint32, jax.dtypes.prng_key)
    assert jnp.issubdtype(np.float32, np.floating) and not jnp.issubdtype(np.int32, np.floating)


def test_queries():
    assert jax.dtypes.canonicalize_dtype(np.float64) == np.float32
    with _x64():
        assert jax.dtypes.canonicalize_dtype(np.float64) == np.float64
    assert jax.dtypes.scalar_type_of(3) is int
    assert jax.dtypes.scalar_type_of(jnp.ones(2)) is float
    assert jax.dtypes.scalar_type_of(np.array(True)) is bool
    assert jax.dtypes.itemsize_bits(np.bool_) == 8 and jax.dtypes.itemsize_bits(np.int16) == 16
    assert jax.dtypes.result_type(np.int8, 1.0) == np.float32
    assert issubclass(jax.dtypes.TypePromotionError, ValueError)


class _x64:
    def __enter__(self):
        self.previous = jax.config.read("jax_enable_x64")
        jax.config.update("jax_enable_x64", True)

    def __exit__(self, *exc):
        jax.config.update("jax_enable_x64", self.previous)


@pytest.mark.parametrize("name", ["float0", "issubdtype", "canonicalize_dtype", "prng_key", "finfo"])
def test_names_exist(name):
    assert hasattr(jax.dtypes, name)
