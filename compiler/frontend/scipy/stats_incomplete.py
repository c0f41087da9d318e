"""The distribution functions of jax.scipy.stats that need the incomplete gamma or beta
function (gamma, chi2, beta and poisson: cdf, logcdf, sf, logsf), as JAX writes them: the
standardized argument clamped into the support, then gammainc / gammaincc / betainc."""

from __future__ import annotations

import math

from .. import numpy_api as jnp
from .special import floats
from .special_incomplete import betainc, gammainc, gammaincc


def _logged(function):
    def log_function(*args, **kwargs):
        return jnp.log(function(*args, **kwargs))

    return log_function


def gamma_cdf(x, a, loc=0, scale=1):
    x, a, loc, scale = floats("gamma.cdf", x, a, loc, scale)
    return gammainc(a, jnp.clip((x - loc) / scale, 0.0, math.inf))


def gamma_sf(x, a, loc=0, scale=1):
    x, a, loc, scale = floats("gamma.sf", x, a, loc, scale)
    y = (x - loc) / scale
    return jnp.where(y < 0, 1.0, gammaincc(a, y))


def chi2_cdf(x, df, loc=0, scale=1):
    x, df, loc, scale = floats("chi2.cdf", x, df, loc, scale)
    return gammainc(df / 2.0, jnp.clip((x - loc) / (scale * 2.0), 0.0, math.inf))


def chi2_sf(x, df, loc=0, scale=1):
    x, df, loc, scale = floats("chi2.sf", x, df, loc, scale)
    return gammaincc(df / 2.0, jnp.clip((x - loc) / (scale * 2.0), 0.0, math.inf))


def beta_cdf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = floats("beta.cdf", x, a, b, loc, scale)
    return betainc(a, b, jnp.clip((x - loc) / scale, 0.0, 1.0))


def beta_sf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = floats("beta.sf", x, a, b, loc, scale)
    return betainc(b, a, jnp.clip(1.0 - (x - loc) / scale, 0.0, 1.0))


def poisson_cdf(k, mu, loc=0):
    k, mu, loc = floats("poisson.cdf", k, mu, loc)
    x = k - loc
    return jnp.where(x < 0, 0.0, gammaincc(jnp.floor(1.0 + x), mu))


FUNCTIONS = {
    "gamma": {"cdf": gamma_cdf, "logcdf": _logged(gamma_cdf), "sf": gamma_sf, "logsf": _logged(gamma_sf)},
    "chi2": {"cdf": chi2_cdf, "logcdf": _logged(chi2_cdf), "sf": chi2_sf, "logsf": _logged(chi2_sf)},
    "beta": {"cdf": beta_cdf, "logcdf": _logged(beta_cdf), "sf": beta_sf, "logsf": _logged(beta_sf)},
    "poisson": {"cdf": poisson_cdf},
}
