"""The functions whose ``make_jaxpr`` text meshjit prints as JAX 0.10.2 prints it: ``cases(jax)``
gives (name, function, arguments) with ``jax`` either JAX or meshjit. ``generate.py`` runs them
under JAX once into ``expected.json``; test_jaxpr_text compares meshjit's text with it."""

import numpy as np


def cases(jax):
    jnp, lax = jax.numpy, jax.lax
    f32 = np.ones(3, np.float32)
    matrix = np.ones((3, 3), np.float32)
    closed = np.arange(3.0, dtype=np.float32)

    def log2(x):
        return jnp.log(x) / jnp.log(2.0)

    def log1pexp(x):
        return jnp.log(1.0 + jnp.exp(x))

    def sigmoid(x):
        return 0.5 * (jnp.tanh(x / 2) + 1)

    return [
        ("sin_mul", lambda x: jnp.sin(x) * 2.0, (f32,)),
        ("unused", lambda x: (jnp.sin(x), x)[1], (1.0,)),
        ("closed_over", lambda x: x + closed, (f32,)),
        ("arange", lambda x: x + jnp.arange(3.0), (f32,)),
        ("broadcast_to", lambda x: jnp.broadcast_to(x, (2, 3)), (f32,)),
        ("dot", lambda x: jnp.dot(x, x), (matrix,)),
        ("sum_axis", lambda x: x.sum(0), (matrix,)),
        ("max_all", lambda x: jnp.max(x), (matrix,)),
        ("cube", lambda x: x ** 3, (1.0,)),
        ("reshape", lambda x: x.reshape(3, 1), (f32,)),
        ("astype", lambda x: x.astype(jnp.int32), (f32,)),
        ("transpose", lambda x: x.T, (np.ones((2, 3), np.float32),)),
        ("mean", lambda x: jnp.mean(x), (f32,)),
        ("log2", log2, (3.0,)),
        ("identity_int", lambda x: x, (np.arange(3, dtype=np.int32),)),
        ("grad_log1pexp", jax.grad(log1pexp), (100.0,)),
        ("grad_sin_squared", jax.grad(lambda y: jnp.sin(y) ** 2), (1.0,)),
        ("grad_sigmoid", jax.grad(sigmoid), (0.5,)),
        ("broadcast_rank", lambda x, y: x * y, (matrix[:2], f32)),
        ("scalar_argument", lambda x, y: jnp.sin(x) * y, (f32, np.float32(2.0))),
        ("zeros_like", lambda x: jnp.zeros_like(x) + x, (f32,)),
        ("where", lambda x: jnp.where(x > 0, x, 0.0), (f32,)),
        ("jit_inside", lambda x: jax.jit(jnp.cos)(x) + 1.0, (1.0,)),
        ("two_outputs", lambda x, y: (x + y, x * y), (f32, f32)),
        ("compare_int", lambda x: x < 3, (np.arange(3, dtype=np.int32),)),
        ("neg_exp", lambda x: -jnp.exp(x), (f32,)),
        ("sub_div", lambda x, y: (x - y) / y, (1.0, 2.0)),
        ("sqrt_tanh", lambda x: jnp.sqrt(jnp.tanh(x)), (f32,)),
        ("int_literal", lambda x: x + 1, (np.arange(3, dtype=np.int32),)),
        ("float_literal", lambda x: x * 0.1, (1.0,)),
        ("bfloat16_literal", lambda x: x.astype(jnp.bfloat16) * 2, (f32,)),
        ("complex_literals", lambda x: x * 1j + 1, (np.ones(2, np.complex64),)),
        ("bool_literal", lambda x: (x > 1) & True, (np.ones(2, np.int8),)),
        ("no_arguments", lambda: 1.0, ()),
        ("concatenate", lambda x: jnp.concatenate([x, x]), (f32,)),
        ("cond", lambda x: lax.cond(x > 0, jnp.sin, jnp.cos, x), (1.0,)),
        ("fori_loop", lambda x: lax.fori_loop(0, 3, lambda i, c: c * 2.0, x), (1.0,)),
        ("while_loop", lambda x: lax.while_loop(lambda c: c < 10.0, lambda c: c * 2.0, x), (1.0,)),
        # weak-typed values made strong: a convert_element_type to their own dtype
        ("array_of_weak_ints", lambda x: jnp.sum(jnp.array(x)), ([0, 1, 2],)),
        ("array_mixed", lambda a: jnp.array([a, 2.0]), (1.0,)),
        ("array_nested", lambda a: jnp.array([[a, 1], [2, a]]), (1,)),
        ("asarray_dtype", lambda a: jnp.asarray(a, dtype=jnp.float32), (1.0,)),
        ("astype_weak", lambda a: a.astype(jnp.float32), (1.0,)),
        ("convert_weak", lambda a: lax.convert_element_type(a, jnp.float32), (1.0,)),
    ]
