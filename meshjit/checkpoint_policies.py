"""``jax.checkpoint_policies``: which values a checkpointed function may save for the backward
pass. A policy is called as ``policy(op_name, *operand_types, **attrs)`` per op and returns
whether its result may be saved; everything else is recomputed."""

from meshjit.compiler.frontend.autodiff.checkpoint import checkpoint_dots as checkpoint_dots
from meshjit.compiler.frontend.autodiff.checkpoint import (
    checkpoint_dots_with_no_batch_dims as checkpoint_dots_with_no_batch_dims,
)
from meshjit.compiler.frontend.autodiff.checkpoint import dots_saveable as dots_saveable
from meshjit.compiler.frontend.autodiff.checkpoint import (
    dots_with_no_batch_dims_saveable as dots_with_no_batch_dims_saveable,
)
from meshjit.compiler.frontend.autodiff.checkpoint import everything_saveable as everything_saveable
from meshjit.compiler.frontend.autodiff.checkpoint import nothing_saveable as nothing_saveable
