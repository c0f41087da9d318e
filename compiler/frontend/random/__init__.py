"""meshjit.random's computations on raw threefry keys (``u32[2]`` arrays), as JAX 0.10 computes
them by default (threefry2x32 with ``jax_threefry_partitionable=True``), so the numbers are JAX's.

``bits`` turns a key into counters and hashes them; ``continuous`` and ``discrete`` build the
samplers on top. The facade (``meshjit/random.py``) checks arguments and wraps typed keys.
"""

from .bits import fold_in as fold_in
from .bits import random_bits as random_bits
from .bits import seed as seed
from .bits import split as split
from .continuous import exponential as exponential
from .continuous import gumbel as gumbel
from .continuous import normal as normal
from .continuous import truncated_normal as truncated_normal
from .continuous import uniform as uniform
from .discrete import bernoulli as bernoulli
from .gamma_family import beta as beta
from .gamma_family import chisquare as chisquare
from .gamma_family import dirichlet as dirichlet
from .gamma_family import f as f
from .gamma_family import gamma as gamma
from .gamma_family import loggamma as loggamma
from .gamma_family import multivariate_normal as multivariate_normal
from .gamma_family import orthogonal as orthogonal
from .counts import binomial as binomial
from .counts import multinomial as multinomial
from .counts import poisson as poisson
from .gamma_family import t as t
from .discrete import categorical as categorical
from .discrete import choice as choice
from .discrete import permutation as permutation
from .discrete import randint as randint
from .transformed import cauchy as cauchy
from .transformed import double_sided_maxwell as double_sided_maxwell
from .transformed import geometric as geometric
from .transformed import laplace as laplace
from .transformed import logistic as logistic
from .transformed import lognormal as lognormal
from .transformed import maxwell as maxwell
from .transformed import pareto as pareto
from .transformed import rademacher as rademacher
from .transformed import rayleigh as rayleigh
from .transformed import triangular as triangular
from .transformed import wald as wald
from .transformed import weibull_min as weibull_min
