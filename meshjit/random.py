"""meshjit.random: JAX's random functions with JAX's numbers, bit for bit (threefry2x32 with
jax_threefry_partitionable=True; docs/random.md). Keys are typed (``key``) or raw ``uint32[2]``
arrays (``PRNGKey``), as in JAX."""

from ._prng_keys import PRNGKeyArray as PRNGKeyArray
from ._random import bernoulli as bernoulli
from ._random_gamma import beta as beta
from ._random_gamma import chisquare as chisquare
from ._random_gamma import dirichlet as dirichlet
from ._random_gamma import f as f
from ._random_gamma import gamma as gamma
from ._random_gamma import loggamma as loggamma
from ._random_gamma import t as t
from ._random import bits as bits
from ._random import categorical as categorical
from ._random_transformed import cauchy as cauchy
from ._random import choice as choice
from ._random_transformed import clone as clone
from ._random_transformed import double_sided_maxwell as double_sided_maxwell
from ._random import exponential as exponential
from ._random import fold_in as fold_in
from ._random_transformed import geometric as geometric
from ._random import gumbel as gumbel
from ._random import key as key
from ._random import key_data as key_data
from ._random_transformed import key_dtype as key_dtype
from ._random import key_impl as key_impl
from ._random_transformed import laplace as laplace
from ._random_transformed import logistic as logistic
from ._random_transformed import lognormal as lognormal
from ._random_transformed import maxwell as maxwell
from ._random import normal as normal
from ._random_transformed import pareto as pareto
from ._random import permutation as permutation
from ._random import PRNGKey as PRNGKey
from ._random_transformed import rademacher as rademacher
from ._random import randint as randint
from ._random_transformed import rayleigh as rayleigh
from ._random import split as split
from ._random_transformed import triangular as triangular
from ._random import truncated_normal as truncated_normal
from ._random import uniform as uniform
from ._random_transformed import wald as wald
from ._random_transformed import weibull_min as weibull_min
from ._random import wrap_key_data as wrap_key_data
