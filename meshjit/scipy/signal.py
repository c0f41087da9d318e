"""meshjit.scipy.signal: jax.scipy.signal's convolutions and detrend
(compiler/frontend/scipy/signal.py)."""

from meshjit.compiler.frontend.scipy.signal import *  # noqa: F403
