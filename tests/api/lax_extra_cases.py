"""jax.lax functions built from primitives (associative_scan, cumlogsumexp, select_n, reduce,
the dim helpers): cases whose values JAX 0.10.2 computed are in data/jax_lax_extra_values.npz;
test_lax_extras.py computes them with meshjit.

Run with JAX installed: python tests/api/lax_extra_cases.py (writes the data file).
"""

from pathlib import Path

import numpy as np


def compute(jax, jnp) -> dict:
    """Every case's values under ``jax`` (JAX or meshjit) and its numpy module ``jnp``."""
    lax = jax.lax
    out = {}
    x = np.arange(1.0, 12.0).astype(np.float32)
    out["cumsum_as"] = lax.associative_scan(lax.add, x)
    out["cumsum_rev"] = lax.associative_scan(jnp.add, x, reverse=True)
    m = np.arange(24.0).reshape(4, 6).astype(np.float32)
    out["as_axis1"] = lax.associative_scan(jnp.maximum, np.sin(m).astype(np.float32), axis=1)
    out["as_tree"] = lax.associative_scan(
        lambda a, b: (a[0] * b[0], a[1] * b[0] + b[1]),
        (np.full(7, 0.5, np.float32), np.arange(7.0, dtype=np.float32)),
    )[1]
    out["cls"] = lax.cumlogsumexp(x / 3)
    out["cls_rev"] = lax.cumlogsumexp(m / 7, axis=1, reverse=True)
    out["sel_n"] = lax.select_n(
        np.array([0, 2, 1, 2], np.int32),
        np.zeros(4, np.float32),
        np.ones(4, np.float32),
        np.full(4, 2.0, np.float32),
    )
    out["sel_b"] = lax.select_n(
        np.array([True, False]), np.zeros(2, np.float32), np.ones(2, np.float32)
    )
    out["slice_in_dim"] = lax.slice_in_dim(m, 1, None, 2, axis=1)
    out["index_in_dim"] = lax.index_in_dim(m, -1, axis=0, keepdims=False)
    out["split"] = lax.split(m, (2, 1, 3), axis=1)[2]
    out["collapse"] = lax.collapse(np.zeros((2, 3, 4, 5), np.float32), 1, 3)
    out["bcast_rank"] = lax.broadcast_to_rank(np.ones(3, np.float32), 3)
    out["full_like"] = lax.full_like(m, 3, dtype=jnp.int32)
    out["bmm"] = lax.batch_matmul(
        np.ones((2, 3, 4), np.float32), np.arange(40.0, dtype=np.float32).reshape(2, 4, 5)
    )
    out["reduce_add"] = lax.reduce(m, np.float32(0), lax.add, (0,))
    out["reduce_tree"] = lax.reduce(
        (m, m * 2),
        (np.float32(0), np.float32(-np.inf)),
        lambda a, b: (a[0] + b[0], jnp.maximum(a[1], b[1])),
        (1,),
    )[1]
    out["reduce_custom"] = lax.reduce(m, np.float32(1), lambda a, b: a * b / 2, (0, 1))
    out["recip"] = lax.reciprocal(x)
    out["acos"] = lax.acos(x / 12)
    out["sinh"] = lax.sinh(x / 4)
    return {name: np.asarray(value) for name, value in out.items()}


if __name__ == "__main__":
    import jax
    import jax.numpy as jax_numpy

    np.savez(Path(__file__).parent / "data" / "jax_lax_extra_values.npz", **compute(jax, jax_numpy))
