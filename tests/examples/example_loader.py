"""Import examples/train_transformer.py as a module (it is a script, not a package) and the tiny
configuration the tests train; used by the tests and by data/make_jax_losses.py (run with JAX)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "train_transformer.py"
# vocab 96 > 2 x the 32 tokens a 'data' row holds, so the vocab-parallel lookup sends less than
# gathering the table would (see the textbook plan in test_train_transformer.py)
TINY = {"vocab": 96, "d_model": 32, "heads": 4, "layers": 2, "half": 4, "batch": 8}


def load_example():
    spec = importlib.util.spec_from_file_location("train_transformer", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def tiny_flags() -> list[str]:
    """TINY as the script's command-line options."""
    return [f"--{name.replace('_', '-')}={value}" for name, value in TINY.items()]
