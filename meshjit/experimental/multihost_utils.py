"""meshjit.experimental.multihost_utils: exchanges between the processes of a job (as JAX's)."""

from meshjit.runtime.multihost import assert_equal as assert_equal
from meshjit.runtime.multihost import broadcast_one_to_all as broadcast_one_to_all
from meshjit.runtime.multihost import process_allgather as process_allgather
from meshjit.runtime.multihost import sync_global_devices as sync_global_devices
