"""meshjit.experimental: the pre-Array JAX APIs kept for ported code (GDA, pjit, maps.mesh), and
multihost_utils."""

from meshjit._callbacks import io_callback as io_callback
from meshjit.runtime.partition_spec import PartitionSpec as PartitionSpec

from . import global_device_array as global_device_array
from . import maps as maps
from . import mesh_utils as mesh_utils
from . import multihost_utils as multihost_utils
from . import pjit as pjit
