"""The compiler's rules, one module per op family (the same families as ``meshjit.ir.ops``).
Each family module registers, for its ops: the sharding rule (a factor mapping), the kernel
rule, the JVP and transpose rules, and a partition rule where the generic factor partitioner
(the named default) is not the best plan. ``registries`` holds the tables; importing this package
fills them.
"""

from ..tables import jvp_rules as jvp_rules
from ..tables import transpose_rules as transpose_rules

# NOTE: importing the families fills the tables above.
# NOTE: the regions family spans files: manual_computation in ``regions``, control flow in
# ``regions_control_flow`` (sharding rules, data flow), ``regions_partition`` and
# ``regions_autodiff`` (JVP) and ``regions_transpose`` (partial evaluation, transposition).
from . import (  # noqa: E402, F401, I001  # noqa: E402, F401, I001
    barriers,
    callbacks,
    collectives,
    elementwise_complex,
    creation,
    debug,
    dot,
    elementwise,
    elementwise_autodiff,
    elementwise_kernels,
    fft,
    indexing,
    indexing_autodiff,
    layout,
    layout_autodiff,
    layout_kernels,
    linalg,
    linalg_autodiff,
    linalg_eig_autodiff,
    random,
    reductions,
    regions,
    regions_autodiff,
    regions_control_flow,
    regions_partition,
    regions_transpose,
    windows,
)
from ..tables import PER_DEVICE_OPS as PER_DEVICE_OPS
from ..tables import batching_rules as batching_rules
from ..tables import kernel_rules as kernel_rules
from ..tables import local_attr_rules as local_attr_rules
from ..tables import partial_result_rules as partial_result_rules
from ..tables import partition_rules as partition_rules
from ..tables import sharding_rules as sharding_rules
from ..tables import sharding_type_rules as sharding_type_rules
