"""``jax.example_libraries``: the small optimizer (``optimizers``) and neural-network (``stax``)
libraries JAX ships as examples, so programs written against them run on meshjit unchanged."""
