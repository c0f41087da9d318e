"""The jax.scipy cases compared with JAX 0.10.2: ``cases(jsp, jnp)`` maps a name to a thunk,
run once under JAX by ``generate_scipy_values.py`` (``data/scipy_values.json``) and under
meshjit by ``test_scipy.py``. Inputs cover both tails, poles and the supports' edges."""

import numpy as np

X = np.array([-7.5, -3.3, -2.5, -1.0001, -0.5, 0.001, 0.1, 0.5, 1.0, 1.4616, 2.0, 2.5, 3.7, 10.0, 33.3, 150.0], np.float32)
P = np.array([1e-6, 0.01, 0.2, 0.5, 0.8, 0.99], np.float32)
POS = np.array([0.05, 0.5, 1.0, 2.0, 3.3, 7.0], np.float32)


def cases(jsp, jnp):
    """name -> thunk computing one jax.scipy value with the modules given."""
    S, T = jsp.special, jsp.stats
    return {
        "gammaln": lambda: S.gammaln(X), "digamma": lambda: S.digamma(X), "gamma": lambda: S.gamma(X[:12]),
        "betaln": lambda: S.betaln(POS, POS[::-1]), "erf": lambda: S.erf(X / 4), "erfc": lambda: S.erfc(X / 4),
        "erfinv": lambda: S.erfinv(P * 2 - 1), "ndtr": lambda: S.ndtr(X / 2), "log_ndtr": lambda: S.log_ndtr(X),
        "ndtri": lambda: S.ndtri(P), "expit": lambda: S.expit(X / 3), "logit": lambda: S.logit(P),
        "xlogy": lambda: S.xlogy(np.array([0., 1., 2.], np.float32), np.array([0., 2., 3.], np.float32)),
        "xlog1py": lambda: S.xlog1py(np.array([0., 1., 2.], np.float32), np.array([-1., 2., 3.], np.float32)),
        "entr": lambda: S.entr(np.array([-1., 0., 0.5, 2.], np.float32)),
        "rel_entr": lambda: S.rel_entr(POS, POS[::-1]), "kl_div": lambda: S.kl_div(POS, POS[::-1]),
        "factorial": lambda: S.factorial(np.array([0., 1., 5., 10.], np.float32)),
        "multigammaln": lambda: S.multigammaln(POS + 2, 3),
        "logsumexp": lambda: S.logsumexp(X[:6]), "logsumexp_b": lambda: S.logsumexp(X[:6], b=POS),
        "logsumexp_sign": lambda: S.logsumexp(X[:6], b=POS - 1, return_sign=True),
        "logsumexp_axis": lambda: S.logsumexp(X[:12].reshape(3, 4), axis=1, keepdims=True),
        "norm.logpdf": lambda: T.norm.logpdf(X, 1., 2.), "norm.pdf": lambda: T.norm.pdf(X, 1., 2.),
        "norm.cdf": lambda: T.norm.cdf(X, 1., 2.), "norm.logcdf": lambda: T.norm.logcdf(X, 1., 2.),
        "norm.sf": lambda: T.norm.sf(X, 1., 2.), "norm.logsf": lambda: T.norm.logsf(X, 1., 2.),
        "norm.ppf": lambda: T.norm.ppf(P, 1., 2.), "norm.isf": lambda: T.norm.isf(P, 1., 2.),
        "uniform.logpdf": lambda: T.uniform.logpdf(X, -1., 3.), "uniform.cdf": lambda: T.uniform.cdf(X, -1., 3.),
        "uniform.ppf": lambda: T.uniform.ppf(P, -1., 3.),
        "logistic.logpdf": lambda: T.logistic.logpdf(X, 0.5, 2.), "logistic.cdf": lambda: T.logistic.cdf(X, 0.5, 2.),
        "logistic.sf": lambda: T.logistic.sf(X, 0.5, 2.), "logistic.ppf": lambda: T.logistic.ppf(P, 0.5, 2.),
        "logistic.isf": lambda: T.logistic.isf(P, 0.5, 2.),
        "expon.logpdf": lambda: T.expon.logpdf(X, 0.5, 2.), "expon.cdf": lambda: T.expon.cdf(X, 0.5, 2.),
        "expon.logsf": lambda: T.expon.logsf(X, 0.5, 2.), "expon.ppf": lambda: T.expon.ppf(P, 0.5, 2.),
        "cauchy.logpdf": lambda: T.cauchy.logpdf(X, 0.5, 2.), "cauchy.cdf": lambda: T.cauchy.cdf(X, 0.5, 2.),
        "cauchy.sf": lambda: T.cauchy.sf(X, 0.5, 2.), "cauchy.ppf": lambda: T.cauchy.ppf(P[1:], 0.5, 2.),
        "laplace.logpdf": lambda: T.laplace.logpdf(X, 0.5, 2.), "laplace.cdf": lambda: T.laplace.cdf(X, 0.5, 2.),
        "gamma.logpdf": lambda: T.gamma.logpdf(X, 2.5, -1., 2.), "gamma.pdf": lambda: T.gamma.pdf(X, 2.5),
        "chi2.logpdf": lambda: T.chi2.logpdf(X, 3.), "beta.logpdf": lambda: T.beta.logpdf(P, 2., 3.5),
        "beta.pdf": lambda: T.beta.pdf(P, 0.5, 0.5), "t.logpdf": lambda: T.t.logpdf(X, 3.5, 1., 2.),
        "t.pdf": lambda: T.t.pdf(X, 1.),
        "bernoulli.logpmf": lambda: T.bernoulli.logpmf(np.array([0., 1., 2., 0.5], np.float32), 0.3),
        "bernoulli.cdf": lambda: T.bernoulli.cdf(np.array([-1., 0., 0.5, 1., 2.], np.float32), 0.3),
        "bernoulli.ppf": lambda: T.bernoulli.ppf(P, 0.3),
        "poisson.logpmf": lambda: T.poisson.logpmf(np.array([0., 1., 2., 5., 2.5, -1.], np.float32), 3.3),
        "geom.logpmf": lambda: T.geom.logpmf(np.array([0., 1., 2., 5.], np.float32), 0.3),
        "binom.logpmf": lambda: T.binom.logpmf(np.array([0., 1., 2., 5., 11.], np.float32), 10., 0.3),
        "dirichlet.logpdf": lambda: T.dirichlet.logpdf(np.array([0.2, 0.3, 0.5], np.float32), np.array([1.5, 2., 3.], np.float32)),
        "mvn.logpdf": lambda: T.multivariate_normal.logpdf(np.array([[0.5, -1., 2.], [0., 0., 0.]], np.float32), np.array([0.1, 0.2, 0.3], np.float32), np.array([[2., 0.5, 0.1], [0.5, 1.5, 0.2], [0.1, 0.2, 1.]], np.float32)),
        "mvn.diag": lambda: T.multivariate_normal.logpdf(np.array([0.5, -1.], np.float32), np.zeros(2, np.float32), np.array([2., 3.], np.float32)),
    }


def flat(result) -> list:
    """A result (or a tuple of results) as a flat list of floats, non-finite ones as text."""
    parts = result if isinstance(result, tuple) else (result,)
    values = np.concatenate([np.asarray(part, np.float64).ravel() for part in parts])
    return [float(v) if np.isfinite(v) else str(v) for v in values]
