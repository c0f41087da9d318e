"""Write ``expected_shard_map.json``: JAX's ``make_jaxpr`` text for each of shard_map_cases.py's
programs. Run once under JAX 0.10.2 (``/work/jaxenv/bin/python generate_shard_map.py``)."""

import json
import os
import pathlib
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"

import jax  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from shard_map_cases import cases  # noqa: E402


def main() -> None:
    texts = {}
    for name, shape, axes, function, arguments in cases(jax):
        with jax.set_mesh(jax.make_mesh(shape, axes)):
            texts[name] = str(jax.make_jaxpr(function)(*arguments()))
    path = pathlib.Path(__file__).parent / "expected_shard_map.json"
    path.write_text(json.dumps({"jax_version": jax.__version__, "texts": texts}, indent=1) + "\n")


if __name__ == "__main__":
    main()
