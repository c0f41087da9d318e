"""The calls behind the random table: each takes the ``jax`` module (JAX itself when the table
is made with ``make_random_table.py`` in a JAX environment, meshjit in the tests) and returns an
array, or the key data of typed keys. Every case must equal JAX bit for bit, the samplers built
on erf_inv, log, log1p and erf included (meshjit follows XLA's CPU approximations there)."""

from __future__ import annotations

import numpy as np


# log([0.1, 0.2, 0.3, 0.4]) as JAX computes it in float32 (glibc's logf), given as data so the
# case tests categorical, not meshjit's general log (which is not promised bit for bit)
LOG_PROBABILITIES = np.array([-2.3025851249694824, -1.6094379425048828, -1.2039728164672852,
                              -0.9162907004356384], np.float32)


def _key(jax, seed=0):
    return jax.random.key(seed)


CASES = {
    # keys
    "key_0": lambda jax: jax.random.key_data(jax.random.key(0)),
    "key_42": lambda jax: jax.random.key_data(jax.random.key(42)),
    "key_minus_1": lambda jax: jax.random.key_data(jax.random.key(-1)),
    "key_2_40": lambda jax: jax.random.key_data(jax.random.key(2**40 + 5)),
    "key_uint32": lambda jax: jax.random.key_data(jax.random.key(np.uint32(4000000000))),
    "prngkey_7": lambda jax: jax.random.PRNGKey(7),
    "split_default": lambda jax: jax.random.key_data(jax.random.split(_key(jax))),
    "split_5": lambda jax: jax.random.key_data(jax.random.split(_key(jax, 7), 5)),
    "split_shape": lambda jax: jax.random.key_data(jax.random.split(_key(jax, 1), (2, 3))),
    "split_raw": lambda jax: jax.random.split(jax.random.PRNGKey(3), 4),
    "split_of_split": lambda jax: jax.random.key_data(jax.random.split(jax.random.split(_key(jax, 9))[1], 3)),
    "fold_in_1": lambda jax: jax.random.key_data(jax.random.fold_in(_key(jax), 1)),
    "fold_in_big": lambda jax: jax.random.key_data(jax.random.fold_in(_key(jax, 42), 123456)),
    "fold_in_raw": lambda jax: jax.random.fold_in(jax.random.PRNGKey(5), 2**31 + 7),
    # bits
    "bits_7": lambda jax: jax.random.bits(_key(jax), (7,)),
    "bits_3x4": lambda jax: jax.random.bits(_key(jax, 3), (3, 4)),
    "bits_scalar": lambda jax: jax.random.bits(_key(jax, 3)),
    "bits_2x3x5": lambda jax: jax.random.bits(_key(jax, 11), (2, 3, 5)),
    # uniform
    "uniform_1000": lambda jax: jax.random.uniform(_key(jax), (1000,)),
    "uniform_scalar": lambda jax: jax.random.uniform(_key(jax, 2)),
    "uniform_bounds": lambda jax: jax.random.uniform(_key(jax, 1), (500,), minval=-3.0, maxval=5.5),
    "uniform_odd_bounds": lambda jax: jax.random.uniform(_key(jax, 4), (500,), minval=0.1, maxval=0.7),
    "uniform_array_bounds": lambda jax: jax.random.uniform(
        _key(jax, 5), (3, 4), minval=jax.numpy.array([[0.0], [1.0], [-2.0]]), maxval=7.25),
    "uniform_raw_key": lambda jax: jax.random.uniform(jax.random.PRNGKey(0), (6,)),
    "bernoulli_03": lambda jax: jax.random.bernoulli(_key(jax), 0.3, (1000,)),
    "bernoulli_array_p": lambda jax: jax.random.bernoulli(_key(jax, 2), jax.numpy.array([0.1, 0.5, 0.9, 0.99])),
    "bernoulli_high": lambda jax: jax.random.bernoulli(_key(jax, 3), 0.25, (200,), mode="high"),
    # randint
    "randint_0_10": lambda jax: jax.random.randint(_key(jax), (1000,), 0, 10),
    "randint_neg": lambda jax: jax.random.randint(_key(jax, 1), (300,), -5, 5),
    "randint_wide": lambda jax: jax.random.randint(_key(jax, 2), (300,), -2**31, 2**31 - 1),
    "randint_empty_span": lambda jax: jax.random.randint(_key(jax, 3), (5,), 4, 2),
    "randint_array_bounds": lambda jax: jax.random.randint(
        _key(jax, 4), (2, 3), jax.numpy.array([0, 10, 100]), jax.numpy.array([[5], [1000]])),
    "randint_uint32": lambda jax: jax.random.randint(_key(jax, 5), (50,), 0, np.uint32(4000000000), dtype=np.uint32),
    # categorical, permutation, choice
    "categorical_1d": lambda jax: jax.random.categorical(_key(jax), LOG_PROBABILITIES, shape=(500,)),
    "categorical_2d": lambda jax: jax.random.categorical(
        _key(jax, 1), jax.numpy.array([[0.0, 1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 2.0, 1.0, 0.0], [1.0] * 5])),
    "categorical_axis0": lambda jax: jax.random.categorical(
        _key(jax, 2), jax.numpy.array([[0.0, 1.0], [2.0, 0.5], [1.0, 1.0]]), axis=0, shape=(4, 2)),
    "categorical_no_replace": lambda jax: jax.random.categorical(
        _key(jax, 3), jax.numpy.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0]), shape=(4,), replace=False),
    "permutation_10": lambda jax: jax.random.permutation(_key(jax), 10),
    "permutation_2000": lambda jax: jax.random.permutation(_key(jax, 1), 2000),
    "permutation_rows": lambda jax: jax.random.permutation(_key(jax, 2), jax.numpy.arange(12).reshape(4, 3)),
    "permutation_axis1": lambda jax: jax.random.permutation(_key(jax, 3), jax.numpy.arange(12).reshape(3, 4), axis=1),
    "permutation_independent": lambda jax: jax.random.permutation(
        _key(jax, 4), jax.numpy.arange(12).reshape(3, 4), axis=1, independent=True),
    "choice_replace": lambda jax: jax.random.choice(_key(jax), 10, (20,)),
    "choice_no_replace": lambda jax: jax.random.choice(_key(jax, 1), 10, (6,), replace=False),
    "choice_p": lambda jax: jax.random.choice(
        _key(jax, 2), 4, (30,), p=jax.numpy.array([0.125, 0.25, 0.5, 0.125])),
    "choice_p_no_replace": lambda jax: jax.random.choice(
        _key(jax, 3), 5, (3,), replace=False, p=jax.numpy.array([0.1, 0.2, 0.3, 0.25, 0.15])),
    "choice_array_axis1": lambda jax: jax.random.choice(
        _key(jax, 4), jax.numpy.arange(12.0).reshape(3, 4), (2,), axis=1),
    # continuous, by erf_inv / log / erf
    "normal_2000": lambda jax: jax.random.normal(_key(jax), (2000,)),
    "normal_3x4": lambda jax: jax.random.normal(_key(jax, 8), (3, 4)),
    "truncated_normal": lambda jax: jax.random.truncated_normal(_key(jax), -2.0, 2.0, (1000,)),
    "truncated_normal_one_sided": lambda jax: jax.random.truncated_normal(_key(jax, 1), 0.0, 1.5, (300,)),
    "truncated_normal_array": lambda jax: jax.random.truncated_normal(
        _key(jax, 2), jax.numpy.array([-1.0, 0.0, 1.0]), 3.0),
    "gumbel_1000": lambda jax: jax.random.gumbel(_key(jax), (1000,)),
    "gumbel_high": lambda jax: jax.random.gumbel(_key(jax, 1), (300,), mode="high"),
    "exponential_1000": lambda jax: jax.random.exponential(_key(jax), (1000,)),
    # transformations of uniform, normal and exponential draws
    "rademacher_200": lambda jax: jax.random.rademacher(_key(jax), (200,)),
    "rademacher_float": lambda jax: jax.random.rademacher(_key(jax, 1), (3, 5), dtype=np.float32),
    "laplace_1000": lambda jax: jax.random.laplace(_key(jax), (1000,)),
    "logistic_1000": lambda jax: jax.random.logistic(_key(jax), (1000,)),
    "cauchy_1000": lambda jax: jax.random.cauchy(_key(jax), (1000,)),
    "lognormal_1000": lambda jax: jax.random.lognormal(_key(jax), shape=(1000,)),
    "lognormal_sigma": lambda jax: jax.random.lognormal(
        _key(jax, 1), jax.numpy.array([0.25, 1.0, 3.0]), (4, 3)),
    "lognormal_scalar_sigma": lambda jax: jax.random.lognormal(_key(jax, 2), 0.7, (500,)),
    "lognormal_exp_edges": lambda jax: jax.random.lognormal(_key(jax, 3), 40.0, (500,)),  # 0 and inf
    "rayleigh_1000": lambda jax: jax.random.rayleigh(_key(jax), 2.0, (1000,)),
    "rayleigh_array": lambda jax: jax.random.rayleigh(_key(jax, 1), jax.numpy.array([0.5, 1.0, 4.0])),
    "maxwell_1000": lambda jax: jax.random.maxwell(_key(jax), (1000,)),
    "maxwell_2000": lambda jax: jax.random.maxwell(_key(jax, 1), (2000,)),
    "maxwell_vmap_keys": lambda jax: jax.vmap(lambda k: jax.random.maxwell(k, (4,)))(
        jax.random.split(_key(jax, 5), 400)),  # one reduction of 4800 elements: YNNPACK's order
    "maxwell_vmap_few_keys": lambda jax: jax.vmap(lambda k: jax.random.maxwell(k, (4,)))(
        jax.random.split(_key(jax, 5), 30)),
    "double_sided_maxwell_500": lambda jax: jax.random.double_sided_maxwell(_key(jax), 1.0, 2.0, (500,)),
    "double_sided_maxwell_array": lambda jax: jax.random.double_sided_maxwell(
        _key(jax, 1), jax.numpy.array([0.0, -3.0]), 1.5),
    "weibull_min_1000": lambda jax: jax.random.weibull_min(_key(jax), 2.0, 1.5, (1000,)),
    "weibull_min_array": lambda jax: jax.random.weibull_min(
        _key(jax, 1), jax.numpy.array([1.0, 0.5, 3.0]), jax.numpy.array([0.7, 1.0, 5.0]), (4, 3)),
    "pareto_1000": lambda jax: jax.random.pareto(_key(jax), 3.0, (1000,)),
    "pareto_array": lambda jax: jax.random.pareto(_key(jax, 1), jax.numpy.array([0.5, 1.0, 7.0])),
    "pareto_broadcast": lambda jax: jax.random.pareto(
        _key(jax, 2), np.linspace(0.25, 3.0, 20, dtype=np.float32), (30, 20)),
    "geometric_1000": lambda jax: jax.random.geometric(_key(jax), 0.3, (1000,)),
    "geometric_array": lambda jax: jax.random.geometric(_key(jax, 1), jax.numpy.array([0.01, 0.5, 0.9]), (4, 3)),
    "triangular_1000": lambda jax: jax.random.triangular(_key(jax), -1.0, 0.5, 3.0, (1000,)),
    "triangular_array": lambda jax: jax.random.triangular(
        _key(jax, 1), jax.numpy.array([0.0, 1.0, -2.0]), 1.5, jax.numpy.array([[2.0], [4.0]])),
    "triangular_broadcast": lambda jax: jax.random.triangular(
        _key(jax, 2), -1.0, np.linspace(-1.0, 2.0, 20, dtype=np.float32), 2.0, (30, 20)),
    "wald_1000": lambda jax: jax.random.wald(_key(jax), 2.0, (1000,)),
    "wald_array": lambda jax: jax.random.wald(_key(jax, 1), jax.numpy.array([0.1, 1.0, 30.0]), (4, 3)),
    # derivatives with respect to the parameters: JAX's rules for exp and log (pareto's,
    # weibull_min's and truncated_normal's tangents are within a few ulps: XLA simplifies JAX's
    # derivative graph of a division, a pow and erf_inv, which meshjit's autodiff builds its own way)
    "jvp_lognormal_sigma": lambda jax: jax.jvp(
        lambda s: jax.random.lognormal(_key(jax), s, (200,)), (np.float32(0.7),), (np.float32(1.0),))[1],
    "jvp_rayleigh_scale": lambda jax: jax.jvp(
        lambda s: jax.random.rayleigh(_key(jax), s, (200,)), (np.float32(1.5),), (np.float32(1.0),))[1],
    "clone": lambda jax: jax.random.key_data(jax.random.clone(_key(jax, 3))),
    "clone_raw": lambda jax: jax.random.clone(jax.random.PRNGKey(3)),
}

