"""The reference's float64 fused multiply-add (ir/float_math.fma) is ``a * b + c`` rounded once,
checked against the exact rational value over the whole float64 range: where the array
emulation's terms would leave float64's range (operands past 2^995, products in the subnormal
range) and for a few elements alone (rounded from the exact value), which must agree."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from meshjit.ir import float_math

RNG = np.random.default_rng(11)
N = 4000


def _scaled(low: float, high: float) -> np.ndarray:
    return np.exp2(RNG.uniform(low, high, N)) * RNG.choice([-1.0, 1.0], N) * RNG.uniform(1, 2, N)


@np.errstate(all="ignore")
def _rounded_once(x: float, y: float, z: float) -> float:
    if not all(np.isfinite([x, y, z])):
        return x * y + z
    exact = Fraction(x) * Fraction(y) + Fraction(z)
    if not exact:
        return x * y + z  # IEEE's signed zero: the product is exact here
    try:
        return float(exact)
    except OverflowError:
        return float("inf") if exact > 0 else float("-inf")


def _bits(array) -> bytes:
    array = np.asarray(array, np.float64)
    return np.where(np.isnan(array), np.nan, array).tobytes()


REGIONS = {
    "bit patterns": lambda: RNG.integers(0, 2**64, size=(N, 3), dtype=np.uint64).view(np.float64),
    "normal": lambda: RNG.standard_normal((N, 3)),
    "past 2^995": lambda: np.stack([_scaled(990, 1023), _scaled(-40, 0), _scaled(960, 1023)], 1),
    "product past float64": lambda: np.stack([_scaled(500, 520), _scaled(500, 520), _scaled(1010, 1023)], 1),
    "subnormal products": lambda: np.stack([_scaled(-540, -480), _scaled(-540, -480), _scaled(-1074, -960)], 1),
    "cancellation": lambda: (lambda a, b: np.stack([a, b, -(a * b)], 1))(RNG.standard_normal(N),
                                                                         RNG.standard_normal(N)),
}


@pytest.mark.parametrize("region", list(REGIONS))
def test_arrays_round_once(region):
    rows = REGIONS[region]()
    got = float_math.fma(rows[:, 0], rows[:, 1], rows[:, 2])
    expected = np.array([_rounded_once(*row) for row in rows])
    assert _bits(got) == _bits(expected)


@pytest.mark.parametrize("region", list(REGIONS))
def test_a_few_elements_give_the_arrays_bits(region):
    rows = REGIONS[region]()[:300]
    whole = float_math.fma(rows[:, 0], rows[:, 1], rows[:, 2])
    for index, row in enumerate(rows):
        alone = float_math.fma(*(np.float64(value) for value in row))
        assert alone.shape == () and _bits(alone) == _bits(whole[index])


def test_signed_zeros_infinities_and_nans():
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 5e-324, -1.7e308]
    rows = np.array(list(itertools.product(specials, repeat=3)))
    many = float_math.fma(rows[:, 0], rows[:, 1], rows[:, 2])
    assert _bits(many) == _bits([_rounded_once(*row) for row in rows])
    for index, row in enumerate(rows):
        assert _bits(float_math.fma(*(np.float64(value) for value in row))) == _bits(many[index])
