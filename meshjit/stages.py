"""meshjit.stages: the objects of ``jit(f).lower(*args).compile()``, as jax.stages."""

from .jit_api import Compiled as Compiled
from .jit_api import Jitted as Jitted

Wrapped = Jitted
from .jit_api import Lowered as Lowered
