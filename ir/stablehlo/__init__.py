"""Reading StableHLO (what JAX prints for ``jax.jit(f).lower(*args).as_text()``) into meshjit IR."""

from .importer import parse_stablehlo as parse_stablehlo
from .ops_table import known_ops as known_ops
