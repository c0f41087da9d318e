"""jax.scipy.stats' distributions (log-densities, densities and distribution functions; those
needing an incomplete gamma or beta function are in stats_incomplete.py), written with
meshjit.numpy and scipy.special, as JAX writes them: outside the support a log-density is -inf, a distribution function 0 or 1.

Each distribution is a namespace (``norm.logpdf``), as JAX's modules are used.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

from .. import numpy_api as jnp
from .special import betaln, expit, floats, gammaln, log_ndtr, logit, ndtr, ndtri, xlog1py, xlogy

# NOTE: the public names, re-exported by the facade (``meshjit.scipy.stats``).
__all__ = (
    "bernoulli", "beta", "binom", "cauchy", "chi2", "dirichlet", "expon", "gamma", "geom", "laplace",
    "logistic", "multivariate_normal", "norm", "poisson", "t", "uniform",
)

_HALF_LOG_TWO_PI = 0.5 * math.log(2 * math.pi)


def _standardized(function: str, x, loc, scale):
    x, loc, scale = floats(function, x, loc, scale)
    return (x - loc) / scale, x, loc, scale


def _exp_of(log_function):
    def density(*args, **kwargs):
        return jnp.exp(log_function(*args, **kwargs))

    return density


# --- norm ------------------------------------------------------------------------------------


def _norm_logpdf(x, loc=0, scale=1):
    z, _, _, scale = _standardized("norm.logpdf", x, loc, scale)
    return -0.5 * z * z - jnp.log(scale) - _HALF_LOG_TWO_PI


def _norm_cdf(x, loc=0, scale=1):
    return ndtr(_standardized("norm.cdf", x, loc, scale)[0])


def _norm_logcdf(x, loc=0, scale=1):
    return log_ndtr(_standardized("norm.logcdf", x, loc, scale)[0])


def _norm_ppf(q, loc=0, scale=1):
    q, loc, scale = floats("norm.ppf", q, loc, scale)
    return ndtri(q) * scale + loc


norm = SimpleNamespace(
    logpdf=_norm_logpdf, pdf=_exp_of(_norm_logpdf), cdf=_norm_cdf, logcdf=_norm_logcdf,
    sf=lambda x, loc=0, scale=1: ndtr(-_standardized("norm.sf", x, loc, scale)[0]),
    logsf=lambda x, loc=0, scale=1: log_ndtr(-_standardized("norm.logsf", x, loc, scale)[0]),
    ppf=_norm_ppf, isf=lambda q, loc=0, scale=1: _norm_ppf(1 - jnp.asarray(q), loc, scale),
)

# --- uniform, logistic, expon, cauchy, laplace ------------------------------------------------


def _uniform_logpdf(x, loc=0, scale=1):
    x, loc, scale = floats("uniform.logpdf", x, loc, scale)
    outside = (x < loc) | (x > loc + scale)
    return jnp.where(outside, -math.inf, -jnp.log(scale))


def _uniform_ppf(q, loc=0, scale=1):
    q, loc, scale = floats("uniform.ppf", q, loc, scale)
    return jnp.where((q >= 0) & (q <= 1), loc + q * scale, math.nan)


uniform = SimpleNamespace(
    logpdf=_uniform_logpdf, pdf=_exp_of(_uniform_logpdf), ppf=_uniform_ppf,
    cdf=lambda x, loc=0, scale=1: jnp.clip(_standardized("uniform.cdf", x, loc, scale)[0], 0.0, 1.0),
)


def _logistic_logpdf(x, loc=0, scale=1):
    z, _, _, scale = _standardized("logistic.logpdf", x, loc, scale)
    return -2.0 * jnp.logaddexp(z / 2, -z / 2) - jnp.log(scale)


def _logistic_ppf(q, loc=0, scale=1):
    q, loc, scale = floats("logistic.ppf", q, loc, scale)
    return logit(q) * scale + loc


def _logistic_isf(q, loc=0, scale=1):
    q, loc, scale = floats("logistic.isf", q, loc, scale)
    return -logit(q) * scale + loc


logistic = SimpleNamespace(
    logpdf=_logistic_logpdf, pdf=_exp_of(_logistic_logpdf), ppf=_logistic_ppf,
    cdf=lambda x, loc=0, scale=1: expit(_standardized("logistic.cdf", x, loc, scale)[0]),
    sf=lambda x, loc=0, scale=1: expit(-_standardized("logistic.sf", x, loc, scale)[0]),
    isf=lambda q, loc=0, scale=1: _logistic_isf(q, loc, scale),
)


def _expon_logpdf(x, loc=0, scale=1):
    z, _, _, scale = _standardized("expon.logpdf", x, loc, scale)
    return jnp.where(z < 0, -math.inf, -z - jnp.log(scale))


def _expon_logsf(x, loc=0, scale=1):
    z = _standardized("expon.logsf", x, loc, scale)[0]
    return jnp.where(z < 0, 0.0, -z)


def _expon_logcdf(x, loc=0, scale=1):
    z = _standardized("expon.logcdf", x, loc, scale)[0]
    return jnp.where(z < 0, -math.inf, jnp.log(-jnp.expm1(-z)))


expon = SimpleNamespace(
    logpdf=_expon_logpdf, pdf=_exp_of(_expon_logpdf), logcdf=_expon_logcdf, cdf=_exp_of(_expon_logcdf),
    logsf=_expon_logsf, sf=_exp_of(_expon_logsf),
    ppf=lambda q, loc=0, scale=1: _expon_ppf(q, loc, scale),
)


def _expon_ppf(q, loc, scale):
    q, loc, scale = floats("expon.ppf", q, loc, scale)
    return jnp.where((q >= 0) & (q <= 1), -jnp.log1p(-q) * scale + loc, math.nan)


def _cauchy_logpdf(x, loc=0, scale=1):
    z, _, _, scale = _standardized("cauchy.logpdf", x, loc, scale)
    return -math.log(math.pi) - jnp.log(scale) - jnp.log1p(z * z)


def _cauchy_cdf(x, loc=0, scale=1):
    return 0.5 + jnp.arctan(_standardized("cauchy.cdf", x, loc, scale)[0]) / math.pi


def _cauchy_ppf(q, loc=0, scale=1):
    q, loc, scale = floats("cauchy.ppf", q, loc, scale)
    return loc + scale * jnp.tan(math.pi * (q - 0.5))


cauchy = SimpleNamespace(
    logpdf=_cauchy_logpdf, pdf=_exp_of(_cauchy_logpdf), cdf=_cauchy_cdf,
    logcdf=lambda x, loc=0, scale=1: jnp.log(_cauchy_cdf(x, loc, scale)),
    sf=lambda x, loc=0, scale=1: _cauchy_cdf(-jnp.asarray(x), -jnp.asarray(loc), scale),
    logsf=lambda x, loc=0, scale=1: jnp.log(_cauchy_cdf(-jnp.asarray(x), -jnp.asarray(loc), scale)),
    ppf=_cauchy_ppf, isf=lambda q, loc=0, scale=1: _cauchy_ppf(1 - jnp.asarray(q), loc, scale),
)


def _laplace_logpdf(x, loc=0, scale=1):
    z, _, _, scale = _standardized("laplace.logpdf", x, loc, scale)
    return -math.log(2.0) - jnp.log(scale) - jnp.abs(z)


def _laplace_cdf(x, loc=0, scale=1):
    z = _standardized("laplace.cdf", x, loc, scale)[0]
    return jnp.where(z < 0, 0.5 * jnp.exp(z), 1.0 - 0.5 * jnp.exp(-z))


laplace = SimpleNamespace(logpdf=_laplace_logpdf, pdf=_exp_of(_laplace_logpdf), cdf=_laplace_cdf)

# --- gamma, chi2, beta, t ---------------------------------------------------------------------


def _gamma_logpdf(x, a, loc=0, scale=1):
    x, a, loc, scale = floats("gamma.logpdf", x, a, loc, scale)
    y = (x - loc) / scale
    log_probs = xlogy(a - 1.0, y) - y - gammaln(a) - jnp.log(scale)
    return jnp.where(x < loc, -math.inf, log_probs)


gamma = SimpleNamespace(logpdf=_gamma_logpdf, pdf=_exp_of(_gamma_logpdf))


def _chi2_logpdf(x, df, loc=0, scale=1):
    x, df, loc, scale = floats("chi2.logpdf", x, df, loc, scale)
    y = (x - loc) / scale
    half = df / 2.0
    log_probs = xlogy(half - 1.0, y) - y / 2.0 - gammaln(half) - half * math.log(2.0) - jnp.log(scale)
    return jnp.where(y < 0, -math.inf, log_probs)


chi2 = SimpleNamespace(logpdf=_chi2_logpdf, pdf=_exp_of(_chi2_logpdf))


def _beta_logpdf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = floats("beta.logpdf", x, a, b, loc, scale)
    y = (x - loc) / scale
    log_probs = -betaln(a, b) + xlogy(a - 1.0, y) + xlog1py(b - 1.0, -y) - jnp.log(scale)
    return jnp.where((x > loc + scale) | (x < loc), -math.inf, log_probs)


beta = SimpleNamespace(logpdf=_beta_logpdf, pdf=_exp_of(_beta_logpdf))


def _t_logpdf(x, df, loc=0, scale=1):
    x, df, loc, scale = floats("t.logpdf", x, df, loc, scale)
    z = (x - loc) / scale
    normalizer = jnp.log(scale) + 0.5 * jnp.log(df * math.pi) + gammaln(df / 2.0) - gammaln((df + 1.0) / 2.0)
    return -(df + 1.0) / 2.0 * jnp.log1p(z * z / df) - normalizer


t = SimpleNamespace(logpdf=_t_logpdf, pdf=_exp_of(_t_logpdf))

# --- discrete distributions -------------------------------------------------------------------


def _bernoulli_logpmf(k, p, loc=0):
    k, p, loc = floats("bernoulli.logpmf", k, p, loc)
    x = k - loc
    log_probs = xlogy(x, p) + xlog1py(1.0 - x, -p)
    return jnp.where((x < 0) | (x > 1), -math.inf, log_probs)


def _bernoulli_cdf(k, p):
    k, p = floats("bernoulli.cdf", k, p)
    value = jnp.where(k < 0, 0.0, jnp.where(k < 1, 1.0 - p, 1.0))
    return jnp.where((p < 0) | (p > 1) | jnp.isnan(k), math.nan, value)


def _bernoulli_ppf(q, p):
    q, p = floats("bernoulli.ppf", q, p)
    value = jnp.where(q > 1.0 - p, 1.0, 0.0)
    return jnp.where((q < 0) | (q > 1) | (p < 0) | (p > 1), math.nan, value)


bernoulli = SimpleNamespace(logpmf=_bernoulli_logpmf, pmf=_exp_of(_bernoulli_logpmf), cdf=_bernoulli_cdf,
                            ppf=_bernoulli_ppf)


def _poisson_logpmf(k, mu, loc=0):
    k, mu, loc = floats("poisson.logpmf", k, mu, loc)
    x = k - loc
    log_probs = xlogy(x, mu) - gammaln(x + 1.0) - mu
    return jnp.where((x < 0) | (x != jnp.round(x)), -math.inf, log_probs)


poisson = SimpleNamespace(logpmf=_poisson_logpmf, pmf=_exp_of(_poisson_logpmf))


def _geom_logpmf(k, p, loc=0):
    k, p, loc = floats("geom.logpmf", k, p, loc)
    x = k - loc
    return jnp.where(x < 1, -math.inf, xlog1py(x - 1.0, -p) + jnp.log(p))


geom = SimpleNamespace(logpmf=_geom_logpmf, pmf=_exp_of(_geom_logpmf))


def _binom_logpmf(k, n, p, loc=0):
    k, n, p, loc = floats("binom.logpmf", k, n, p, loc)
    y = k - loc
    combinations = gammaln(n + 1.0) - gammaln(y + 1.0) - gammaln(n - y + 1.0)
    log_probs = combinations + xlogy(y, p) + xlog1py(n - y, -p)
    return jnp.where((y < 0) | (y > n), -math.inf, log_probs)


binom = SimpleNamespace(logpmf=_binom_logpmf, pmf=_exp_of(_binom_logpmf))

# --- multivariate ----------------------------------------------------------------------------


def _dirichlet_logpdf(x, alpha):
    x, alpha = floats("dirichlet.logpdf", x, alpha)
    if x.shape[0] != alpha.shape[0]:
        raise ValueError(f"dirichlet.logpdf: `x` must have either the same number of entries as `alpha` or one "
                         f"entry fewer; got x.shape={x.shape}, alpha.shape={alpha.shape}")
    normalizer = jnp.sum(gammaln(alpha)) - gammaln(jnp.sum(alpha))
    alpha = jnp.reshape(alpha, alpha.shape + (1,) * (x.ndim - 1))
    log_probs = jnp.sum(xlogy(alpha - 1.0, x), axis=0) - normalizer
    inside = jnp.all(x >= 0, axis=0) & (jnp.abs(jnp.sum(x, axis=0) - 1.0) < 1e-6)
    return jnp.where(inside, log_probs, -math.inf)


dirichlet = SimpleNamespace(logpdf=_dirichlet_logpdf, pdf=_exp_of(_dirichlet_logpdf))


def _multivariate_normal_logpdf(x, mean, cov, allow_singular=None):
    """The Gaussian log-density: a scalar ``mean`` is one-dimensional, a scalar ``cov`` a
    multiple of the identity, else ``cov`` is a (batch of) matrices, used through its
    Cholesky factor."""
    from .linalg_solvers import cholesky_lower, solve_lower_triangular

    if allow_singular is not None:
        raise NotImplementedError("allow_singular argument of multivariate_normal.logpdf")
    x, mean, cov = floats("multivariate_normal.logpdf", x, mean, cov)
    deviation = x - mean
    if mean.ndim == 0:
        return -0.5 * deviation * deviation / cov - 0.5 * (math.log(2 * math.pi) + jnp.log(cov))
    size = mean.shape[-1]
    if cov.ndim == 0:
        return (-0.5 * jnp.sum(deviation * deviation, axis=-1) / cov
                - size / 2 * (math.log(2 * math.pi) + jnp.log(cov)))
    if cov.ndim < 2 or cov.shape[-2:] != (size, size):
        raise ValueError("multivariate_normal.logpdf got incompatible shapes")
    factor = cholesky_lower(cov)
    whitened = solve_lower_triangular(factor, deviation)
    log_diagonal = jnp.log(jnp.sum(factor * jnp.eye(size, dtype=factor.dtype), axis=-1))
    return (-0.5 * jnp.sum(whitened * whitened, axis=-1) - size * _HALF_LOG_TWO_PI
            - jnp.sum(log_diagonal, axis=-1))


multivariate_normal = SimpleNamespace(logpdf=_multivariate_normal_logpdf,
                                      pdf=_exp_of(_multivariate_normal_logpdf))


# NOTE: the distribution functions needing incomplete gamma or beta functions join their
# namespaces from their own file
from .stats_incomplete import FUNCTIONS as _INCOMPLETE  # noqa: E402

for _name, _functions in _INCOMPLETE.items():
    for _function_name, _function in _functions.items():
        setattr(globals()[_name], _function_name, _function)
from .stats_summaries import FUNCTIONS as _SUMMARIES  # noqa: E402

for _name, _functions in _SUMMARIES.items():
    for _function_name, _function in _functions.items():
        setattr(globals()[_name], _function_name, _function)
