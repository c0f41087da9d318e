"""Every meshjit.numpy record against numpy, eagerly, traced (verified, round-tripped through
text, interpreted) and through meshjit.jit, checking JAX's result dtypes."""

from __future__ import annotations

import numpy as np
import optree
import pytest
from helpers import MODES, assert_close, dtype_name, run
from numpy_records_array_api import ARRAY_API
from numpy_records_elementwise import ELEMENTWISE
from numpy_records_indexing import INDEXING, PRODUCTS
from numpy_records_operators import PROMOTION_AND_OPERATORS
from numpy_records_reductions import REDUCTIONS
from numpy_records_shapes import CREATION, SHAPES

import meshjit.numpy as jnp
from meshjit import config

RECORDS = (
    ELEMENTWISE + PROMOTION_AND_OPERATORS + REDUCTIONS + SHAPES + CREATION + INDEXING + PRODUCTS + ARRAY_API
)

pytestmark = pytest.mark.usefixtures("restore_runtime_state")


def test_record_names_are_unique():
    names = [str(record) for record in RECORDS]
    assert len(names) == len(set(names))


def _check(record, actual, expected):
    actual_leaves = optree.tree_leaves(actual)
    expected_leaves = optree.tree_leaves(expected)
    assert len(actual_leaves) == len(expected_leaves), (
        f"{len(actual_leaves)} outputs, expected {len(expected_leaves)}"
    )
    dtypes = (record.dtype,) * len(actual_leaves) if isinstance(record.dtype, str) else record.dtype
    assert len(dtypes) == len(actual_leaves), "the record lists one dtype per output"
    for index, (leaf, reference, dtype) in enumerate(zip(actual_leaves, expected_leaves, dtypes)):
        try:
            assert_close(
                leaf, np.asarray(reference), rtol=record.rtol, atol=record.atol, dtype=dtype
            )
        except AssertionError as error:
            raise AssertionError(f"output {index}: {error}") from None


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("record", RECORDS, ids=str)
def test_record(record, mode):
    config.update("jax_enable_x64", record.x64)
    arrays = record.sample()
    expected = record.expected(arrays)
    if mode == "eager":
        arrays = [jnp.asarray(array) for array in arrays]
        # NOTE: eager operators must meet meshjit Arrays, or numpy's own operators would run
        assert not any(isinstance(array, np.ndarray) for array in arrays)
    actual = run(mode, lambda *args: record.function(jnp, *args), *arrays)
    _check(record, actual, expected)


def test_dtype_name_helper():
    assert dtype_name(np.zeros(2, np.float32)) == "f32"
