"""meshjit.numpy's implementation: the jax.numpy subset, built on ``compiler.lax_ops``.

Importing this package installs numpy's operators and methods on ``Tracer``.
"""

from ..trace import Tracer as _Tracer
from .arguments import *  # noqa: F403
from .array_api_dtypes import *  # noqa: F403
from .array_api_functions import *  # noqa: F403
from .array_api_math import *  # noqa: F403
from .complex_functions import *  # noqa: F403
from .convolution import *  # noqa: F403
from .creation import *  # noqa: F403
from .data_dependent import *  # noqa: F403
from .einsum import *  # noqa: F403
from .elementwise import *  # noqa: F403
from .elementwise_math import *  # noqa: F403
from .indexing import *  # noqa: F403
from .linalg import *  # noqa: F403
from .operators import install_array_methods as install_array_methods
from .reductions import *  # noqa: F403
from .scalar_types import *  # noqa: F403
from .search import *  # noqa: F403
from .shape_ops import *  # noqa: F403
from .shifts import *  # noqa: F403
from .take import *  # noqa: F403

install_array_methods(_Tracer)
