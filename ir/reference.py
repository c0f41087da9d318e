"""The numpy reference: every op's global meaning, in one registry keyed by op name. Each op
family (``ir/ops/<family>.py``) registers its implementations; the per-device ops register
theirs in ``collective_impls`` (``ir/ops/collectives.py``)."""

from __future__ import annotations

from .registry import Registry

# NOTE: an implementation takes ``(attrs, *operands)``, numpy arrays of exactly the IR dtypes, and
# returns a tuple with one array per result of exactly the shape and dtype the shape rule gives,
# letting no numpy warning out.
reference_impls = Registry("reference implementation")

# NOTE: imported last: the families register into ``reference_impls`` above.
from . import ops  # noqa: E402, F401
