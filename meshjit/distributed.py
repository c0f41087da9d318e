"""meshjit.distributed: join a multi-process job started by mpiexec (as jax.distributed), and the
errors a cross-process collective raises instead of hanging."""

from meshjit.runtime.mpi_backend import initialize as initialize
from meshjit.runtime.mpi_backend import is_initialized as is_initialized
from meshjit.runtime.mpi_deadline import CollectiveMismatchError as CollectiveMismatchError
from meshjit.runtime.mpi_deadline import CollectiveTimeoutError as CollectiveTimeoutError
