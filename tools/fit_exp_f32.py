"""Fit the polynomial behind the float32 ``exp`` kernel helper (compiler/lowering/codegen_math.py).

    e^r ~ 1 + r + r^2 (c0 + c1 r + c2 r^2 + c3 r^3 + c4 r^4),  |r| <= ln2 / 2

The helper reduces x = n ln2 + r and evaluates this in float32. The fit minimises the largest
relative error of e^r: weighted least squares on Chebyshev points, reweighted toward the points
where the error is largest (Lawson's iteration), then the coefficients are rounded to float32
and the error is measured again. Run: ``python tools/fit_exp_f32.py`` (a second).
"""

from __future__ import annotations

import numpy as np

HALF_LN2 = float(np.log(2) / 2)
DEGREE = 4  # of the polynomial multiplying r^2


def fit(rounds: int = 40, points: int = 4001) -> np.ndarray:
    r = np.cos(np.linspace(0, np.pi, points)) * HALF_LN2 * 1.0005  # a little past the range
    r = r[r != 0]
    target = (np.expm1(r) - r) / (r * r)
    weight = r * r / np.exp(r)  # turns an error in the polynomial into a relative error of e^r
    columns = np.vander(r, DEGREE + 1, increasing=True)
    lawson = np.ones_like(r)
    for _ in range(rounds):
        scale = weight * lawson
        coefficients = np.linalg.lstsq(columns * scale[:, None], target * scale, rcond=None)[0]
        error = np.abs(columns @ coefficients - target) * weight
        lawson *= (error / error.max() + 1e-3) ** 0.5
    return coefficients


def main() -> None:
    coefficients = fit().astype(np.float32)
    r = np.linspace(-HALF_LN2, HALF_LN2, 1_000_001)
    polynomial = np.polyval(coefficients[::-1].astype(np.float64), r)
    relative = np.abs((1 + r + r * r * polynomial) - np.exp(r)) / np.exp(r)
    print("c0..c4 (float32):", ", ".join(repr(float(value)) for value in coefficients))
    print(f"largest relative error of e^r with the float32 coefficients: {relative.max():.3g} "
          f"({relative.max() / 2.0 ** -24:.3f} of a half-ulp at worst)")


if __name__ == "__main__":
    main()
