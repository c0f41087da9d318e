"""meshjit.numpy.fft: jnp.fft's transforms, frequencies and shifts (compiler/frontend/numpy_api/fft.py),
also the Python Array API standard's fft extension."""

from meshjit.compiler.frontend.numpy_api.fft import *  # noqa: F403
