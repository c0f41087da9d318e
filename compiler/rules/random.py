"""The compiler's rules for the random family: threefry2x32 is elementwise (its four words share
the result's factors, so a sharded random array is hashed block by block with no communication),
runs as one Numba loop over the words, has no tangent, and batches as an elementwise op.
"""

from __future__ import annotations

import numpy as np
from meshjit.ir import Op

from ..sharding.factor_rules import FactorRule, joined, letters
from ..frontend.autodiff.jvp import no_tangent
from ..tables import jvp_rules
from ..frontend.vmap.batching import batch_elementwise
from ..tables import batching_rules, factor_rule, kernel_rules, sharding_rules

# --- sharding ------------------------------------------------------------------------------------


@sharding_rules.register("threefry2x32")
def _threefry2x32(op: Op) -> FactorRule:
    dims = joined(letters(op.results[0].type.rank))
    return factor_rule(op, f"{dims}, {dims}, {dims}, {dims} -> {dims}, {dims}")


# --- kernels -------------------------------------------------------------------------------------

@kernel_rules.register("threefry2x32")
def _threefry2x32_kernel(op: Op, lead: int):
    # NOTE: plan buffers of replicated words (the key) have size-1 leading dims; they are
    # broadcast against the counters' before the loop. The Numba loop is imported here, when a
    # program uses it, so that importing meshjit does not start Numba.
    from ..lowering.threefry_kernel import hash_words

    def run(*words):
        shape = np.broadcast_shapes(*(word.shape for word in words))
        flat = [np.ascontiguousarray(np.broadcast_to(word, shape)).ravel() for word in words]
        out0, out1 = np.empty(flat[0].size, np.uint32), np.empty(flat[0].size, np.uint32)
        hash_words(*flat, out0, out1)
        return out0.reshape(shape), out1.reshape(shape)

    return run


# --- autodiff and vmap ---------------------------------------------------------------------------

jvp_rules.register("threefry2x32")(no_tangent)
batching_rules.register("threefry2x32")(batch_elementwise)
