"""Every op's batching rule against the op run once per example: the partitioner's op table
(``partition_cases.RECORDS``, one record per global op and variant) under vmap with the batch
dim first, last, or on the first operand only, compared with the reference interpreter on each
example and the results stacked."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from meshjit.compiler.frontend.trace import _default_eager, bind
from partition_cases import RECORDS

import meshjit

BATCH = 3
MODES = ("front", "last", "first_only")
# sharding_constraint takes its sharding from the cases (tests/api/test_vmap.py batches it);
# iota and constant have no operands to batch.
SKIPPED = ("sharding_constraint", "iota", "constant")
TESTED = [record for record in RECORDS if record.op not in SKIPPED]


def _batched_operands(record, rng):
    return [operand.values(rng, (BATCH,) + operand.type.shape, operand.type.dtype)
            for operand in record.operands]


def _in_axes(mode: str, count: int):
    if mode == "front":
        return (0,) * count
    if mode == "last":
        return (-1,) * count
    return (0,) + (None,) * (count - 1)


def _arguments(values, mode: str):
    if mode == "last":
        return [np.moveaxis(value, 0, -1) for value in values]
    if mode == "first_only":
        return [values[0]] + [value[0] for value in values[1:]]
    return list(values)


def _expected(record, values, mode: str) -> list[np.ndarray]:
    per_example = []
    for example in range(BATCH):
        operands = [value[example] if mode != "first_only" or index == 0 else value[0]
                    for index, value in enumerate(values)]
        per_example.append(_default_eager(record.op, operands, dict(record.attrs), False))
    return [np.stack([results[position] for results in per_example]) for position in range(len(per_example[0]))]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("record", TESTED, ids=[record.id for record in TESTED])
def test_batching_rule_matches_the_op_per_example(record, mode):
    wide = any(operand.type.dtype in ("f64", "i64", "u64") for operand in record.operands)
    meshjit.config.update("jax_enable_x64", wide)  # 64-bit operands stay 64-bit
    try:
        _check(record, mode)
    finally:
        meshjit.config.update("jax_enable_x64", False)


def _check(record, mode: str) -> None:
    rng = np.random.default_rng(zlib.crc32(f"{record.id}-{mode}".encode()))
    values = _batched_operands(record, rng)
    expected = _expected(record, values, mode)

    def apply(*operands):
        return bind(record.op, list(operands), dict(record.attrs))

    actual = meshjit.vmap(apply, in_axes=_in_axes(mode, len(values)))(*_arguments(values, mode))
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        got = np.asarray(got)
        assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype)
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6, equal_nan=True)
        else:
            np.testing.assert_array_equal(got, want)