# Computed in 64-bit with jax_enable_x64 on.
X64_CASES = {
    "x64_key_big": lambda jax: jax.random.key_data(jax.random.key(2**40 + 5)),
    "x64_key_minus_1": lambda jax: jax.random.key_data(jax.random.key(-1)),
    "x64_bits": lambda jax: jax.random.bits(_key(jax), (9,)),
    "x64_uniform": lambda jax: jax.random.uniform(_key(jax), (500,)),
    "x64_uniform_bounds": lambda jax: jax.random.uniform(_key(jax, 1), (500,), minval=0.1, maxval=0.7),
    "x64_randint": lambda jax: jax.random.randint(_key(jax, 2), (100,), -10, 2**40),
    "x64_normal": lambda jax: jax.random.normal(_key(jax, 3), (500,)),
    "x64_rademacher": lambda jax: jax.random.rademacher(_key(jax), (50,)),
    "x64_rademacher_int32": lambda jax: jax.random.rademacher(_key(jax, 1), (50,), dtype=np.int32),
    "x64_lognormal": lambda jax: jax.random.lognormal(_key(jax), shape=(500,)),
    "x64_lognormal_sigma": lambda jax: jax.random.lognormal(
        _key(jax, 1), np.array([0.5, 2.0, 300.0]), (200, 3)),  # 0 and inf too
    "x64_rayleigh": lambda jax: jax.random.rayleigh(_key(jax), 2.0, (500,)),
    "x64_maxwell": lambda jax: jax.random.maxwell(_key(jax), (500,)),
    "x64_maxwell_2000": lambda jax: jax.random.maxwell(_key(jax, 1), (2000,)),
    "x64_double_sided_maxwell": lambda jax: jax.random.double_sided_maxwell(_key(jax), 1.0, 2.0, (500,)),
    "x64_geometric": lambda jax: jax.random.geometric(_key(jax), 0.3, (500,)),
    "x64_triangular": lambda jax: jax.random.triangular(_key(jax), -1.0, 0.5, 3.0, (500,)),
    "x64_wald": lambda jax: jax.random.wald(_key(jax), 2.0, (500,)),
    # glibc's float64 log (ir/libm_log.py) behind these
    "x64_exponential": lambda jax: jax.random.exponential(_key(jax, 4), (500,)),
    "x64_laplace": lambda jax: jax.random.laplace(_key(jax), (500,)),
    "x64_logistic": lambda jax: jax.random.logistic(_key(jax), (500,)),
    "x64_pareto": lambda jax: jax.random.pareto(_key(jax), 3.0, (500,)),
    "x64_weibull_min": lambda jax: jax.random.weibull_min(_key(jax), 2.0, 1.5, (500,)),
}

# Computed in 64-bit with x64 on, and equal to JAX only within the ulps given: XLA calls glibc's
# float64 tan (IBM's table-driven one), which meshjit does not reproduce; its own (fdlibm's
# kernel, libm_tan.py) differs in about 4% of values by one ulp.
X64_CLOSE_CASES = {
    "x64_cauchy": (1, lambda jax: jax.random.cauchy(_key(jax), (500,))),
}
