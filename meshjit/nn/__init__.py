"""meshjit.nn: jax.nn's activations, softmax family, one_hot, standardize, dot-product attention,
and ``meshjit.nn.initializers``."""

from meshjit.compiler.frontend.nn import *  # noqa: F403
from meshjit.compiler.frontend.nn_activations import *  # noqa: F403
from meshjit.compiler.frontend.nn_attention import *  # noqa: F403
from meshjit.compiler.frontend.scipy.special import logsumexp as logsumexp  # b, return_sign, where

from . import initializers as initializers
