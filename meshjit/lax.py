"""meshjit.lax: the primitives by their jax.lax names, with lax's strict typing (no implicit
broadcasting or promotion; Python scalars take the other operand's dtype), and the collectives
a shard_map body calls by mesh axis name (psum, all_gather, ppermute, ...), and the control
flow (scan, fori_loop, while_loop, cond, switch, map)."""

from meshjit.compiler.frontend.lax_branches import *  # noqa: F403

from meshjit.compiler.frontend.lax_collectives import *  # noqa: F403
from meshjit.compiler.frontend.lax_extras import *  # noqa: F403
from meshjit.compiler.frontend.lax_loops import *  # noqa: F403
from meshjit.compiler.frontend.lax_ops import *  # noqa: F403
from meshjit.compiler.frontend.lax_complex import *  # noqa: F403
from meshjit.compiler.frontend.lax_slicing import *  # noqa: F403
from meshjit.compiler.frontend.lax_windows import *  # noqa: F403
from meshjit.constraint_api import with_sharding_constraint as with_sharding_constraint
from meshjit.ad_api import stop_gradient as stop_gradient
from meshjit.compiler.frontend import lax_linalg as linalg  # noqa: E402, F401  # jax.lax.linalg
from meshjit.compiler.frontend.lax_shape_helpers import *  # noqa: F403, E402
from meshjit.compiler.frontend.lax_cpu_forms import *  # noqa: F403, E402
