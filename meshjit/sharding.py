"""meshjit.sharding: meshes, partition specs and the Sharding classes (as jax.sharding)."""

from meshjit.compiler.sharding.sharding_types import ShardingTypeError as ShardingTypeError
from meshjit.ir.abstract_mesh import AbstractMesh as AbstractMesh
from meshjit.runtime.errors import DuplicateSpecError as DuplicateSpecError
from meshjit.runtime.errors import IndivisibleError as IndivisibleError
from meshjit.runtime.legacy_shardings import Chunked as Chunked
from meshjit.runtime.legacy_shardings import GSPMDSharding as GSPMDSharding
from meshjit.runtime.legacy_shardings import NoSharding as NoSharding
from meshjit.runtime.legacy_shardings import PmapSharding as PmapSharding
from meshjit.runtime.legacy_shardings import PositionalSharding as PositionalSharding
from meshjit.runtime.legacy_shardings import Replicated as Replicated
from meshjit.runtime.legacy_shardings import ShardedAxis as ShardedAxis
from meshjit.runtime.legacy_shardings import ShardingSpec as ShardingSpec
from meshjit.runtime.legacy_shardings import Unstacked as Unstacked
from meshjit.runtime.mesh import AxisType as AxisType
from meshjit.runtime.mesh import Mesh as Mesh
from meshjit.runtime.mesh import get_mesh as get_mesh
from meshjit.runtime.mesh import set_mesh as set_mesh
from meshjit.runtime.partition_spec import PartitionSpec as PartitionSpec
from meshjit.runtime.sharding import AUTO as AUTO
from meshjit.runtime.sharding import NamedSharding as NamedSharding
from meshjit.runtime.sharding import Sharding as Sharding
from meshjit.runtime.sharding import SingleDeviceSharding as SingleDeviceSharding
from meshjit.runtime.tile_assignment import TileAssignment as TileAssignment

P = PartitionSpec

from ._explicit_api import reshard as reshard  # noqa: E402
from ._explicit_api import use_abstract_mesh as use_abstract_mesh  # noqa: E402
from ._types import get_abstract_mesh as get_abstract_mesh  # noqa: E402
from ._explicit_api import auto_axes as auto_axes  # noqa: E402
from ._explicit_api import explicit_axes as explicit_axes  # noqa: E402
