"""jax.nn cases; their values from JAX 0.10.2 are written once to data/jax_nn_values.npz, and test_jax_nn.py computes the same
cases with meshjit and compares.

Run with JAX installed: python tests/api/nn_cases.py (writes data/jax_nn_values.npz).
"""

from pathlib import Path

import numpy as np


def compute(jax, jnp) -> dict:
    """Every case's values under ``jax`` (JAX or meshjit) and its numpy module ``jnp``."""
    x = jnp.linspace(-4, 4, 17, dtype=jnp.float32)
    out = {}
    for name in [
        "celu",
        "elu",
        "hard_sigmoid",
        "hard_silu",
        "hard_swish",
        "hard_tanh",
        "identity",
        "mish",
        "selu",
        "soft_sign",
        "sparse_plus",
        "sparse_sigmoid",
        "squareplus",
        "tanh",
    ]:
        out[name] = np.asarray(getattr(jax.nn, name)(x))
    out["log1mexp"] = np.asarray(jax.nn.log1mexp(jnp.abs(x) + 0.1))
    m = jnp.reshape(x[:16], (4, 4))
    out["glu"] = np.asarray(jax.nn.glu(m))
    out["glu0"] = np.asarray(jax.nn.glu(m, axis=0))
    out["standardize"] = np.asarray(jax.nn.standardize(m))
    out["standardize_stable"] = np.asarray(jax.nn.standardize(m, axis=0, algorithm="stable"))
    out["standardize_where"] = np.asarray(jax.nn.standardize(m, where=m > -2))
    out["logmeanexp"] = np.asarray(jax.nn.logmeanexp(m, axis=1))
    out["logmeanexp_where"] = np.asarray(jax.nn.logmeanexp(m, axis=1, where=m > 0))
    out["softmax_where"] = np.asarray(jax.nn.softmax(m, where=m > -2))
    out["log_softmax_where"] = np.asarray(jax.nn.log_softmax(m, axis=0, where=m < 2))
    out["logsumexp_where_sign"] = np.asarray(jax.nn.logsumexp(m, axis=1, where=m > -1, return_sign=True))
    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, 5, 4, 8)).astype(np.float32)
    k = rng.standard_normal((2, 6, 2, 8)).astype(np.float32)
    v = rng.standard_normal((2, 6, 2, 8)).astype(np.float32)
    bias = rng.standard_normal((2, 1, 5, 6)).astype(np.float32)
    mask = rng.random((2, 4, 5, 6)) > 0.3
    out["attn"] = np.asarray(jax.nn.dot_product_attention(q, k, v))
    out["attn_bias_mask"] = np.asarray(jax.nn.dot_product_attention(q, k, v, bias, mask, scale=0.3))
    out["attn_causal_window"] = np.asarray(
        jax.nn.dot_product_attention(q, k, v, is_causal=True, local_window_size=(2, 1))
    )
    o, r = jax.nn.dot_product_attention(
        q,
        k,
        v,
        query_seq_lengths=jnp.array([3, 5], dtype=jnp.int32),
        key_value_seq_lengths=jnp.array([6, 2], dtype=jnp.int32),
        return_residual=True,
    )
    out["attn_lengths"] = np.asarray(o)
    out["attn_residual"] = np.asarray(r)
    out["attn_3d"] = np.asarray(jax.nn.dot_product_attention(q[0], k[0], v[0]))
    key = jax.random.key(42)
    inits = jax.nn.initializers
    for name, init in [
        ("zeros", inits.zeros),
        ("ones", inits.ones),
        ("constant", inits.constant(0.5)),
        ("normal", inits.normal(0.1)),
        ("uniform", inits.uniform(2.0)),
        ("truncated_normal", inits.truncated_normal(0.3)),
        ("glorot_uniform", inits.glorot_uniform()),
        ("glorot_normal", inits.glorot_normal()),
        ("lecun_uniform", inits.lecun_uniform()),
        ("lecun_normal", inits.lecun_normal()),
        ("he_uniform", inits.he_uniform()),
        ("he_normal", inits.he_normal()),
        ("vs_geo", inits.variance_scaling(0.7, "fan_geo_avg", "normal")),
        ("vs_out", inits.variance_scaling(1.3, "fan_out", "uniform", in_axis=(0, 1), out_axis=-1)),
    ]:
        out["init_" + name] = np.asarray(init(key, (3, 4, 5)))
    out["init_conv"] = np.asarray(inits.he_normal(in_axis=-2, out_axis=-1)(key, (3, 3, 4, 8)))
    # QR-based: LAPACK's last bits differ between builds, so these compare within tolerance
    out["orth_wide"] = np.asarray(inits.orthogonal()(key, (4, 6)))
    out["orth_tall_scaled"] = np.asarray(inits.orthogonal(scale=2.0)(key, (6, 4)))
    out["orth_column_axis"] = np.asarray(inits.orthogonal(column_axis=0)(key, (5, 2, 3)))
    out["orth_delta"] = np.asarray(inits.delta_orthogonal()(key, (3, 3, 4)))
    return out


if __name__ == "__main__":
    import jax
    import jax.numpy as jax_numpy

    np.savez(Path(__file__).parent / "data" / "jax_nn_values.npz", **compute(jax, jax_numpy))
