"""Automatic differentiation as transformations of traced IR blocks.

A function is traced into a block; forward mode re-emits it through the JVP rules, reverse mode
traces that JVP, splits it into a forward part and a linear part, and walks the linear part
backwards through the transpose rules. Everything is emitted with ``bind`` into the current
trace, so results can be jitted, differentiated again and partitioned like any program.
"""

# NOTE: importing the rule modules fills the registries.
from . import contraction_rules as _contraction_rules  # noqa: F401
from . import elementwise_rules as _elementwise_rules  # noqa: F401
from . import manual_rules as _manual_rules  # noqa: F401
from . import markers as _markers  # noqa: F401
from . import reduction_rules as _reduction_rules  # noqa: F401
from . import structural_rules as _structural_rules  # noqa: F401
from .markers import CustomJVPRule as CustomJVPRule
from .markers import CustomVJPRule as CustomVJPRule
from .markers import call_with_custom_rule as call_with_custom_rule
from .markers import stop_gradient as stop_gradient
from .registries import jvp_rules as jvp_rules
from .registries import transpose_rules as transpose_rules
from .tracing import differentiating as differentiating
from .transforms import Linearized as Linearized
from .transforms import apply_linear as apply_linear
from .transforms import jvp as jvp
from .transforms import linearize as linearize
from .transforms import transpose_linear as transpose_linear
