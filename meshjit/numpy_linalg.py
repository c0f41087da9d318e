"""meshjit.numpy.linalg: jnp.linalg's functions (compiler/frontend/scipy/numpy_linalg.py)."""

from meshjit.compiler.frontend.scipy.numpy_linalg import *  # noqa: F403
