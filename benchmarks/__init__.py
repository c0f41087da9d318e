"""meshjit's benchmarks: ``python -m benchmarks`` prints a table against numpy (and JAX)."""
