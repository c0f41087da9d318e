"""meshjit.stages: the objects of ``jit(f).lower(*args).compile()``, as jax.stages."""

from ._stages import Compiled as Compiled
from ._stages import Lowered as Lowered
from ._stages import Traced as Traced
from .jit_api import Jitted as Jitted

Wrapped = Jitted
