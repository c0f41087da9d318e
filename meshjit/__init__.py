"""meshjit: JAX's sharding API over simulated devices, with a GSPMD/Shardy-style partitioner.

Write ``import meshjit as jax`` and use ``jax.sharding``, ``jax.device_put``, ``jax.jit``,
``jax.shard_map``, ``jax.grad``, ``jax.numpy`` and friends as in JAX; ``jit(f).lower(...).compile()``
shows the per-device program, its collectives and why each sharding was chosen.
"""

from meshjit.runtime.array import Array as Array
from meshjit.runtime.array import Shard as Shard
from meshjit.ir.config import config as config
from meshjit.runtime.devices import device_count as device_count
from meshjit.runtime.devices import devices as devices
from meshjit.runtime.devices import local_device_count as local_device_count
from meshjit.runtime.devices import local_devices as local_devices
from meshjit.runtime.devices import process_count as process_count
from meshjit.runtime.devices import process_index as process_index
from meshjit.runtime.mesh import make_mesh as make_mesh
from meshjit.runtime.mesh import set_mesh as set_mesh
from meshjit.runtime.transfer import block_until_ready as block_until_ready
from meshjit.runtime.transfer import device_get as device_get
from meshjit.runtime.transfer import device_put as device_put
from meshjit.runtime.transfer import make_array_from_callback as make_array_from_callback
from meshjit.runtime.transfer import make_array_from_process_local_data as make_array_from_process_local_data
from meshjit.runtime.transfer import make_array_from_single_device_arrays as make_array_from_single_device_arrays

from . import debug as debug
from ._callbacks import pure_callback as pure_callback
from ._custom_gradient import closure_convert as closure_convert
from ._custom_gradient import custom_gradient as custom_gradient
from ._live_arrays import live_arrays as live_arrays
from ._name_scopes import named_call as named_call
from ._name_scopes import named_scope as named_scope
from . import distributed as distributed
from . import dtypes as dtypes
from . import errors as errors
from . import lax as lax
from . import nn as nn
from . import ops as ops
from . import numpy as numpy
from . import random as random
from . import ref as ref
from .ref import Ref as Ref
from .ref import freeze as freeze
from .ref import new_ref as new_ref
from . import sharding as sharding
from .sharding import NamedSharding as NamedSharding
from .sharding import P as P
from . import stages as stages
from . import testing as testing
from . import test_util as test_util
from . import tree as tree
from . import tree_util as tree_util
from . import typing as typing
from . import scipy as scipy
from .ad_api import custom_jvp as custom_jvp
from .ad_api import custom_vjp as custom_vjp
from .ad_api import grad as grad
from .ad_api import jvp as jvp
from .ad_api import linearize as linearize
from .ad_api import value_and_grad as value_and_grad
from .ad_api import vjp as vjp
from ._fwd_and_bwd import fwd_and_bwd as fwd_and_bwd
from .jacobian_api import hessian as hessian
from .jacobian_api import jacfwd as jacfwd
from .jacobian_api import jacrev as jacrev
from .jacobian_api import jacobian as jacobian
from .checkpoint_api import checkpoint as checkpoint
from .checkpoint_api import remat as remat
from . import checkpoint_policies as checkpoint_policies
from .jit_api import jit as jit
from .pmap_api import pmap as pmap
from .vmap_api import vmap as vmap
from .make_jaxpr_api import make_jaxpr as make_jaxpr
from .jit_api import eval_shape as eval_shape
from ._config_api import clear_caches as clear_caches
from ._config_api import default_backend as default_backend
from ._config_api import disable_jit as disable_jit
from ._config_api import enable_x64 as enable_x64
from meshjit.compiler.frontend.trace import ensure_compile_time_eval as ensure_compile_time_eval
from ._config_api import linear_transpose as linear_transpose
from .dtypes import float0 as float0
from meshjit.runtime.devices import CpuDevice as Device  # noqa: F401 - jax.Device
from ._arguments import ShapeDtypeStruct as ShapeDtypeStruct
from ._explicit_api import reshard as reshard
from ._types import typeof as typeof
from .shard_map_api import shard_map as shard_map
from . import experimental as experimental

# NOTE: Array's operators and methods (and jnp functions on concrete values) run as cached
# jitted programs; this registers the dispatcher with the runtime and the compiler (_dispatch.py).
from . import _dispatch as _dispatch

_dispatch.install()
from . import _array_api as _array_api  # noqa: E402

_array_api.install()

__version__ = "0.1.0"
