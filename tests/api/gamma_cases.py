"""The calls behind the gamma-family table (data/jax_gamma_values.npz): each takes the ``jax``
module (JAX itself when data/make_gamma_table.py makes the table, meshjit in the tests) and
returns an array. ``CASES`` equal JAX bit for bit (float32), ``CLOSE_DRAWS`` within the given
ulps; ``X64_CLOSE_CASES`` are float64 draws within the given ulps (XLA's float64 rsqrt starts from AVX-512's vrsqrt14 estimate, so
JAX's own float64 numbers depend on the CPU's vector ISA)."""

from __future__ import annotations

import numpy as np

# shapes from the boosted range (a < 1) through large ones; linspace, not a random generator,
# so the parameters are the same bits everywhere
ALPHAS = np.concatenate([np.linspace(0.01, 1.0, 60), np.linspace(1.0, 12.0, 50), [1e-3, 1e-30, 300.0, 1e4]])
SECOND = np.linspace(0.2, 6.0, ALPHAS.size)
RATES = np.concatenate([np.linspace(0.0, 9.9, 50), np.linspace(10.0, 500.0, 50)]).astype(np.float32)
COUNTS = np.linspace(0.0, 200.0, 100).round()
PROBABILITIES = np.linspace(0.01, 0.99, 100)


def _key(jax, seed=0):
    return jax.random.key(seed)


def _unpartitioned(call):
    def run(jax):
        jax.config.update("jax_threefry_partitionable", False)
        try:
            return call(jax)
        finally:
            jax.config.update("jax_threefry_partitionable", True)
    return run


DRAWS = {
    "gamma": lambda jax: jax.random.gamma(_key(jax, 1), ALPHAS),
    "gamma_shape": lambda jax: jax.random.gamma(_key(jax, 2), 2.5, (3, 4)),
    "gamma_broadcast": lambda jax: jax.random.gamma(_key(jax, 3), np.array([0.5, 3.0]), (3, 2)),
    "gamma_raw_key": lambda jax: jax.random.gamma(jax.random.PRNGKey(4), np.float32(0.7), (5,)),
    "gamma_vmap": lambda jax: jax.vmap(jax.random.gamma)(jax.random.split(_key(jax, 5), 4),
                                                         np.linspace(0.3, 4.0, 8).reshape(4, 2)),
    "gamma_unpartitioned": _unpartitioned(lambda jax: jax.random.gamma(_key(jax, 6), ALPHAS[:40])),
    "loggamma": lambda jax: jax.random.loggamma(_key(jax, 7), ALPHAS),
    "beta": lambda jax: jax.random.beta(_key(jax, 8), ALPHAS, SECOND),
    "dirichlet": lambda jax: jax.random.dirichlet(_key(jax, 9), np.array([0.5, 1.0, 2.0, 7.0]), (5,)),
    "dirichlet_batch": lambda jax: jax.random.dirichlet(_key(jax, 10), np.linspace(0.1, 3.0, 18).reshape(3, 6)),
    "chisquare": lambda jax: jax.random.chisquare(_key(jax, 11), SECOND * 3),
    "t": lambda jax: jax.random.t(_key(jax, 12), SECOND * 3),
    "f": lambda jax: jax.random.f(_key(jax, 13), SECOND * 3, ALPHAS * 2 + 1),
    "poisson": lambda jax: jax.random.poisson(_key(jax, 14), RATES),
    "poisson_shape": lambda jax: jax.random.poisson(_key(jax, 15), 3.0, (4, 5)),
    "binomial": lambda jax: jax.random.binomial(_key(jax, 16), COUNTS, PROBABILITIES),
    "binomial_scalar": lambda jax: jax.random.binomial(_key(jax, 17), 20.0, 0.3, (10,)),
    "multinomial": lambda jax: jax.random.multinomial(_key(jax, 18), 50.0, np.array([0.1, 0.2, 0.3, 0.4])),
    "multinomial_batch": lambda jax: jax.random.multinomial(
        _key(jax, 19), np.array([10.0, 500.0]), np.array([[0.5, 0.25, 0.25], [0.1, 0.1, 0.8]])),
}

# a Cholesky factor and a matrix product: within ulps of JAX's (LAPACK's and XLA's orders differ)
CLOSE_DRAWS = {
    "multivariate_normal": (16, lambda jax: jax.random.multivariate_normal(
        _key(jax, 20), np.array([1.0, -1.0, 0.5]),
        np.array([[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 0.5]]), (4,))),
}

CASES = {name: (lambda call: lambda jax: call(jax))(call) for name, call in DRAWS.items()}
# through QR, eigh and SVD (LAPACK's in both, in other orders): within this absolute tolerance
_MEAN, _COV = np.array([1.0, -1.0, 0.5]), np.array([[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 0.5]])
DECOMPOSITION_DRAWS = {
    "orthogonal": lambda jax: jax.random.orthogonal(_key(jax, 24), 4),
    "orthogonal_wide": lambda jax: jax.random.orthogonal(_key(jax, 25), 2, (3,), m=5),
    "orthogonal_tall": lambda jax: jax.random.orthogonal(_key(jax, 26), 5, m=3),
    "multivariate_normal_eigh": lambda jax: jax.random.multivariate_normal(_key(jax, 27), _MEAN, _COV, (4,),
                                                                           method="eigh"),
    "multivariate_normal_svd": lambda jax: jax.random.multivariate_normal(_key(jax, 28), _MEAN, _COV, (4,),
                                                                          method="svd"),
}

# gradients of the samples in the shape parameter (implicit reparameterisation), within the
# relative tolerance of float32 gammainc (the derivative comes from its derivative in a)
_GRAD_ALPHAS = np.array([0.3, 0.9, 1.5, 4.0, 20.0, 150.0], np.float32)
GRADIENTS = {
    "gamma_grad": (3e-4, lambda jax: jax.grad(lambda a: jax.random.gamma(_key(jax, 21), a).sum())(_GRAD_ALPHAS)),
    "loggamma_grad": (3e-4, lambda jax: jax.grad(
        lambda a: jax.random.loggamma(_key(jax, 22), a).sum())(_GRAD_ALPHAS)),
    "beta_grad": (3e-4, lambda jax: jax.grad(
        lambda a: jax.random.beta(_key(jax, 23), a, 2.0).sum())(_GRAD_ALPHAS)),
}

X64_CLOSE_CASES = {f"x64_{name}": (16, call) for name, call in DRAWS.items()}
X64_CLOSE_CASES.update({f"x64_{name}": case for name, case in CLOSE_DRAWS.items()})
