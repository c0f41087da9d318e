"""Integer division edge cases from JAX 0.10.2, written once to jax_integer_division.json.

Run with JAX installed: python make_integer_division.py > jax_integer_division.json
"""
import json
import jax.numpy as jnp
import numpy as np
vals = {"int8": [-128, -7, -1, 0, 1, 7, 127], "int32": [-2**31, -7, -3, -1, 0, 1, 3, 7, 2**31-1],
        "uint8": [0, 1, 7, 255], "uint32": [0, 1, 7, 2**32-1]}
out = {}
for dt, v in vals.items():
    a = np.array(v, dtype=dt)
    x, y = np.meshgrid(a, a, indexing="ij")
    x, y = x.ravel(), y.ravel()
    rec = {"x": x.tolist(), "y": y.tolist()}
    for name in ["remainder", "floor_divide", "fmod"]:
        rec[name] = np.asarray(getattr(jnp, name)(x, y)).tolist()
    q, r = jnp.divmod(x, y)
    rec["divmod"] = [np.asarray(q).tolist(), np.asarray(r).tolist()]
    out[dt] = rec
print(json.dumps(out))
