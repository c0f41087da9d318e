"""meshjit.experimental.global_device_array: GlobalDeviceArray and Shard (as JAX ≤ 0.3.x)."""

from meshjit.runtime.array import Shard as Shard
from meshjit.runtime.global_device_array import GlobalDeviceArray as GlobalDeviceArray
from meshjit.runtime.global_device_array import get_shard_indices as get_shard_indices
from meshjit.runtime.partition_spec import PartitionSpec as PartitionSpec
