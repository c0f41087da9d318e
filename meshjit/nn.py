"""meshjit.nn: jax.nn's activations, softmax family and one_hot."""

from meshjit.compiler.frontend.nn import *  # noqa: F403
