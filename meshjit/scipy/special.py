"""meshjit.scipy.special: jax.scipy.special's functions (compiler/frontend/scipy/special.py)."""

from meshjit.compiler.frontend.scipy.special import *  # noqa: F403
