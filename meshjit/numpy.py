"""meshjit.numpy: the jax.numpy subset real numeric code uses (``import meshjit.numpy as jnp``).

Elementwise math with numpy broadcasting and JAX dtype promotion (weakly typed Python scalars),
reductions, shape functions, products, creation and indexing; every function runs eagerly on
concrete arrays and traces under ``meshjit.jit``.
"""

import numpy as _numpy

from meshjit.compiler.frontend.numpy_api.arguments import *  # noqa: F403
from meshjit.compiler.frontend.numpy_api.array_api_dtypes import *  # noqa: F403
from meshjit.compiler.frontend.numpy_api.array_api_functions import *  # noqa: F403
from meshjit.compiler.frontend.numpy_api.array_api_math import *  # noqa: F403
from meshjit.compiler.frontend.numpy_api.complex_functions import *  # noqa: F403
from meshjit.compiler.frontend.numpy_api.creation import *  # noqa: F403
from meshjit.compiler.frontend.numpy_api.data_dependent import *  # noqa: F403
from meshjit.compiler.frontend.numpy_api.einsum import *  # noqa: F403
from meshjit.compiler.frontend.numpy_api.elementwise import *  # noqa: F403
from meshjit.compiler.frontend.numpy_api.elementwise_math import *  # noqa: F403
from meshjit.compiler.frontend.numpy_api.indexing import (
    NonConcreteBooleanIndexError as NonConcreteBooleanIndexError,
)
from meshjit.compiler.frontend.numpy_api.linalg import *  # noqa: F403
from meshjit.compiler.frontend.numpy_api.reductions import *  # noqa: F403
from meshjit.compiler.frontend.numpy_api.scalar_types import *  # noqa: F403
from meshjit.compiler.frontend.numpy_api.shape_ops import *  # noqa: F403
from meshjit.compiler.frontend.numpy_api.take import *  # noqa: F403
from meshjit.compiler.frontend.numpy_api.convolution import *  # noqa: F403
from meshjit.compiler.frontend.numpy_api.indexing import *  # noqa: F403
from meshjit.compiler.frontend.numpy_api.search import *  # noqa: F403
from meshjit.compiler.frontend.numpy_api.shifts import *  # noqa: F403
from meshjit.compiler.frontend.numpy_api.stacking import *  # noqa: F403
from meshjit.runtime.dlpack import from_dlpack as from_dlpack
from meshjit._array_api import __array_api_version__ as __array_api_version__
from meshjit._array_api import __array_namespace_info__ as __array_namespace_info__
from meshjit.runtime.array import Array as ndarray  # noqa: F401 - jnp.ndarray is meshjit.Array

dtype = _numpy.dtype
from meshjit.dtypes import issubdtype as issubdtype  # noqa: E402
pi = _numpy.pi
e = _numpy.e
inf = _numpy.inf
nan = _numpy.nan
newaxis = None
# NOTE: numpy's abstract scalar types, as JAX re-exports them (for ``jnp.issubdtype(t, jnp.integer)``)
from numpy import character, complexfloating, flexible, floating, generic, inexact, integer, number  # noqa: E402, F401
from numpy import signedinteger, unsignedinteger  # noqa: E402, F401
from meshjit import numpy_linalg as linalg  # noqa: E402, F401 - jnp.linalg
from meshjit.compiler.frontend.numpy_api.float_math import *  # noqa: F403, E402
from meshjit.compiler.frontend.numpy_api.diagonals import *  # noqa: F403, E402
from meshjit.compiler.frontend.numpy_api.rearranging import *  # noqa: F403, E402
from meshjit.compiler.frontend.numpy_api.quantiles import *  # noqa: F403, E402
from meshjit.compiler.frontend.numpy_api.statistics import *  # noqa: F403, E402
from meshjit.compiler.frontend.numpy_api.numerical import *  # noqa: F403, E402
from meshjit.compiler.frontend.numpy_api.set_ops import *  # noqa: F403, E402
from meshjit.compiler.frontend.numpy_api.index_tricks import *  # noqa: F403, E402
from meshjit.compiler.frontend.numpy_api.bit_packing import *  # noqa: F403, E402
from meshjit.compiler.frontend.numpy_api.polynomials import *  # noqa: F403, E402
from meshjit.compiler.frontend.numpy_api.polynomial_fits import *  # noqa: F403, E402
from meshjit.compiler.frontend.numpy_api.windows import *  # noqa: F403, E402
from meshjit.compiler.frontend.numpy_api.creation_extras import *  # noqa: F403, E402
from meshjit.numpy_vectorize import apply_along_axis, apply_over_axes, vectorize  # noqa: E402, F401
from meshjit import numpy_fft as fft  # noqa: E402, F401 - jnp.fft
from meshjit.compiler.frontend.numpy_api.polynomial_roots import *  # noqa: F403, E402
from meshjit.compiler.frontend.numpy_api.vector_products import *  # noqa: F403, E402
from meshjit._sinc import sinc as sinc  # noqa: E402 - JAX's derivatives at 0
