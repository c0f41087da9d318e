"""Regenerate ``data/jax_promotion.json`` from JAX 0.10: run with a Python that has JAX, from
this folder: ``python generate_jax_promotion.py``. It records ``jnp.promote_types`` of every
dtype pair and ``jnp.result_type`` of every dtype with a weak Python scalar, x64 off and on."""

import json
import pathlib

import jax
import jax.numpy as jnp

# JAX's full dtype list (meshjit's tests use the pairs of the dtypes it has)
DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "bfloat16",
          "float32", "float64", "complex64", "complex128")
SCALARS = {"int": 1, "float": 1.0, "bool": True, "complex": 1j}


def table() -> dict:
    return {
        "promote_types": {f"{a},{b}": str(jnp.promote_types(a, b)) for a in DTYPES for b in DTYPES},
        "result_type_with_scalar": {f"{a},{name}": str(jnp.result_type(jnp.zeros((), a), value))
                                    for a in DTYPES for name, value in SCALARS.items()},
        "result_type_of_scalars": {f"{a},{b}": str(jnp.result_type(SCALARS[a], SCALARS[b]))
                                   for a in SCALARS for b in SCALARS},
    }


tables = {}
for x64 in (False, True):
    jax.config.update("jax_enable_x64", x64)
    tables["x64" if x64 else "x32"] = table()
path = pathlib.Path(__file__).with_name("data") / "jax_promotion.json"
path.write_text(json.dumps(tables, indent=1, sort_keys=True) + "\n")
print(f"wrote {path}")
