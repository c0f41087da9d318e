"""meshjit.scipy.linalg: jax.scipy.linalg's factorizations and solves
(compiler/frontend/scipy/linalg.py)."""

from meshjit.compiler.frontend.scipy.linalg import *  # noqa: F403
from meshjit.compiler.frontend.scipy.special_matrices import *  # noqa: F403, E402
