"""meshjit.scipy.stats: jax.scipy.stats' distributions (compiler/frontend/scipy/stats.py)."""

from meshjit.compiler.frontend.scipy.stats import *  # noqa: F403
from meshjit.compiler.frontend.scipy.stats_summaries import *  # noqa: F403, E402
