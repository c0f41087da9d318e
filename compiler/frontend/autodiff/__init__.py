"""Automatic differentiation as transformations of traced IR blocks.

A function is traced into a block; forward mode re-emits it through the JVP rules, reverse mode
traces that JVP, splits it into a forward part and a linear part, and walks the linear part
backwards through the transpose rules. Everything is emitted with ``bind`` into the current
trace, so results can be jitted, differentiated again and partitioned like any program.
"""

from . import checkpoint as _checkpoint  # noqa: F401
from . import markers as _markers  # noqa: F401
from .checkpoint import checkpoint_call as checkpoint_call
from .markers import CustomJVPRule as CustomJVPRule
from .markers import CustomVJPRule as CustomVJPRule
from .markers import call_with_custom_rule as call_with_custom_rule
from .markers import stop_gradient as stop_gradient
from ...tables import jvp_rules as jvp_rules
from ...tables import transpose_rules as transpose_rules
from .tracing import differentiating as differentiating
from .transforms import Linearized as Linearized
from .transforms import apply_linear as apply_linear
from .transforms import jvp as jvp
from .transforms import linearize as linearize
from .transforms import transpose_linear as transpose_linear
