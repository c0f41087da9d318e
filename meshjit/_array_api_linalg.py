"""``meshjit.numpy.linalg``: the Array API standard's linalg extension names meshjit has so far
(the products; the decompositions and solvers arrive with jnp.linalg's own functions)."""

from meshjit.compiler.frontend.numpy_api.array_api_functions import vecdot as vecdot
from meshjit.compiler.frontend.numpy_api.linalg import matmul as matmul
from meshjit.compiler.frontend.numpy_api.linalg import outer as outer
from meshjit.compiler.frontend.numpy_api.linalg import tensordot as tensordot
from meshjit.compiler.frontend.numpy_api.shape_ops import matrix_transpose as matrix_transpose
