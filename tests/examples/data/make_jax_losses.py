"""Make jax_losses.json: the losses of the first 20 training steps of examples/train_transformer.py
on the tiny configuration of test_train_transformer.py (in float32, and with --dtype bfloat16), run by JAX 0.10.2 on 8 CPU devices (jax
is never a meshjit dependency). Run once in a JAX environment, from the repository root:

    XLA_FLAGS=--xla_force_host_platform_device_count=8 TRAIN_TRANSFORMER_BACKEND=jax \
        /work/jaxvenv/bin/python tests/examples/data/make_jax_losses.py
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
os.environ["TRAIN_TRANSFORMER_BACKEND"] = "jax"

import jax  # noqa: E402
from example_loader import TINY, load_example  # noqa: E402

assert jax.__version__ == "0.10.2", jax.__version__
example = load_example()
losses = example.losses(example.Config(**TINY), 20)
bfloat16_losses = example.losses(example.Config(**TINY, dtype="bfloat16"), 20)
(HERE / "jax_losses.json").write_text(json.dumps({"jax": jax.__version__, "config": TINY, "losses": losses,
                                                  "bfloat16_losses": bfloat16_losses}, indent=1) + "\n")
print(losses, bfloat16_losses)
