"""jnp.roots, jnp.polyfit, jnp.i0 and jnp.kaiser compared with JAX 0.10.2: ``cases(jax, jnp,
jsl)`` maps a name to a thunk, run once under JAX by ``generate_linalg_values.py``
(``data/polynomial_values.json``) and under meshjit by ``test_linalg_jax.py``."""

import numpy as np

from linalg_complex_cases import flat as flat  # noqa: F401 - the shared flattening

RNG = np.random.default_rng(323)
X = np.linspace(-2, 3, 12).astype(np.float32)
Y = (1.5 * X ** 3 - X + 0.5 + 0.1 * RNG.standard_normal(12)).astype(np.float32)
Y2 = np.stack([Y, np.cos(np.arange(12, dtype=np.float32))], axis=1).astype(np.float32)
W = RNG.uniform(0.5, 2.0, 12).astype(np.float32)
BESSEL = np.array([-30., -5, -1, -0.25, 0, 0.5, 1, 3, 14, 16, 19.5, 21, 40, 80], np.float32)


def _head(thunk):
    """``thunk``, whose error keeps only its type and first two lines (JAX's next lines name
    where it traced)."""
    def run():
        try:
            return thunk()
        except Exception as error:  # noqa: BLE001 - compared by type and text
            lines = str(error).splitlines()
            raise RuntimeError(f"{type(error).__name__}: {' | '.join(lines[:2])}") from None

    return run


def root_cases(jax, jnp, jsl):
    return {
        "roots.cubic": lambda: jnp.roots(np.array([1.0, -6, 11, -6], np.float32)),
        "roots.complex_roots": lambda: jnp.roots(np.array([1.0, 0, 0, 2], np.float32)),
        "roots.leading_zeros": lambda: jnp.roots(np.array([0.0, 0, 1, -3, 2], np.float32)),
        "roots.keep_zeros": lambda: jnp.roots(np.array([0.0, 0, 1, -3, 2], np.float32), strip_zeros=False),
        "roots.keep_zeros_jit": lambda: jax.jit(lambda p: jnp.roots(p, strip_zeros=False))(
            np.array([0.0, 1, 2], np.float32)),
        "roots.all_zero": lambda: jnp.roots(np.zeros(3, np.float32), strip_zeros=False),
        "roots.constant": lambda: jnp.roots(np.array([4.0], np.float32)),
        "roots.ints": lambda: jnp.roots(np.array([1, 3, 2])),
        "roots.complex_coefficients": lambda: jnp.roots(np.array([1, 2j, -1 + 1j], np.complex64)),
        "roots.error_rank": lambda: jnp.roots(np.ones((2, 2), np.float32)),
        "roots.error_jit": _head(lambda: jax.jit(jnp.roots)(np.array([0.0, 1, 2], np.float32))),
        "roots.grad": lambda: jax.grad(lambda p: jnp.sum(jnp.abs(jnp.roots(p)) ** 2))(np.array([1.0, -6, 11, -6],
                                                                                               np.float32)),
    }


def fit_cases(jax, jnp, jsl):
    return {
        "polyfit.cubic": lambda: jnp.polyfit(X, Y, 3), "polyfit.two_columns": lambda: jnp.polyfit(X, Y2, 2),
        "polyfit.weighted": lambda: jnp.polyfit(X, Y, 2, w=W),
        "polyfit.weighted_columns": lambda: jnp.polyfit(X, Y2, 1, w=W),
        "polyfit.full": lambda: jnp.polyfit(X, Y, 3, full=True),
        "polyfit.full_rcond": lambda: jnp.polyfit(X, Y2, 4, full=True, rcond=1e-3),
        "polyfit.cov": lambda: jnp.polyfit(X, Y, 2, cov=True),
        "polyfit.cov_unscaled": lambda: jnp.polyfit(X, Y, 2, cov="unscaled", w=W),
        "polyfit.cov_columns": lambda: jnp.polyfit(X, Y2, 1, cov=True),
        "polyfit.ints": lambda: jnp.polyfit(np.arange(5), np.arange(5) ** 2, 2),
        "polyfit.jit": lambda: jax.jit(jnp.polyfit, static_argnums=2)(X, Y, 1),
        "polyfit.grad": lambda: jax.grad(lambda y: jnp.sum(jnp.polyfit(X, y, 2) ** 2))(Y),
        "polyfit.error_deg": lambda: jnp.polyfit(X, Y, -1), "polyfit.error_x": lambda: jnp.polyfit(Y2, Y, 1),
        "polyfit.error_empty": lambda: jnp.polyfit(X[:0], Y[:0], 1),
        "polyfit.error_y": lambda: jnp.polyfit(X, Y2[None], 1),
        "polyfit.error_length": lambda: jnp.polyfit(X, Y[:5], 1),
        "polyfit.error_w": lambda: jnp.polyfit(X, Y, 1, w=W[:3]),
        "polyfit.error_w_rank": lambda: jnp.polyfit(X, Y, 1, w=Y2),
        "polyfit.error_cov_points": lambda: jnp.polyfit(X[:3], Y[:3], 2, cov=True),
    }


def bessel_cases(jax, jnp, jsl):
    return {
        "i0.values": lambda: jnp.i0(BESSEL), "i0.grad": lambda: jax.vmap(jax.grad(jnp.i0))(BESSEL),
        "i0.int": lambda: jnp.i0(np.arange(4)), "i0.scalar": lambda: jnp.i0(1.5),
        "i0.error_complex": lambda: jnp.i0(np.array([1 + 1j], np.complex64)),
        "kaiser.5": lambda: jnp.kaiser(5, 3.0), "kaiser.12": lambda: jnp.kaiser(12, 8.6),
        "kaiser.one": lambda: jnp.kaiser(1, 2.0), "kaiser.zero": lambda: jnp.kaiser(0, 2.0),
        "kaiser.beta_array": lambda: jnp.kaiser(6, np.float32(0.5)),
        "kaiser.grad": lambda: jax.grad(lambda b: jnp.sum(jnp.kaiser(6, b)))(2.0),
        "kaiser.error_jit": _head(lambda: jax.jit(jnp.kaiser)(3, 1.0)),
    }


def cases(jax, jnp, jsl):
    """name -> thunk computing one value (or raising one error) with the modules given."""
    return {**root_cases(jax, jnp, jsl), **fit_cases(jax, jnp, jsl), **bessel_cases(jax, jnp, jsl)}
