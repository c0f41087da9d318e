"""Jitted float32 programs whose products and sums XLA's CPU code contracts into fused
multiply-adds (or keeps apart), shared by ``test_xla_arithmetic.py`` and
``data/make_xla_arithmetic.py`` (which runs them under JAX). Each function takes ``(jax, jnp)``
and returns the function of ``(a, b, c)`` to jit; a tuple's first result is compared."""


def _normalized(jax, x):
    # NOTE: a float sum of squares differs from XLA's (its order, and an fma XLA may fuse into
    # the sum), so the scale is a plain rsqrt of the values themselves
    return (x - 1.0) * jax.lax.rsqrt(x)


CONTRACTED = {
    "a_times_b_plus_c": lambda jax, jnp: lambda a, b, c: a * b + c,
    "c_minus_a_times_b": lambda jax, jnp: lambda a, b, c: c - a * b,
    "a_times_b_minus_c": lambda jax, jnp: lambda a, b, c: a * b - c,
    "negated_product_plus_c": lambda jax, jnp: lambda a, b, c: -(a * b) + c,
    "square_plus_c": lambda jax, jnp: lambda a, b, c: jnp.square(a) + c,
    "cube_plus_c": lambda jax, jnp: lambda a, b, c: a ** 3 + c,
    "over_seven_plus_c": lambda jax, jnp: lambda a, b, c: a / 7.0 + c,
    "sgd": lambda jax, jnp: lambda p, g, c: p - 0.01 * g,
    "product_in_two_outputs": lambda jax, jnp: lambda a, b, c: (a * b + c) + (a * b * 2.0),
    "product_shared_in_one_loop": lambda jax, jnp: lambda a, b, c: (a * b + c) * (a * b),
    "product_added_and_subtracted": lambda jax, jnp: lambda a, b, c: (a * b + c) - (a * b),
    "product_returned_too": lambda jax, jnp: lambda a, b, c: (a * b + c, a * b),
    "product_also_summed": lambda jax, jnp: lambda a, b, c: (a * b + c, jnp.sum(a * b)),
    "normalized_affine": lambda jax, jnp: lambda x, g, b: _normalized(jax, x) * g + b,
}
