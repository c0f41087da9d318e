"""Regenerate ``data/jax_promotion_complex.json`` from JAX 0.10: run with a Python that has JAX,
from this folder: ``python generate_jax_promotion_complex.py``. It records ``jnp.promote_types``
of every pair with a complex dtype, and ``jnp.result_type`` of every dtype with a weak Python
scalar including ``1j``, x64 off and on."""

import json
import pathlib

import jax
import jax.numpy as jnp

REAL = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64")
COMPLEX = ("complex64", "complex128")
DTYPES = REAL + COMPLEX
SCALARS = {"int": 1, "float": 1.0, "bool": True, "complex": 1j}


def table() -> dict:
    return {
        "promote_types": {f"{a},{b}": str(jnp.promote_types(a, b)) for a in DTYPES for b in DTYPES
                          if a in COMPLEX or b in COMPLEX},
        "result_type_with_scalar": {f"{a},{name}": str(jnp.result_type(jnp.zeros((), a), value))
                                    for a in DTYPES for name, value in SCALARS.items()
                                    if a in COMPLEX or name == "complex"},
        "result_type_of_scalars": {f"{a},{b}": str(jnp.result_type(SCALARS[a], SCALARS[b]))
                                   for a in SCALARS for b in SCALARS if "complex" in (a, b)},
        "weak_type_with_scalar": {f"{a},{name}": bool((jnp.zeros((), a) * value).weak_type)
                                  for a in DTYPES for name, value in SCALARS.items()
                                  if a in COMPLEX or name == "complex"},
    }


tables = {}
for x64 in (False, True):
    jax.config.update("jax_enable_x64", x64)
    tables["x64" if x64 else "x32"] = table()
path = pathlib.Path(__file__).with_name("data") / "jax_promotion_complex.json"
path.write_text(json.dumps(tables, indent=1, sort_keys=True) + "\n")
print(f"wrote {path}")
