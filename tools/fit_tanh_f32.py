"""Fit the rational function behind the float32 ``tanh`` kernel helper (compiler/lowering/codegen_math.py).

    tanh(a) ~ a * (1 + p1 s + ... + p4 s^4) / (1 + q1 s + ... + q5 s^5),  s = a^2,  0 <= a <= 9.1

Fixing both constant terms at 1 makes tiny arguments come out exactly (tanh a = a there). The
fit minimises the largest relative error: each round solves the linearised problem
``a P(s) - tanh(a) Q(s) = 0`` by weighted least squares, weighting by the previous denominator
(so the residual approximates the relative error of P/Q) and by a Lawson factor that grows
where the error is largest. It prints the coefficients, the largest relative error, and the
largest error in float32 ulps of the result evaluated in float64 and rounded once, over every
float32 in [0, 10] sampled densely. Run: ``python tools/fit_tanh_f32.py`` (about a minute).
"""

from __future__ import annotations

import numpy as np

CLAMP = 9.1          # from 9.02 on, tanh rounds to 1 in float32
NUMERATOR, DENOMINATOR = 4, 5


def fit(rounds: int = 400, points: int = 400_000) -> tuple[np.ndarray, np.ndarray, float]:
    a = np.linspace(1e-3, CLAMP, points)
    y = np.tanh(a)
    s = a * a
    numerator_columns = np.stack([a * s ** k for k in range(1, NUMERATOR + 1)], axis=1)
    weights = np.ones_like(a)
    denominator = np.ones_like(a)
    best = (np.inf, None, None)
    for _ in range(rounds):
        system = np.concatenate([numerator_columns,
                                 np.stack([-y * s ** k for k in range(1, DENOMINATOR + 1)], axis=1)], axis=1)
        scale = weights / (y * denominator)
        scaled = system * scale[:, None]
        columns = np.abs(scaled).max(axis=0)  # NOTE: equilibrated, the powers of s span 30 decades
        solution = np.linalg.lstsq(scaled / columns, (y - a) * scale, rcond=None)[0] / columns
        p, q = solution[:NUMERATOR], solution[NUMERATOR:]
        denominator = 1 + sum(q[k] * s ** (k + 1) for k in range(DENOMINATOR))
        error = np.abs(a * (1 + sum(p[k] * s ** (k + 1) for k in range(NUMERATOR))) / denominator - y) / y
        if error.max() < best[0]:
            best = (error.max(), p.copy(), q.copy())
        weights *= (error / error.mean()) ** 0.3
        weights /= weights.mean()
    return best[1], best[2], best[0]


def evaluate(x: np.ndarray, p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The helper's arithmetic: float64 Horner, one rounding to float32 at the end."""
    z = x.astype(np.float64)
    a = np.minimum(np.abs(z), CLAMP)
    s = a * a
    numerator = np.zeros_like(s)
    for coefficient in p[::-1]:
        numerator = (numerator + coefficient) * s
    denominator = np.zeros_like(s)
    for coefficient in q[::-1]:
        denominator = (denominator + coefficient) * s
    return np.copysign(a * (1 + numerator) / (1 + denominator), z).astype(np.float32)


def main() -> None:
    p, q, relative = fit()
    x = np.concatenate([np.linspace(0, 10, 20_000_001, dtype=np.float32),
                        np.geomspace(1e-38, 1, 400_001).astype(np.float32)])
    exact = np.tanh(x.astype(np.float64))
    ulps = np.abs(evaluate(x, p, q).astype(np.float64) - exact) / np.spacing(np.abs(exact).astype(np.float32))
    print("numerator p1..p4:", ", ".join(repr(float(value)) for value in p))
    print("denominator q1..q5:", ", ".join(repr(float(value)) for value in q))
    print(f"largest relative error of the fit {relative:.3g}; of the float32 result {ulps.max():.3f} ulp "
          f"(at {x[ulps.argmax()]:g}), mean {ulps.mean():.3f} ulp")


if __name__ == "__main__":
    main()
