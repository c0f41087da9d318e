"""meshjit.numpy.linalg: jnp.linalg's functions (compiler/frontend/scipy/numpy_linalg.py)."""

from meshjit.compiler.frontend.scipy.numpy_linalg import *  # noqa: F403
# The Array API standard's linalg products, the same functions as jnp's.
from meshjit.compiler.frontend.numpy_api.array_api_functions import vecdot as vecdot  # noqa: E402
from meshjit.compiler.frontend.numpy_api.linalg import matmul as matmul  # noqa: E402
from meshjit.compiler.frontend.numpy_api.linalg import outer as outer  # noqa: E402
from meshjit.compiler.frontend.numpy_api.linalg import tensordot as tensordot  # noqa: E402
from meshjit.compiler.frontend.numpy_api.shape_ops import matrix_transpose as matrix_transpose  # noqa: E402
