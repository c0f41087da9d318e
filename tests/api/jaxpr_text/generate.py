"""Write ``expected.json``: JAX's ``make_jaxpr`` text for each of jaxpr_cases.py's functions. Run once
under JAX 0.10.2 (``/work/jaxenv/bin/python generate.py``); the file is committed test data."""

import json
import pathlib
import sys

import jax

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from jaxpr_cases import cases  # noqa: E402


def main() -> None:
    texts = {name: str(jax.make_jaxpr(function)(*arguments)) for name, function, arguments in cases(jax)}
    path = pathlib.Path(__file__).parent / "expected.json"
    path.write_text(json.dumps({"jax_version": jax.__version__, "texts": texts}, indent=1) + "\n")


if __name__ == "__main__":
    main()
